"""Log records round-trip notes exactly; a compact upsert (only the changed fields) gives the same note
as the full record would, whichever fields changed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.model.changes import ChangeSet
from engine.model.note import Link, Note
from engine.model.records import changes_from_records, changes_to_records, note_from_record, note_to_record

T0 = datetime(2024, 5, 1, tzinfo=UTC)
words = st.lists(st.text("abcxyz ", max_size=8), max_size=3)
times = st.integers(0, 10**12).map(lambda us: T0 + timedelta(microseconds=us))
maybe_times = st.none() | times


@st.composite
def notes(draw: st.DrawFn, note_id: str = "n1") -> Note:
    note = Note(
        id=note_id,
        tenant="t",
        content=draw(st.text(max_size=20)),
        timestamp=draw(times),
        speaker=draw(st.none() | st.sampled_from(["Maya", "Sam"])),
        keywords=draw(words),
        tags=draw(words),
        context=draw(st.text(max_size=20)),
        links=[
            Link(t, r, at)
            for t, r, at in draw(st.lists(st.tuples(st.text(max_size=4), words.map(str), times), max_size=2))
        ],
        metadata=draw(st.dictionaries(st.sampled_from("ab"), st.integers(), max_size=2)),
        source_ids=draw(st.lists(st.text(max_size=4), max_size=2)),
        occurrences=draw(st.lists(times, max_size=2)),
        annotated_by=draw(st.sampled_from(["embedded", "llm"])),
        version=draw(st.integers(1, 9)),
        created_at=draw(times),
        updated_at=draw(times),
        valid_at=draw(maybe_times),
        invalid_at=draw(maybe_times),
        expired_at=draw(maybe_times),
        superseded_by=draw(st.none() | st.just("n2")),
    )
    return note


class DictBase:
    def __init__(self, note: Note, vector: np.ndarray) -> None:
        self.note, self.vector = note, vector

    def current_note(self, note_id: str) -> Note | None:
        return self.note.copy() if note_id == self.note.id else None

    def current_vector(self, note_id: str) -> np.ndarray | None:
        return self.vector if note_id == self.note.id else None


@settings(max_examples=200, deadline=None)
@given(old=notes(), new=notes(), mix=st.lists(st.booleans(), min_size=20, max_size=20))
def test_a_compact_upsert_gives_the_note_the_full_record_gives(old: Note, new: Note, mix: list[bool]) -> None:
    # the new note: some fields from `new`, the rest as `old` had them (the evolution of one note)
    fields = list(note_to_record(old))
    merged = {
        name: (note_to_record(new) if pick else note_to_record(old))[name]
        for name, pick in zip(fields, mix, strict=False)
    }
    merged |= {name: note_to_record(old)[name] for name in fields[len(mix) :]}
    merged["id"] = old.id
    updated = note_from_record(merged)
    vector = np.arange(4, dtype=np.float32)
    base = DictBase(old, vector)
    records = changes_to_records(ChangeSet(upserts=[(updated, vector)]), base)
    assert "changed" in records[0]  # the compact form, not the whole note
    ((note, got_vector),) = changes_from_records(records, base).upserts
    assert note == updated == note_from_record(note_to_record(updated))
    assert np.array_equal(got_vector, vector)
    assert base.note == old  # the base's note was not changed through the copy


def test_a_cleared_valid_at_falls_back_to_the_time_as_a_new_note_would() -> None:
    old = Note(id="n1", tenant="t", content="c", timestamp=T0, valid_at=T0 + timedelta(days=1))
    updated = old.copy()
    updated.valid_at = None  # a note built afresh from this record is valid from its time
    base = DictBase(old, np.zeros(4, dtype=np.float32))
    records = changes_to_records(ChangeSet(upserts=[(updated, base.vector)]), base)
    ((note, _),) = changes_from_records(records, base).upserts
    assert note.valid_at == T0 == note_from_record(note_to_record(updated)).valid_at
