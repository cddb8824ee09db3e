"""A snapshot carries its tantivy index; opening adopts it, and a damaged one is rebuilt with a warning."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from engine.model.changes import ChangeSet
from engine.model.note import Note
from engine.state.tenant_state import TenantMemory
from engine.storage.snapshot import LEXICAL, read_snapshot, write_snapshot

T0 = datetime(2024, 5, 1, tzinfo=UTC)
TEXTS = ["Maya repaired a rusty bicycle", "Leo sold a guitar in Kyoto", "Ana bought a guitar", "quiet garden"]


def tenant() -> TenantMemory:
    tm = TenantMemory("t", 8)
    rng = np.random.default_rng(0)
    notes = [
        Note(id=f"n{i}", tenant="t", content=c, timestamp=T0 + timedelta(days=i)) for i, c in enumerate(TEXTS)
    ]
    notes[1].invalid_at = T0 + timedelta(days=5)
    tm.apply(ChangeSet(upserts=[(n, rng.standard_normal(8).astype(np.float32)) for n in notes]))
    tm.apply(ChangeSet(deletes=["n3"]))  # a freed slot: the snapshot renumbers rows
    return tm


def hits(tm: TenantMemory, query: str, **kw: object) -> list[str]:
    slots, _ = tm.lexical.top(query, 10, **kw)  # type: ignore[arg-type]
    return sorted(tm.index.ids[s] for s in slots)  # type: ignore[misc]


def reopened(folder: Path) -> TenantMemory:
    tm = TenantMemory("t", 8)
    read_snapshot(folder / "snap-000000000001", tm, "enc")
    return tm


def test_snapshot_lexical_index_is_adopted_without_rebuild(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_snapshot(tmp_path, tenant(), 1, "enc")
    with caplog.at_level(logging.WARNING, logger="amem"):
        tm = reopened(tmp_path)
    assert not caplog.records
    assert tm.lexical.path is not None  # the working copy of the snapshot's index, not a rebuilt RAM one
    assert hits(tm, "guitar") == ["n2"] and hits(tm, "guitar", any_time=True) == ["n1", "n2"]
    assert hits(tm, "guitar", as_of=(T0 + timedelta(days=1, hours=1)).timestamp()) == ["n1"]
    assert hits(tm, "garden", any_time=True) == []


@pytest.mark.parametrize("damage", ["flip", "remove"])
def test_a_damaged_lexical_index_is_rebuilt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: str
) -> None:
    write_snapshot(tmp_path, tenant(), 1, "enc")
    files = sorted(p for p in (tmp_path / "snap-000000000001" / LEXICAL).rglob("*") if p.is_file())
    victim = max(files, key=lambda p: p.stat().st_size)
    if damage == "remove":
        victim.unlink()
    else:
        data = bytearray(victim.read_bytes())
        data[len(data) // 2] ^= 0xFF
        victim.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, logger="amem"):
        tm = reopened(tmp_path)
    assert any("rebuilding" in r.getMessage() for r in caplog.records)
    assert tm.lexical.path is None
    assert hits(tm, "guitar") == ["n2"] and hits(tm, "guitar", any_time=True) == ["n1", "n2"]
    assert len(tm) == 3 and len(tm.lexical) == 3
