"""Compact log records (format 2): a store replayed from its log alone equals the live one, notes,
vectors and history alike; logs written in format 1 (every note in full) still replay."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import engine.storage.tenant_store as tenant_store
from bench.synthetic import chat
from engine import Config, Memory
from engine.encode import Encoder, make_encoder
from engine.model.changes import ChangeSet
from engine.model.records import changes_to_records
from engine.state.tenant_state import TenantMemory
from engine.storage.wal import WriteAheadLog

CONFIG = Config.of(snapshot_every=10**9)  # nothing but the log: the closing snapshot is never read here


@pytest.fixture(scope="module")
def encoder() -> Encoder:
    return make_encoder(Config())


def _workload(mem: Memory) -> None:
    items = chat(120, seed=11)
    for i in range(0, len(items), 15):
        mem.add_many(items[i : i + 15])
    first, second = mem.notes()[:2]
    mem.update(first.id, context="Edited by hand.", tags=["edited"])
    mem.invalidate(second.id, at="2024-05-01T00:00:00Z")
    mem.rollback(first.id, 1)
    mem.add("I adopted a cat named Miso.", speaker="Maya")
    mem.add("I adopted a cat named Miso.", speaker="Maya")  # merged into the first: a version


def _state(mem: Memory) -> dict[str, object]:
    notes = {n.id: n for n in mem.notes()}
    return {
        "notes": notes,
        "vectors": {i: mem.vector(i).tolist() for i in notes},
        "history": {
            i: [(v.version, v.stage, v.note, _vec(v.embedding)) for v in mem.history(i)] for i in notes
        },
    }


def _vec(v: np.ndarray | None) -> list[float] | None:
    return None if v is None else v.tolist()


def _replayed(store: Path, tmp: Path, encoder: Encoder) -> dict[str, object]:
    """Open a copy of `store` taken while its writer still runs: only the log holds the data."""
    copy = tmp / "copy"
    shutil.copytree(store, copy)
    assert not list(copy.rglob("snap-*")), "the log alone must carry the state"
    with Memory(copy, CONFIG.with_(read_only=True), encoder=encoder) as mem:
        return _state(mem)


def test_compact_log_replays_to_the_live_state(tmp_path: Path, encoder: Encoder) -> None:
    store = tmp_path / "store"
    mem = Memory(store, CONFIG, encoder=encoder)
    _workload(mem)
    live = _state(mem)
    formats = {rec.get("format") for _, rec in WriteAheadLog(store / "tenants/default/wal.log").replay()}
    assert formats == {2}
    assert _replayed(store, tmp_path, encoder) == live
    mem.close()


def test_format_1_logs_still_replay(
    tmp_path: Path, encoder: Encoder, monkeypatch: pytest.MonkeyPatch
) -> None:
    def old_log(
        self: tenant_store.TenantStorage, changes: ChangeSet, state: TenantMemory | None = None
    ) -> None:
        assert self._wal is not None
        self.seq = self._wal.append([{"changes": changes_to_records(changes)}])  # as format 1 wrote it

    monkeypatch.setattr(tenant_store.TenantStorage, "log", old_log)
    store = tmp_path / "store"
    mem = Memory(store, CONFIG, encoder=encoder)
    _workload(mem)
    live = _state(mem)
    monkeypatch.undo()
    formats = {rec.get("format") for _, rec in WriteAheadLog(store / "tenants/default/wal.log").replay()}
    assert formats == {None}
    assert _replayed(store, tmp_path, encoder) == live
    mem.close()
