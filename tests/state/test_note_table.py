"""Notes stored as records by slot: exact round trips, fresh copies, hot columns, derived graph and sources."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from engine.model.changes import ChangeSet
from engine.model.note import Link, Note
from engine.state import note_table
from engine.state.record import decode
from engine.state.tenant_state import TenantMemory

T0 = datetime(2024, 5, 1, 12, 0, 0, 1, tzinfo=UTC)  # microseconds survive (a float epoch would drop them)


def note(i: int, speaker: str | None = "Maya", links: tuple[int, ...] = (), content: str = "") -> Note:
    return Note(
        id=f"n{i}",
        tenant="t",
        content=content or f"note {i} about the bicycle",
        timestamp=T0 + timedelta(minutes=i),
        speaker=speaker,
        keywords=["bicycle", f"k{i}"],
        links=[Link(target=f"n{j}", reason=f"shared with {j}", created_at=T0) for j in links],
        metadata={"dia_id": f"D{i}"},
        source_ids=[f"log.jsonl:{i}"],
        occurrences=[T0],
    )


def vec(i: int) -> np.ndarray:
    out = np.zeros(8, dtype=np.float32)
    out[i % 8] = 1.0
    return out


def tenant(*notes: Note) -> TenantMemory:
    tm = TenantMemory("t", 8)
    tm.apply(ChangeSet(upserts=[(n, vec(k)) for k, n in enumerate(notes)]))
    return tm


def test_a_note_reads_back_equal_and_every_read_is_a_fresh_copy() -> None:
    original = note(1, links=(0,))
    tm = tenant(note(0), original)
    got = tm.get("n1")
    assert got == original and got is not original
    got.keywords.append("changed")
    got.links.clear()
    assert tm.get("n1") == original, "mutating a read changed the stored note"
    assert set(tm.notes) == {"n0", "n1"} and "n1" in tm.notes and "nope" not in tm.notes


def test_inside_holding_each_note_is_decoded_once_and_the_cache_shrinks_after(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tm = tenant(*(note(i) for i in range(8)))
    decoded: list[object] = []
    monkeypatch.setattr(note_table, "_RECENT", 3)
    monkeypatch.setattr(note_table, "decode", lambda record: decoded.append(record) or decode(record))
    with tm.notes.holding():
        with tm.notes.holding():  # nested: the outer block still holds
            first = [tm.get(f"n{i}") for i in range(8)]
        assert [tm.get(f"n{i}") for i in range(8)] == first and len(decoded) == 8
    assert [tm.get(f"n{i}") for i in (5, 6, 7)] == first[5:] and len(decoded) == 8  # the newest stay
    tm.get("n0")
    assert len(decoded) == 9


def test_hot_columns_follow_writes_and_deletes() -> None:
    tm = tenant(note(0, speaker="Maya"), note(1, speaker="Leo", content="we met last week in Lisbon"))
    slot0, slot1 = tm.index.slot_of["n0"], tm.index.slot_of["n1"]
    table = tm.notes
    assert [table.speakers[table.speaker[s]] for s in (slot0, slot1)] == ["Maya", "Leo"]
    assert table.timely[slot1] and not table.timely[slot0]
    assert table.timestamp[slot1] == pytest.approx((T0 + timedelta(minutes=1)).timestamp())
    generation = table.generation
    tm.apply(ChangeSet(deletes=["n1"]))
    assert table.generation > generation and table.speaker[slot1] == -1 and not table.timely[slot1]
    assert tm.latest is not None and tm.latest.id == "n0", "deleting the newest note moves `latest` back"


def test_backlinks_are_derived_and_follow_edits_deletes_and_slot_reuse() -> None:
    tm = tenant(note(0), note(1, links=(0,)), note(2, links=(0, 1)))
    assert sorted(tm.neighbours_of("n0")) == [("n1", "shared with 0"), ("n2", "shared with 0")]
    tm.apply(ChangeSet(upserts=[(note(2, links=(1,)), vec(2))]))  # n2 no longer links to n0
    assert tm.neighbours_of("n0") == [("n1", "shared with 0")]
    tm.apply(ChangeSet(deletes=["n0"]))
    assert tm.get("n1").links == [], "a deleted target is removed from the links pointing at it"
    tm.apply(ChangeSet(upserts=[(note(3), vec(3))]))  # takes n0's freed slot
    assert tm.index.slot_of["n3"] == 0 and tm.neighbours_of("n3") == []
    assert tm.neighbours_of("n1") == [("n2", "shared with 1")]


def test_sources_resolve_to_their_note_and_forget_deleted_ones() -> None:
    tm = tenant(note(0), note(1))
    assert tm.note_of_source("log.jsonl:1") == "n1" and tm.note_of_source("log.jsonl:9") is None
    tm.apply(ChangeSet(deletes=["n1"]))
    assert tm.note_of_source("log.jsonl:1") is None and tm.num_sources == 1
