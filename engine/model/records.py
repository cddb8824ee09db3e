"""Notes and versions <-> plain JSON-able records, shared by the write-ahead log and snapshots."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from engine.errors import CorruptStore, InputError
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
    fields = {name: _field(name, rec.get(name, default)) for name, default in _DEFAULTS.items()}
    return Note(id=rec["id"], tenant=rec["tenant"], content=rec["content"], **fields)


def _links(value: list[dict[str, Any]] | None) -> list[Link]:
    return [
        Link(target=x["target"], reason=x["reason"], created_at=from_epoch(x["created_at"]))  # type: ignore[arg-type]
        for x in value or []
    ]


def _listed(value: list[Any] | None) -> list[Any]:
    return list(value or [])


_DEFAULTS: dict[str, Any] = {
    "speaker": None, "keywords": None, "tags": None, "context": "", "links": None, "metadata": None,
    "source_ids": None, "occurrences": None, "annotated_by": "embedded", "version": 1, "superseded_by": None,
    **dict.fromkeys(_TIME_FIELDS),
}  # fmt: skip
"""A note record's optional fields and their values when absent."""
_FROM_RECORD: dict[str, Callable[[Any], Any]] = {
    "keywords": _listed, "tags": _listed, "source_ids": _listed, "links": _links,
    "metadata": lambda v: dict(v or {}), "occurrences": lambda v: [from_epoch(t) for t in v or []],
    "version": int, **dict.fromkeys(_TIME_FIELDS, from_epoch),
}  # fmt: skip
"""A record field's value -> the note's (fields not named here are taken as they are)."""


def _field(name: str, value: Any) -> Any:
    convert = _FROM_RECORD.get(name)
    return value if convert is None else convert(value)


def _with_changes(note: Note, changed: dict[str, Any]) -> Note:
    """`note` (a private copy) with a compact record's changed fields: what `note_from_record` gives for
    the note's record updated with them, without writing the unchanged fields out and reading them back."""
    for name, value in changed.items():
        setattr(note, name, _field(name, value))
    note.__post_init__()  # the constructor's defaults, as `note_from_record` would apply them
    return note


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
    return _version(rec, note_from_record(rec["note"]), emb)


def _version(rec: dict[str, Any], note: Note, embedding: np.ndarray | None) -> NoteVersion:
    return NoteVersion(
        note_id=rec["note_id"],
        version=int(rec["version"]),
        note=note,
        embedding=embedding,
        stage=rec["stage"],
        cause=rec.get("cause"),
        changed_at=from_epoch(rec["changed_at"]),  # type: ignore[arg-type]
        reason=rec.get("reason") or "",
    )


RECORD_FORMAT = 2
"""Log records: 1 = every note and vector in full; 2 = compact, may refer to the state it applies to."""
CURRENT = "current"


class Base(Protocol):
    """The tenant state a ChangeSet applies to. A compact record names what it shares with that state
    instead of repeating it: a version that *is* the current note (and vector), an upsert as the fields
    that changed. Logging happens before applying and replay applies in log order, so at replay the
    state a record refers to is exactly the state it was written against."""

    def current_note(self, note_id: str) -> Note | None:
        """A private copy (replay changes it in place)."""

    def current_vector(self, note_id: str) -> np.ndarray | None: ...


def changes_to_records(changes: ChangeSet, base: Base | None = None) -> list[dict[str, Any]]:
    """Records of `changes`; with `base`, compact (format 2): what equals the base is referred to."""
    out: list[dict[str, Any]] = [{"op": "delete", "id": i} for i in changes.deletes]
    out += [_version_record(v, base) for v in changes.versions]
    out += [_upsert_record(n, v, base) for n, v in changes.upserts]
    return out


def _same_vector(vector: np.ndarray | None, base: Base, note_id: str) -> bool:
    current = base.current_vector(note_id)
    return vector is not None and current is not None and np.array_equal(vector, current)


def _version_record(v: NoteVersion, base: Base | None) -> dict[str, Any]:
    rec = {"op": "version", **version_to_record(v)}
    if base is not None:
        if base.current_note(v.note_id) == v.note:
            rec["note"] = CURRENT
        if _same_vector(v.embedding, base, v.note_id):
            rec["embedding"] = CURRENT
    return rec


def _upsert_record(note: Note, vector: np.ndarray, base: Base | None) -> dict[str, Any]:
    new = note_to_record(note)
    current = base.current_note(note.id) if base is not None else None
    if base is None or current is None:
        return {"op": "upsert", "note": new, "vector": encode_vector(vector)}
    old = note_to_record(current)
    changed = {k: v for k, v in new.items() if old.get(k) != v}
    vec = CURRENT if _same_vector(vector, base, note.id) else encode_vector(vector)
    return {"op": "upsert", "id": note.id, "changed": changed, "vector": vec}


def changes_from_records(
    records: list[dict[str, Any]], base: Base | None = None, skipped: list[str] | None = None
) -> ChangeSet:
    """Inverse of changes_to_records; `base` (the state before these changes) resolves references.

    A reference the base cannot resolve (a damaged snapshot lost the note) raises CorruptStore, or,
    given `skipped`, drops that one change and appends why to `skipped` (a lenient replay)."""
    changes = ChangeSet()
    for rec in records:
        op = rec["op"]
        try:
            if op == "delete":
                changes.deletes.append(rec["id"])
            elif op == "version":
                changes.versions.append(_version_from(rec, base))
            elif op == "upsert":
                changes.upserts.append(_upsert_from(rec, base))
        except CorruptStore as exc:
            if skipped is None:
                raise
            skipped.append(str(exc))
    return changes


def _resolve(base: Base | None, note_id: str) -> tuple[Note, np.ndarray | None]:
    note = base.current_note(note_id) if base is not None else None
    if base is None or note is None:
        raise CorruptStore(f"a compact log record refers to note {note_id!r}, which the state lacks")
    return note, base.current_vector(note_id)


def _version_from(rec: dict[str, Any], base: Base | None) -> NoteVersion:
    if rec["note"] != CURRENT and rec.get("embedding") != CURRENT:
        return version_from_record(rec)
    current, vector = _resolve(base, rec["note_id"])  # a copy: the version may keep it
    note = current if rec["note"] == CURRENT else note_from_record(rec["note"])
    if rec.get("embedding") == CURRENT:
        return _version(rec, note, None if vector is None else vector.copy())
    return _version(rec, note, decode_vector(rec["embedding"]) if rec.get("embedding") else None)


def _upsert_from(rec: dict[str, Any], base: Base | None) -> tuple[Note, np.ndarray]:
    if "note" in rec:
        return note_from_record(rec["note"]), decode_vector(rec["vector"])
    note, vector = _resolve(base, rec["id"])  # a copy, changed in place
    if rec["vector"] == CURRENT:
        if vector is None:
            raise CorruptStore(
                f"a compact log record refers to the vector of {rec['id']!r}, which is missing"
            )
        return _with_changes(note, rec["changed"]), vector
    return _with_changes(note, rec["changed"]), decode_vector(rec["vector"])


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
