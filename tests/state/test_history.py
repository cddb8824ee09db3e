"""History seals live versions into memory-mapped spill files; what reads back is what was written."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from engine.model.note import Link, Note, NoteVersion
from engine.state import history as history_mod
from engine.state.history import History, Segment

T0 = datetime(2024, 5, 1, 12, tzinfo=UTC)


def version(note_id: str, n: int, rng: np.random.Generator, with_vector: bool = True) -> NoteVersion:
    note = Note(
        id=note_id,
        tenant="t",
        content=f"{note_id} said thing {n}",
        timestamp=T0,
        speaker="Maya",
        keywords=["bicycle", f"k{n}"],
        tags=["travel"],
        context=f"context {n}",
        links=[Link(target="other", reason="shared keywords", created_at=T0)],
        metadata={"dia_id": f"D{n}"},
        source_ids=[f"s:{note_id}"],
        occurrences=[T0],
        version=n,
        created_at=T0,
        updated_at=T0 + timedelta(minutes=n),
        invalid_at=T0 + timedelta(days=n) if n % 2 else None,
    )
    vec = rng.standard_normal(8).astype(np.float32) if with_vector else None
    return NoteVersion(note_id, n, note, vec, "evolve", "cause-id", changed_at=T0 + timedelta(hours=n))


def same(a: NoteVersion, b: NoteVersion) -> bool:
    emb = (a.embedding is None and b.embedding is None) or np.array_equal(a.embedding, b.embedding)
    return emb and (a.note_id, a.version, a.note, a.stage, a.cause, a.changed_at) == (
        b.note_id,
        b.version,
        b.note,
        b.stage,
        b.cause,
        b.changed_at,
    )


LONG = ("a" * 32, "a" * 16 + "b" * 16, "0123456789abcdef" * 2)  # the first two share their 16-byte key
SHORT = ("a", "b", "c")


@pytest.mark.parametrize("ids", [SHORT, LONG], ids=["short ids", "hex ids"])
@pytest.mark.parametrize("seal_every", [1, 3, 1000])
def test_versions_read_back_equal_across_seals(
    monkeypatch: pytest.MonkeyPatch, seal_every: int, ids: tuple[str, ...]
) -> None:
    """Short ids are keyed by hash, long ones by their bytes (a clash of keys only costs a compared row)."""
    monkeypatch.setattr(history_mod, "SEAL_EVERY", seal_every)
    rng = np.random.default_rng(0)
    h, written = History(), {}
    for n in range(1, 5):
        for note_id in ids:
            v = version(note_id, n, rng, with_vector=n != 2)
            h.append(v)
            written.setdefault(note_id, []).append(v)
    assert len(h) == 12
    for note_id, vs in written.items():
        got = h.of(note_id)
        assert len(got) == len(vs) and all(same(x, y) for x, y in zip(got, vs, strict=True))
    a, b = ids[0], ids[1]
    h.drop(b)
    assert len(h) == 8 and h.of(b) == [] and b not in h
    again = History()
    again.load_table(h.table())  # an older (Parquet) snapshot's round trip
    assert len(again) == 8 and all(same(x, y) for x, y in zip(again.of(a), written[a], strict=True))
    again.append(version(a, 9, rng))
    assert [v.version for v in again.of(a)] == [1, 2, 3, 4, 9]


def test_rebase_maps_the_snapshot_file_and_removes_the_spill(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(history_mod, "SEAL_EVERY", 2)
    rng = np.random.default_rng(1)
    h = History()
    for n in range(1, 4):
        for note_id in ("a", "b"):
            h.append(version(note_id, n, rng))
    spill = Path(h._spill.name)  # type: ignore[union-attr]
    assert sorted(p.name for p in spill.iterdir()) == [
        "chunk-000000.arrow",
        "chunk-000001.arrow",
        "chunk-000002.arrow",
    ]
    h.drop("b")
    history_mod.write_file(h.table(), tmp_path / "versions.arrow")
    h.rebase([Segment(tmp_path / "versions.arrow", 3)])
    assert not spill.exists(), "spill files (with the dropped note's versions) outlive the snapshot"
    assert [v.version for v in h.of("a")] == [1, 2, 3] and h.of("b") == []
    h.append(version("a", 7, rng))
    assert len(h) == 4  # the snapshot's rows and a live one
    reopened = History()
    reopened.load([Segment(tmp_path / "versions.arrow", 3)])
    assert len(reopened) == 3 and reopened._by_name == {}  # counted from the snapshot's rows, not mapped
    assert all(same(x, y) for x, y in zip(reopened.of("a"), h.of("a")[:3], strict=True))
