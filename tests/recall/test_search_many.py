"""`Memory.search_many`: each query's hits as `search` gives them, for a batch that takes FAISS's
per-query path (under 8 queries) and one that takes the masked matrix product, with `as_of` and link
expansion; bad batches are refused naming the field."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.synthetic import chat, queries
from engine import Config, Memory
from engine.errors import InputError, TooLarge
from engine.model.note import Hit


@pytest.fixture(scope="module")
def mem() -> Iterator[Memory]:
    m = Memory()
    m.add_many(chat(600, seed=7), tenant="t")
    yield m
    m.close()


def same(a: list[Hit], b: list[Hit]) -> None:
    assert [(h.note.id, h.via, h.is_superseded) for h in a] == [
        (h.note.id, h.via, h.is_superseded) for h in b
    ]
    assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-5)


@pytest.mark.parametrize("n", [1, 5, 20])
@pytest.mark.parametrize(
    "options",
    [{}, {"as_of": "2024-03-01T00:00:00Z"}, {"expand_links": True, "k": 5}, {"lexical_weight": 0.0}],
)
def test_batch_gives_each_querys_hits(mem: Memory, n: int, options: dict[str, object]) -> None:
    batch = queries(n, seed=n)
    got = mem.search_many(batch, tenant="t", **options)  # type: ignore[arg-type]
    assert len(got) == n and any(got)
    for query, hits in zip(batch, got, strict=True):
        same(hits, mem.search(query, tenant="t", **options))  # type: ignore[arg-type]


def test_unknown_tenant_gives_empty_lists(mem: Memory) -> None:
    assert mem.search_many(["a", "b"], tenant="nobody") == [[], []]


def test_bad_batches_name_the_field(mem: Memory) -> None:
    with pytest.raises(InputError) as empty:
        mem.search_many([], tenant="t")
    assert empty.value.field == "queries"
    with pytest.raises(InputError) as blank:
        mem.search_many(["fine", "also fine", "  "], tenant="t")
    assert blank.value.field == "queries.2"
    with pytest.raises(InputError) as bad_k:
        mem.search_many(["fine"], tenant="t", k=0)
    assert bad_k.value.field == "k"
    with pytest.raises(TooLarge) as many:
        mem.search_many(["q"] * (mem.config.recall.max_batch_queries + 1), tenant="t")
    assert many.value.field == "queries"


def test_a_reader_that_caught_up_batches_like_it_searches(tmp_path: Path) -> None:
    # A read-only Memory replays the writer's log into uncommitted lexical writes; the batch's first
    # lexical stage commits them. Its stages share that index: they must not commit it twice at once.
    with Memory(tmp_path / "s") as writer:
        writer.add_many(chat(200, seed=9), tenant="t")
        reader = Memory(tmp_path / "s", Config.of(read_only=True))
        reader.search("warm", tenant="t")
        writer.add_many(chat(200, seed=10), tenant="t")
        batch = queries(12, seed=2)
        for _ in range(3):
            reader.refresh("t")
            got = reader.search_many(batch, tenant="t")
            for query, hits in zip(batch, got, strict=True):
                same(hits, reader.search(query, tenant="t"))
            writer.add_many(chat(50, seed=11 + _), tenant="t")
        reader.close()
