"""Explicit edits (update, invalidate, rollback, delete) as ChangeSets, each keeping the prior version."""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Any

import numpy as np

from engine.errors import InputError, NotFound
from engine.model.changes import ChangeSet
from engine.model.note import AnnotatedBy, Interaction, Note
from engine.model.timeutil import utcnow
from engine.state.tenant_state import TenantMemory
from engine.write.evolution import snapshot_version
from engine.write.pipeline import WritePipeline

EDITABLE = {"content": str, "speaker": str, "context": str, "keywords": list, "tags": list, "metadata": dict}


def update(
    tm: TenantMemory, pipeline: WritePipeline, note_id: str, fields: dict[str, Any]
) -> tuple[ChangeSet, Note]:
    before = tm.get(note_id)
    after = before.copy()
    for name, value in fields.items():
        kind = EDITABLE.get(name)
        if kind is None:
            raise InputError(f"cannot edit this field; editable: {sorted(EDITABLE)}", field=name)
        if not isinstance(value, kind) or (name == "content" and not value.strip()):
            raise InputError(
                f"expected a {'non-empty ' if name == 'content' else ''}{kind.__name__}", field=name
            )
        setattr(after, name, copy.deepcopy(value))
    return _changed(tm, before, after, "update", pipeline.encode_notes([after])[0]), after


def invalidate(tm: TenantMemory, note_id: str, at: datetime | None) -> tuple[ChangeSet, Note]:
    before = tm.get(note_id)
    after = before.copy()
    now = utcnow()
    after.invalid_at = at or now
    after.expired_at = now
    return _changed(tm, before, after, "invalidate", tm.vector(note_id)), after


def rollback(tm: TenantMemory, pipeline: WritePipeline, note_id: str, version: int) -> tuple[ChangeSet, Note]:
    before = tm.get(note_id)
    kept = tm.history.of(note_id)
    past = next((v for v in kept if v.version == version), None)
    if past is None:
        known = [v.version for v in kept]
        raise NotFound(f"note {note_id!r} has no version {version} (kept: {known})")
    after = past.note.copy()
    after.version = before.version  # _changed bumps it: a rollback is a new version, history stays linear
    after.links = list(before.links)
    vec = past.embedding if past.embedding is not None else pipeline.encode_notes([after])[0]
    return _changed(tm, before, after, "rollback", vec, cause=f"version {version}"), after


def reannotate(tm: TenantMemory, pipeline: WritePipeline, notes: list[Note]) -> ChangeSet:
    """New keywords, tags and context from the annotator for `notes`; unchanged fallbacks are skipped."""
    items = [Interaction(content=n.content, timestamp=n.timestamp, speaker=n.speaker) for n in notes]
    changes = ChangeSet()
    for before, ann in zip(notes, pipeline.annotator.annotate(items), strict=True):
        if ann.annotated_by == AnnotatedBy.FALLBACK:
            continue
        after = before.copy()
        after.keywords, after.tags, after.context, after.annotated_by = (
            ann.keywords,
            ann.tags,
            ann.context,
            ann.annotated_by,
        )
        changes.extend(_changed(tm, before, after, "reannotate", pipeline.encode_notes([after])[0]))
    return changes


def delete(tm: TenantMemory, note_id: str) -> tuple[ChangeSet, None]:
    tm.get(note_id)
    return ChangeSet(deletes=[note_id]), None


def _changed(
    tm: TenantMemory, before: Note, after: Note, stage: str, vec: np.ndarray, cause: str | None = None
) -> ChangeSet:
    now = utcnow()
    after.version = before.version + 1
    after.updated_at = now
    version = snapshot_version(before, stage, cause, now, tm.vector(before.id))
    return ChangeSet(upserts=[(after, vec)], versions=[version])
