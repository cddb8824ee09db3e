"""The service's wire forms are built without validation (engine/service/schemas.py): they must dump the
same JSON as a validated build of the same notes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine import Memory
from engine.model.note import Note
from engine.service.schemas import HitOut, NoteOut, SearchResponse, hit_out, note_out


def validated(note: Note) -> NoteOut:
    fields: dict[str, Any] = {name: getattr(note, name) for name in NoteOut.model_fields}
    fields["links"] = [{"target": x.target, "reason": x.reason} for x in note.links]
    return NoteOut.model_validate(fields)


def test_unvalidated_notes_dump_the_same_json(tmp_path: Path) -> None:
    with Memory(tmp_path / "s") as mem:
        mem.add_many(
            [
                {"content": "I drive a red Fiat to work.", "timestamp": "2024-01-02", "speaker": "ana"},
                {"content": "My Fiat is parked by the station.", "timestamp": "2024-01-03", "speaker": "ana"},
                {"content": "These days I drive a blue Tesla.", "timestamp": "2024-06-01", "speaker": "ana"},
                {"content": "Ana's car club meets on Sunday", "metadata": {"n": 1, "tags": ["x"]}},
            ]
        )
        hits = mem.search("what car does ana drive", include_superseded=True)
        notes = mem.notes()
    assert any(n.links for n in notes) and any(n.metadata for n in notes)
    assert any(n.superseded_by for n in notes)  # validity fields set, not only their defaults
    for note in notes:
        assert note_out(note).model_dump_json() == validated(note).model_dump_json()
    built = SearchResponse.model_construct(hits=[hit_out(h) for h in hits]).model_dump_json()
    checked = SearchResponse(
        hits=[
            HitOut(note=validated(h.note), score=h.score, via=h.via, superseded=h.is_superseded) for h in hits
        ]
    ).model_dump_json()
    assert built == checked and len(hits) == 4
