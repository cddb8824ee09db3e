"""Pure decisions of the evolve stage: apply an update, supersede a fact, merge a near-duplicate.

No I/O and no model here: each function takes notes and returns changed copies plus the prior version.
"""

from __future__ import annotations

from datetime import datetime

import numpy as np

from engine.annotate.sanity import off_subject
from engine.annotate.schemas import NeighbourUpdate
from engine.model.note import Note, NoteVersion


def snapshot_version(
    note: Note,
    stage: str,
    cause: str | None,
    at: datetime,
    embedding: np.ndarray | None = None,
    reason: str = "",
) -> NoteVersion:
    return NoteVersion(
        note_id=note.id,
        version=note.version,
        note=note.copy(),
        embedding=embedding,
        stage=stage,
        cause=cause,
        changed_at=at,
        reason=reason,
    )


def apply_update(note: Note, update: NeighbourUpdate, new: Note, at: datetime) -> tuple[Note, str | None]:
    """The neighbour after one evolution update by `new`; returns (note, stage) or (note, None) if unchanged.

    Guard: an update whose text would replace the neighbour's own subject (see `off_subject`) changes no
    text; a bad evolution must never overwrite a better note. Supersession is decided on its own.
    """
    out = note.copy()
    if update.supersedes and supersede(out, new, at):
        # A retired fact keeps its own words: as_of search must not see it carrying later ones.
        out.version += 1
        out.updated_at = at
        return out, "supersede"
    if off_subject(note, update):
        return out, None
    if update.context is not None:
        out.context = update.context
    if update.keywords is not None:
        out.keywords = list(dict.fromkeys(update.keywords))
    if update.tags is not None:
        out.tags = list(dict.fromkeys(update.tags))
    stage = "evolve" if _text_changed(note, out) else None
    if stage:
        out.version += 1
        out.updated_at = at
    return out, stage


def supersede(old: Note, new: Note, at: datetime) -> bool:
    """Retire `old` in place because `new` states a fact that replaces it. False if it cannot apply."""
    if old.invalid_at is not None or new.timestamp < old.timestamp or old.id == new.id:
        return False
    old.invalid_at = new.valid_at
    old.expired_at = at
    old.superseded_by = new.id
    return True


def carry_forward(new: Note, old: Note, reason: str) -> Note:
    """The superseding note, with what it replaced named in its context and keywords.

    A query phrased like the old fact ("where does she live?") should find the fact that replaced it
    ("I moved to Seattle"), so the new note takes the old one's leading keywords.
    """
    out = new.copy()
    out.context = f"{new.context} Updates an earlier fact ({reason or 'replaced'}): {old.content[:160]}"
    out.keywords = list(dict.fromkeys(new.keywords + old.keywords[:4]))
    return out


def merge_duplicate(target: Note, occurrence: datetime, source_id: str | None, at: datetime) -> Note:
    """`target` after a near-identical interaction was folded into it."""
    out = target.copy()
    out.occurrences.append(occurrence)
    if source_id:
        out.source_ids.append(source_id)
    out.version += 1
    out.updated_at = at
    return out


def _text_changed(a: Note, b: Note) -> bool:
    return (a.context, a.keywords, a.tags) != (b.context, b.keywords, b.tags)
