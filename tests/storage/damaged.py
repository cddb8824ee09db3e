"""A store damaged on purpose: the template's batches and the helpers that harm and read it.

The template (tests/storage/conftest.py, built by crash_child.py, which dies without closing) holds three
batches: snap-1 has batch 0, snap-2 has batches 0-1, and the log holds records 2 and 3 (batches 1
and 2): the newest state is only in the log, and the previous snapshot is the fallback.
"""

from __future__ import annotations

import json
from pathlib import Path

from bench.synthetic import chat
from engine import Config, Memory
from engine.encode import Encoder

ROOT = Path(__file__).resolve().parents[2]
TENANT = "victim"
BATCHES = [chat(30, seed=5)[i : i + 10] for i in range(0, 30, 10)]
ALL = {0, 1, 2}
NEWEST = "snap-000000000002"


def folder(store: Path) -> Path:
    return store / "tenants" / TENANT


def open_store(store: Path, encoder: Encoder, read_only: bool = False) -> Memory:
    return Memory(store, Config.of(read_only=read_only), encoder=encoder)


def batches_present(mem: Memory) -> set[int]:
    sources = {s for n in mem.notes(TENANT) for s in n.source_ids}
    present = set()
    for i, batch in enumerate(BATCHES):
        there = {it["source_id"] in sources for it in batch}
        assert len(there) == 1, f"batch {i} is half there"
        if there == {True}:
            present.add(i)
    return present


def sources(mem: Memory) -> set[str]:
    return {s for n in mem.notes(TENANT) for s in n.source_ids}


def problems(mem: Memory) -> list[str]:
    return mem.stats()["tenants"][TENANT]["problems"]


def flip(path: Path, at: float = 0.5, count: int = 8) -> None:
    data = bytearray(path.read_bytes())
    start = int(len(data) * at)
    for i in range(start, min(start + count, len(data))):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def truncate(path: Path, keep: float = 0.5) -> None:
    path.write_bytes(path.read_bytes()[: int(path.stat().st_size * keep)])


def segments(snapshot: Path) -> list[str]:
    """The versions segments a snapshot lists, oldest first."""
    return list(json.loads((snapshot / "meta.json").read_text())["versions"])


def own_segment(snapshot: Path) -> Path:
    """The newest snapshot's one segment that the snapshot before it does not hold (linked)."""
    older = {n for s in snapshot.parent.glob("snap-*") if s.name < snapshot.name for n in segments(s)}
    [own] = [n for n in segments(snapshot) if n not in older]
    return snapshot / own
