"""A write batch reads its neighbours, logs its record and writes the snapshot it may trigger (an edit
builds its change) with the tenant's lock released: searches answer meanwhile (21 s for a snapshot at
200k notes, ~1 s for a batch's pipeline), while other writes and the tenant's eviction wait for them."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench.synthetic import chat
from engine import Config, Memory
from engine import memory as memory_module
from engine.encode import Encoder
from engine.state import note_table, packed
from engine.state.history import History
from engine.state.lexical import LexicalIndex
from engine.storage import tenant_store
from engine.storage.tenant_store import TenantStorage
from engine.write.pipeline import WritePipeline


def _thread(target: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    """A started thread and the list that gets its result, or the exception it raised."""
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(target())
        except BaseException as exc:  # the test thread asserts on it
            out.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def test_searches_answer_while_a_write_snapshots_and_other_calls_wait(
    tmp_path: Path, encoder: Encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = chat(40, seed=5)
    started, release = threading.Event(), threading.Event()
    real = packed.write

    def held(path: Path, state: packed.Packed) -> list[Path]:  # a step of the unlocked phase
        started.set()
        assert release.wait(60)
        return real(path, state)

    config = Config.of(snapshot_held=20, snapshot_held_max=20, max_open_tenants=1)
    mem = Memory(tmp_path / "s", config, encoder=encoder)
    mem.add_many(lines[:10], tenant="t")
    monkeypatch.setattr(packed, "write", held)
    writer, wrote = _thread(lambda: mem.add_many(lines[10:30], tenant="t"))  # crosses the bar
    assert started.wait(60)

    searcher, found = _thread(lambda: mem.search(lines[12]["content"], tenant="t", k=1))
    searcher.join(30)
    assert not searcher.is_alive(), "a search waited for the snapshot"
    assert found[0][0].note.content == lines[12]["content"]  # the write that snapshots is seen

    other, _ = _thread(lambda: mem.add_many(lines[30:35], tenant="t"))
    elsewhere, _ = _thread(lambda: mem.add_many(lines[35:40], tenant="u"))  # opening u evicts t if it can
    other.join(1.0)
    elsewhere.join(30)
    assert other.is_alive(), "a second write ran during the snapshot"
    assert not elsewhere.is_alive()
    release.set()
    for thread in (writer, other):
        thread.join(60)
        assert not thread.is_alive()
    assert isinstance(wrote[0], list), wrote
    mem.close()
    with Memory(tmp_path / "s", encoder=encoder) as again:
        sources = {s for t in ("t", "u") for n in again.notes(t) for s in n.source_ids}
        assert sources == {line["source_id"] for line in lines}


@pytest.mark.parametrize(
    "step",
    [
        (WritePipeline, "run"),
        (TenantStorage, "log"),
        (memory_module, "prepare"),
        (History, "seal"),
        (tenant_store, "prune_snapshots"),
        (LexicalIndex, "_commit"),
    ],
    ids=["pipeline", "log", "prepare", "seal versions", "remove the old snapshot", "commit lexical writes"],
)
def test_a_search_answers_while_a_write_batch_reads_its_neighbours_and_logs(
    tmp_path: Path, encoder: Encoder, monkeypatch: pytest.MonkeyPatch, step: tuple[type, str]
) -> None:
    lines, started, release = chat(30, seed=6), threading.Event(), threading.Event()
    owner, name = step
    real = getattr(owner, name)

    def held(*args: Any, **kwargs: Any) -> Any:  # a method (self first) or a module's function
        started.set()
        assert release.wait(60)
        return real(*args, **kwargs)

    config = Config.of(snapshot_held=15, snapshot_held_max=15)  # the second batch snapshots
    with Memory(tmp_path / "s", config, encoder=encoder) as mem:
        mem.add_many(lines[:10], tenant="t")
        monkeypatch.setattr(owner, name, held)
        writer, wrote = _thread(lambda: mem.add_many(lines[10:20], tenant="t"))
        assert started.wait(60)
        searcher, found = _thread(lambda: mem.search(lines[3]["content"], tenant="t", k=1))
        searcher.join(30)
        assert not searcher.is_alive(), f"a search waited for the write batch's {name}"
        assert found[0][0].note.content == lines[3]["content"]
        getter, _ = _thread(lambda: mem.get(found[0][0].note.id, tenant="t"))
        getter.join(1.0)
        assert getter.is_alive(), "a call that is not a search ran beside a write"
        release.set()
        writer.join(60)
        getter.join(60)
        assert len(wrote[0]) == 10 and mem.count("t") == 20


def test_a_search_answers_while_an_edit_embeds_its_new_text(
    tmp_path: Path, encoder: Encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    started, release = threading.Event(), threading.Event()
    real = WritePipeline.encode_notes

    def held(self: WritePipeline, *args: Any) -> Any:
        started.set()
        assert release.wait(60)
        return real(self, *args)

    with Memory(tmp_path / "s", encoder=encoder) as mem:
        ids = mem.add_many(chat(10, seed=8), tenant="t")
        monkeypatch.setattr(WritePipeline, "encode_notes", held)
        editor, _ = _thread(lambda: mem.update(ids[0], tenant="t", content="Maya now keeps bees in Porto"))
        assert started.wait(60)
        searcher, found = _thread(lambda: mem.search("Maya", tenant="t", k=3))
        searcher.join(30)
        assert not searcher.is_alive(), "a search waited for an edit's embedding"
        assert len(found[0]) == 3
        release.set()
        editor.join(60)
        assert mem.get(ids[0], tenant="t").content == "Maya now keeps bees in Porto"


def test_searches_racing_many_snapshots_fail_none_and_lose_nothing(
    tmp_path: Path, encoder: Encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(note_table, "_RECENT", 4)  # a small cache: decoded notes evicted all the time
    lines, done = chat(240, seed=9), threading.Event()
    config = Config.of(snapshot_held=8, snapshot_held_max=8)  # a snapshot after nearly every batch
    mem = Memory(tmp_path / "s", config, encoder=encoder)
    mem.add_many(lines[:8], tenant="t")

    def search_until_done(offset: int) -> int:
        answered = 0
        while not done.is_set():
            line = lines[(answered * 7 + offset) % 8]  # in the tenant from the start
            assert mem.search(line["content"], tenant="t", k=3)[0].note.content == line["content"]
            answered += 1
        return answered

    searchers = [_thread(lambda i=i: search_until_done(i)) for i in range(3)]
    for i in range(8, len(lines), 8):
        mem.add_many(lines[i : i + 8], tenant="t")
    done.set()
    for thread, out in searchers:
        thread.join(60)
        assert out and isinstance(out[0], int) and out[0] > 0, out
    mem.close()
    with Memory(tmp_path / "s", encoder=encoder) as again:
        assert {s for n in again.notes("t") for s in n.source_ids} == {line["source_id"] for line in lines}
