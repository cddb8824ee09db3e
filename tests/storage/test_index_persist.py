"""The vector index persisted beside each snapshot: reopen reuses it; a damaged one is rebuilt."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from engine import Config, Memory
from engine.state.vector_index import VectorIndex
from engine.storage.snapshot import INDEX_FILE, snapshots_newest_first

LINES = [f"{name} packed a {thing} for the trip to {place}" for name, thing, place in [
    ("Maya", "tent", "Oslo"), ("Leo", "camera", "Kyoto"), ("Ana", "kayak", "Lima"),
    ("Omar", "violin", "Cairo"), ("Lena", "map", "Berlin"), ("Ravi", "drone", "Seoul"),
]]  # fmt: skip
QUERIES = ["who packed a camera", "trip to Lima", "violin in Cairo"]


def _fill_and_results(store: Path, config: Config, encoder) -> list:
    with Memory(store, config, encoder=encoder) as mem:
        mem.add_many([{"content": c, "speaker": c.split()[0]} for c in LINES], tenant="t")
        return _results(mem)


def _results(mem: Memory) -> list:
    return [[(h.note.id, round(h.score, 6)) for h in mem.search(q, tenant="t", k=4)] for q in QUERIES]


def _loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records each successful VectorIndex.load (the real one runs)."""
    loaded: list[str] = []
    real = VectorIndex.load.__func__  # type: ignore[attr-defined]

    def spy(cls, path, *args, **kwargs):
        index = real(cls, path, *args, **kwargs)
        loaded.append(index.tier)
        return index

    monkeypatch.setattr(VectorIndex, "load", classmethod(spy))
    return loaded


@pytest.mark.parametrize("ann_min_notes", [50_000, 2])  # exact tier, HNSW tier (graph searched)
def test_reopen_reuses_the_saved_index(store, encoder, monkeypatch, caplog, ann_min_notes) -> None:
    config = Config.of(ann_min_notes=ann_min_notes, ann_exact_max=1)
    before = _fill_and_results(store, config, encoder)
    snap = snapshots_newest_first(store / "tenants" / "t")[0]
    assert (snap / INDEX_FILE).stat().st_size > 0
    loaded = _loads(monkeypatch)
    with caplog.at_level(logging.WARNING), Memory(store, config, encoder=encoder) as mem:
        assert _results(mem) == before
    assert loaded == ["ann" if ann_min_notes == 2 else "exact"]
    assert "rebuilding" not in caplog.text


def test_damaged_index_file_reopens_by_rebuilding(store, encoder, caplog) -> None:
    config = Config.of(ann_min_notes=2)
    before = _fill_and_results(store, config, encoder)
    path = snapshots_newest_first(store / "tenants" / "t")[0] / INDEX_FILE
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0x5A
    path.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING), Memory(store, config, encoder=encoder) as mem:
        assert _results(mem) == before
    assert "checksum mismatch" in caplog.text and "rebuilding the vector index" in caplog.text


def test_truncated_index_file_reopens_by_rebuilding(store, encoder, caplog) -> None:
    before = _fill_and_results(store, Config(), encoder)
    path = snapshots_newest_first(store / "tenants" / "t")[0] / INDEX_FILE
    path.write_bytes(path.read_bytes()[:100])
    with caplog.at_level(logging.WARNING), Memory(store, Config(), encoder=encoder) as mem:
        assert _results(mem) == before
    assert "rebuilding the vector index" in caplog.text
