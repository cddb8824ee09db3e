"""Notes and versions <-> plain JSON-able records, shared by the write-ahead log and snapshots."""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime
from typing import Any

import numpy as np

from engine.errors import InputError
from engine.model.changes import ChangeSet
from engine.model.note import Link, Note, NoteVersion
from engine.model.timeutil import from_epoch, to_epoch

_TIME_FIELDS = ("timestamp", "created_at", "updated_at", "valid_at", "invalid_at", "expired_at")


def note_to_record(note: Note) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "id": note.id,
        "tenant": note.tenant,
        "content": note.content,
        "speaker": note.speaker,
        "keywords": list(note.keywords),
        "tags": list(note.tags),
        "context": note.context,
        "links": [
            {"target": x.target, "reason": x.reason, "created_at": to_epoch(x.created_at)} for x in note.links
        ],
        "metadata": note.metadata,
        "source_ids": list(note.source_ids),
        "occurrences": [to_epoch(t) for t in note.occurrences],
        "annotated_by": note.annotated_by,
        "version": note.version,
        "superseded_by": note.superseded_by,
    }
    rec.update({name: to_epoch(getattr(note, name)) for name in _TIME_FIELDS})
    return rec


def note_from_record(rec: dict[str, Any]) -> Note:
    times: dict[str, datetime | None] = {name: from_epoch(rec.get(name)) for name in _TIME_FIELDS}
    return Note(
        id=rec["id"],
        tenant=rec["tenant"],
        content=rec["content"],
        speaker=rec.get("speaker"),
        keywords=list(rec.get("keywords") or []),
        tags=list(rec.get("tags") or []),
        context=rec.get("context", ""),
        links=[
            Link(target=x["target"], reason=x["reason"], created_at=from_epoch(x["created_at"]))  # type: ignore[arg-type]
            for x in rec.get("links") or []
        ],
        metadata=dict(rec.get("metadata") or {}),
        source_ids=list(rec.get("source_ids") or []),
        occurrences=[from_epoch(t) for t in rec.get("occurrences") or []],  # type: ignore[misc]
        annotated_by=rec.get("annotated_by", "embedded"),
        version=int(rec.get("version", 1)),
        superseded_by=rec.get("superseded_by"),
        **times,  # type: ignore[arg-type]
    )


def version_to_record(v: NoteVersion) -> dict[str, Any]:
    return {
        "note_id": v.note_id,
        "version": v.version,
        "note": note_to_record(v.note),
        "embedding": encode_vector(v.embedding) if v.embedding is not None else None,
        "stage": v.stage,
        "cause": v.cause,
        "changed_at": to_epoch(v.changed_at),
        **({"reason": v.reason} if v.reason else {}),
    }


def version_from_record(rec: dict[str, Any]) -> NoteVersion:
    emb = decode_vector(rec["embedding"]) if rec.get("embedding") else None
    return NoteVersion(
        note_id=rec["note_id"],
        version=int(rec["version"]),
        note=note_from_record(rec["note"]),
        embedding=emb,
        stage=rec["stage"],
        cause=rec.get("cause"),
        changed_at=from_epoch(rec["changed_at"]),  # type: ignore[arg-type]
        reason=rec.get("reason", ""),
    )


def changes_to_records(changes: ChangeSet) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"op": "delete", "id": i} for i in changes.deletes]
    out += [{"op": "version", **version_to_record(v)} for v in changes.versions]
    out += [
        {"op": "upsert", "note": note_to_record(n), "vector": encode_vector(v)} for n, v in changes.upserts
    ]
    return out


def changes_from_records(records: list[dict[str, Any]]) -> ChangeSet:
    changes = ChangeSet()
    for rec in records:
        op = rec["op"]
        if op == "delete":
            changes.deletes.append(rec["id"])
        elif op == "version":
            changes.versions.append(version_from_record(rec))
        elif op == "upsert":
            changes.upserts.append((note_from_record(rec["note"]), decode_vector(rec["vector"])))
    return changes


def dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str)


def encode_vector(vector: np.ndarray) -> str:
    """A 1-D vector as base64 of its little-endian float32 bytes (4 bytes per value, ~5.3 as text)."""
    array = np.ascontiguousarray(vector, dtype="<f4")
    if array.ndim != 1:
        raise InputError(f"expected a 1-D vector, got shape {array.shape}", field="vector")
    return base64.b64encode(array.tobytes()).decode("ascii")


def decode_vector(text: str) -> np.ndarray:
    """Inverse of `encode_vector`: a writable float32 array."""
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError, TypeError) as exc:
        raise InputError(f"not a base64 vector: {exc}", field="vector") from exc
    if len(raw) % 4:
        raise InputError(f"vector bytes ({len(raw)}) are not a whole number of float32", field="vector")
    return np.frombuffer(bytearray(raw), dtype="<f4").astype(np.float32, copy=False)
