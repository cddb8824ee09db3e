"""`Note.copy` builds the copy field by field: every field must land in its own place, lists stay apart."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from engine.model.note import Link, Note

T0 = datetime(2024, 5, 1, tzinfo=UTC)


def test_a_copy_equals_field_by_field_and_shares_no_list() -> None:
    values = {f.name: f"value of {f.name}" for f in dataclasses.fields(Note)}  # all distinct
    values |= {"keywords": ["k"], "tags": ["t"], "links": [Link("x", "why", T0)], "metadata": {"a": 1}}
    values |= {"source_ids": ["s"], "occurrences": [T0], "version": 7}
    values |= {
        name: T0 + timedelta(hours=i) for i, name in enumerate(("timestamp", "created_at", "updated_at"))
    }
    values |= {
        name: T0 + timedelta(days=i) for i, name in enumerate(("valid_at", "invalid_at", "expired_at"))
    }
    note = Note(**values)  # type: ignore[arg-type]
    out = note.copy()
    assert {f.name: getattr(out, f.name) for f in dataclasses.fields(Note)} == values
    for name in ("keywords", "tags", "links", "metadata", "source_ids", "occurrences"):
        assert getattr(out, name) is not getattr(note, name)


def test_a_copy_of_a_note_without_valid_at_is_valid_from_its_time() -> None:
    note = Note(id="n", tenant="t", content="c", timestamp=T0)
    note.valid_at = None
    assert note.copy().valid_at == T0
