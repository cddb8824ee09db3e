"""A note as one compact record: its fields as a tuple of plain values, marshalled, then zlib level 1.

Times are integer microseconds (exact) and links (target, reason, created_at) triples, so a record holds
no class names and is ~300 bytes for a chat turn (half a pickled Note). The note table keeps one per note
and the snapshot's state file stores them as they are (see note_table.py, packed.py).
"""

from __future__ import annotations

import marshal
import pickle
import zlib
from datetime import UTC, datetime, timedelta
from typing import Any

from engine.model.note import Link, Note

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_US = timedelta(microseconds=1)
_MARSHAL, _PICKLE = b"m", b"p"


def micros(value: datetime | None) -> int | None:
    """A time as integer microseconds since the epoch (exact; None stays None)."""
    return None if value is None else (value - _EPOCH) // _US


def _time(value: int | None) -> datetime | None:
    return None if value is None else _at(value)


def _at(value: int) -> datetime:
    return _EPOCH + timedelta(microseconds=value)


FIELDS = (
    "id", "tenant", "content", "speaker", "keywords", "tags", "context", "links", "metadata", "source_ids",
    "occurrences", "annotated_by", "version", "superseded_by",
    "timestamp", "created_at", "updated_at", "valid_at", "invalid_at", "expired_at",
)  # fmt: skip
"""The record's fields in order: times (and link times, occurrences) as integer microseconds, links as
(target, reason, created_at) triples."""


def fields(note: Note) -> tuple[Any, ...]:
    return (
        note.id, note.tenant, note.content, note.speaker, note.keywords, note.tags, note.context,
        [(x.target, x.reason, micros(x.created_at)) for x in note.links], note.metadata, note.source_ids,
        [micros(t) for t in note.occurrences], str(note.annotated_by), note.version, note.superseded_by,
        *(micros(t) for t in (note.timestamp, note.created_at, note.updated_at)),
        *(micros(t) for t in (note.valid_at, note.invalid_at, note.expired_at)),
    )  # fmt: skip


def encode(note: Note) -> bytes:
    try:
        return _MARSHAL + zlib.compress(marshal.dumps(fields(note)), 1)
    except ValueError:  # metadata holding a value marshal cannot write
        return _PICKLE + zlib.compress(pickle.dumps(note, pickle.HIGHEST_PROTOCOL), 1)


def decode_fields(record: bytes | memoryview) -> tuple[Any, ...]:
    """The record's FIELDS without building a Note (snapshots write whole tenants this way)."""
    if record[:1] == _PICKLE:
        return fields(pickle.loads(zlib.decompress(record[1:])))
    out: tuple[Any, ...] = marshal.loads(zlib.decompress(record[1:]))
    return out


def decode(record: bytes | memoryview) -> Note:
    if record[:1] == _PICKLE:
        note: Note = pickle.loads(zlib.decompress(record[1:]))
        return note
    (id_, tenant, content, speaker, keywords, tags, context, links, metadata, sources, occurrences, by,
     version, superseded_by, ts, created, updated, valid, invalid, expired) = decode_fields(record)  # fmt: skip
    return Note(
        id=id_, tenant=tenant, content=content, timestamp=_at(ts), speaker=speaker,
        keywords=keywords, tags=tags, context=context,
        links=[Link(target, reason, _at(at)) for target, reason, at in links],
        metadata=metadata, source_ids=sources, occurrences=[_at(t) for t in occurrences],
        annotated_by=by, version=version, created_at=_at(created), updated_at=_at(updated),
        valid_at=_time(valid), invalid_at=_time(invalid), expired_at=_time(expired), superseded_by=superseded_by,
    )  # fmt: skip
