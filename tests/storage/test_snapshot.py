"""Parquet snapshots: round trip, reopen without re-encoding, tenants apart on disk."""

from __future__ import annotations

import pyarrow.parquet as pq

from bench.synthetic import chat
from engine import Config, Memory
from engine.storage import notes_file

LINES = [
    ("I adopted a golden retriever puppy named Max.", "Alice"),
    ("Max the golden retriever puppy loves swimming at Lake Tahoe.", "Alice"),
    ("I started a new job at the bank downtown.", "Bob"),
    ("The bank job has long hours but good pay.", "Bob"),
    ("We are planning a trip to Japan in April.", "Alice"),
]
QUERIES = ["What is the name of the dog?", "Where does Bob work?", "travel plans", "swimming"]


def _fill(mem: Memory, tenant: str = "t") -> list[str]:
    return mem.add_many(
        [
            {"content": c, "speaker": s, "timestamp": f"2024-02-0{i + 1}T12:00:00Z"}
            for i, (c, s) in enumerate(LINES)
        ],
        tenant=tenant,
    )


def _results(mem: Memory, tenant: str = "t") -> list[list[tuple[str, float]]]:
    return [[(h.note.id, round(h.score, 6)) for h in mem.search(q, tenant=tenant, k=5)] for q in QUERIES]


def test_round_trip_gives_identical_search_results(store, encoder) -> None:
    with Memory(store, Config(), encoder=encoder) as mem:
        _fill(mem)
        before = _results(mem)
        notes_before = {n.id: n for n in mem.notes("t")}
        history_before = {i: len(mem.history(i, "t")) for i in notes_before}
    with Memory(store, Config(), encoder=encoder) as mem:
        assert _results(mem) == before
        assert {n.id: n for n in mem.notes("t")} == notes_before
        assert {i: len(mem.history(i, "t")) for i in notes_before} == history_before


def test_reopen_does_not_re_encode(store, encoder) -> None:
    with Memory(store, Config(), encoder=encoder) as mem:
        _fill(mem)

    class Counting:
        name, dim = encoder.name, encoder.dim
        calls = 0

        def encode_batch(self, texts):
            Counting.calls += len(texts)
            return encoder.encode_batch(texts)

    with Memory(store, Config(), encoder=Counting()) as mem:
        Counting.calls = 0
        assert len(mem.notes("t")) == len(LINES)
        assert Counting.calls == 0


def test_snapshot_is_parquet_with_vectors(store, encoder) -> None:
    with Memory(store, Config(), encoder=encoder) as mem:
        _fill(mem)
    [snap] = sorted((store / "tenants" / "t").glob("snap-*"))
    table = pq.read_table(snap / "notes.parquet")
    assert table.num_rows == len(LINES)
    assert {"content", "keywords", "tags", "context", "links", "valid_at", "invalid_at", "embedding"} <= set(
        table.column_names
    )
    assert len(table.column("embedding")[0]) == encoder.dim


def test_tenants_are_isolated(store, encoder) -> None:
    with Memory(store, Config(), encoder=encoder) as mem:
        a_ids = _fill(mem, "alpha")
        mem.add("Bob's secret: the safe code is 4521.", tenant="beta", speaker="Bob")
        assert all(h.note.tenant == "alpha" for h in mem.search("safe code secret", tenant="alpha", k=10))
        assert mem.search("golden retriever", tenant="beta", k=10)[0].note.tenant == "beta"
        assert mem.search("anything", tenant="gamma") == []
        import pytest

        from engine.errors import NotFound

        with pytest.raises(NotFound):
            mem.get(a_ids[0], tenant="beta")
    assert sorted(p.name for p in (store / "tenants").iterdir()) == ["alpha", "beta"]


def test_notes_file_taken_over_from_the_last_snapshot_equals_one_written_whole(
    store, encoder, monkeypatch, tmp_path
) -> None:
    """Rows of notes not written since the last snapshot come from its file; only the rest are decoded."""
    monkeypatch.setattr(notes_file, "CHUNK", 4)
    decoded, real = [], notes_file._chunk

    def counted(tm, slots):  # type: ignore[no-untyped-def]
        decoded.append(len(slots))
        return real(tm, slots)

    monkeypatch.setattr(notes_file, "_chunk", counted)
    lines = chat(40, seed=3)
    with Memory(store, Config(), encoder=encoder) as mem:
        mem.add_many(lines[:30], tenant="t")
        mem.checkpoint()
        decoded.clear()
        mem.add_many(lines[30:34], tenant="t")
        mem.update(mem.notes("t")[0].id, tenant="t", context="changed by hand")
        mem.checkpoint()
        assert 0 < sum(decoded) < len(mem.notes("t")) / 2
        _same_as_whole(mem, store, tmp_path / "whole.parquet")
    with Memory(store, Config(), encoder=encoder) as mem:  # the base again after a reopen
        decoded.clear()
        mem.add_many(lines[34:], tenant="t")
        mem.checkpoint()
        assert 0 < sum(decoded) < len(mem.notes("t")) / 2
        _same_as_whole(mem, store, tmp_path / "whole.parquet")


def _same_as_whole(mem: Memory, store, whole) -> None:  # type: ignore[no-untyped-def]
    newest = sorted((store / "tenants" / "t").glob("snap-*"))[-1] / "notes.parquet"
    with mem._pool.use("t") as t:
        rows, _ = notes_file.write_notes(t.state, whole)
    written = pq.ParquetFile(newest)
    assert written.read().sort_by("slot").equals(pq.read_table(whole)) and rows == written.metadata.num_rows
    for group in range(written.num_row_groups):  # one chunk of slots a group
        assert len(set(written.read_row_group(group).column("slot").to_numpy() // 4)) == 1


def test_a_tenant_whose_last_note_is_deleted_snapshots_empty(store, encoder) -> None:
    with Memory(store, Config(), encoder=encoder) as mem:
        [only] = mem.add_many([{"content": "The one note this tenant holds."}], tenant="t")
        mem.checkpoint()
        mem.delete(only, tenant="t")
    with Memory(store, Config(), encoder=encoder) as mem:
        assert mem.notes("t") == [] and mem.stats()["tenants"]["t"]["problems"] == []
