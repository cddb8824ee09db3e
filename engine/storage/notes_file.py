"""notes.parquet: one row per note, typed columns, written from the tenant's records and read back as notes.

Read back only when a snapshot's state file cannot be used (engine/storage/snapshot.py). One row group
per CHUNK slots that hold notes (`meta.notes_chunks` names each group's chunk, the `slot` column each
row's). A snapshot takes the rows of notes not written since the previous snapshot from that snapshot's
file, a row group at a time, and decodes only the rest: decoding every record was 22 of a 33 s snapshot
at 400k notes, and a batch of 1,000 writes ~4,000 notes (new and evolved).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from engine.model.changes import ChangeSet
from engine.model.records import dumps, note_from_record
from engine.state.record import FIELDS, decode_fields
from engine.state.tenant_state import TenantMemory

_JSON_FIELDS = {"links", "metadata", "occurrences"}


CHUNK = 8192
"""Slots per row group, converted at a time. A snapshot writes this file with the tenant's lock released,
and each whole-column step (transposing the rows, an Arrow conversion, freeing them) holds the GIL: over a
250k-note tenant at once such steps took 0.2-0.4 s each, and a search beside it waited that long."""


@dataclass(frozen=True, slots=True)
class NotesBase:
    """The notes file of the snapshot the tenant's records were last adopted from, with its row groups'
    chunks: the rows of notes not written since can be taken from it."""

    path: Path
    chunks: list[int]


def write_notes(tm: TenantMemory, path: Path, base: NotesBase | None = None) -> tuple[int, list[int]]:
    """Write the tenant's notes file; its row count and the chunk of each row group."""
    slots = np.sort(np.fromiter(tm.index.slot_of.values(), dtype=np.int64, count=len(tm.index.slot_of)))
    starts = np.flatnonzero(np.diff(slots // CHUNK, prepend=-1)).tolist()  # where each chunk's slots begin
    written = tm.notes.written(tm.index.num_slots) if base is not None else None
    old = _Old(base)
    chunks: list[int] = []
    with pq.ParquetWriter(path, _notes_schema(tm.index.dim), **_VECTORS_PLAIN) as writer:
        if not len(slots):
            writer.write_table(_notes_schema(tm.index.dim).empty_table())
        for lo, hi in zip(starts, [*starts[1:], len(slots)][: len(starts)], strict=True):
            chunks.append(int(slots[lo] // CHUNK))
            table = _group(tm, slots[lo:hi], written, old.group(chunks[-1]))
            writer.write_table(table, row_group_size=max(1, table.num_rows))
    return len(slots), chunks


_TEXT = [f for f in FIELDS if f not in ("embedding",)] + ["slot"]
_VECTORS_PLAIN: dict[str, Any] = {
    "compression": {**dict.fromkeys(_TEXT, "snappy"), "embedding": "none"},
    "use_dictionary": _TEXT,
    "write_statistics": _TEXT,
}
"""Vectors (most of the file) written plain: snappy, a dictionary and min/max statistics gain nothing
on floats and cost a third of the writer's time (3.6 -> 2.3 s at 413k notes; the file 3% larger)."""


class _Old:
    """The base's row groups by chunk."""

    def __init__(self, base: NotesBase | None) -> None:
        self._file = pq.ParquetFile(base.path) if base is not None else None
        self._groups = {chunk: i for i, chunk in enumerate(base.chunks)} if base is not None else {}

    def group(self, chunk: int) -> pa.Table | None:
        at = self._groups.get(chunk)
        return self._file.read_row_group(at) if self._file is not None and at is not None else None


def _group(tm: TenantMemory, slots: np.ndarray, written: np.ndarray | None, old: pa.Table | None) -> pa.Table:
    """One chunk's rows: the old group's rows of slots not written since, and the others decoded."""
    if old is None or written is None:
        return _chunk(tm, slots)
    old_slots = old.column("slot").to_numpy()
    kept = old.filter(pa.array(~written[old_slots]))
    fresh = _chunk(tm, slots[written[slots]])
    return pa.concat_tables([kept, fresh])  # a group holds its chunk's slots; their order is free


def _chunk(tm: TenantMemory, slots: np.ndarray) -> pa.Table:
    rows = (decode_fields(tm.notes.record(int(s))) for s in slots)  # type: ignore[arg-type]
    columns = (
        dict(zip(FIELDS, zip(*rows, strict=True), strict=True)) if len(slots) else {f: () for f in FIELDS}
    )
    us = 1e-6
    out: dict[str, Any] = {name: list(columns[name]) for name in _PLAIN}
    for name in _TIMES:
        out[name] = [None if t is None else t * us for t in columns[name]]
    out["links"] = [
        dumps([{"target": a, "reason": b, "created_at": c * us} for a, b, c in x]) for x in columns["links"]
    ]
    out["metadata"] = [dumps(m) for m in columns["metadata"]]
    out["occurrences"] = [dumps([t * us for t in x]) for x in columns["occurrences"]]
    flat = pa.array(tm.index.vectors(slots).astype(np.float32).ravel(), type=pa.float32())
    out["embedding"] = pa.FixedSizeListArray.from_arrays(flat, tm.index.dim)
    out["slot"] = pa.array(slots, pa.int64())
    return pa.Table.from_pydict(out, schema=_notes_schema(tm.index.dim))


_TIMES = ("timestamp", "created_at", "updated_at", "valid_at", "invalid_at", "expired_at")
_PLAIN = (
    "id",
    "tenant",
    "content",
    "speaker",
    "keywords",
    "tags",
    "context",
    "source_ids",
    "annotated_by",
) + (
    "version",
    "superseded_by",
)


def _notes_schema(dim: int) -> pa.Schema:
    ts = pa.float64()  # epoch seconds: exact round trip, no timezone ambiguity
    return pa.schema(
        [
            ("id", pa.string()),
            ("tenant", pa.string()),
            ("content", pa.string()),
            ("speaker", pa.string()),
            ("keywords", pa.list_(pa.string())),
            ("tags", pa.list_(pa.string())),
            ("context", pa.string()),
            ("links", pa.string()),
            ("metadata", pa.string()),
            ("source_ids", pa.list_(pa.string())),
            ("occurrences", pa.string()),
            ("annotated_by", pa.string()),
            ("version", pa.int32()),
            ("superseded_by", pa.string()),
            ("timestamp", ts),
            ("created_at", ts),
            ("updated_at", ts),
            ("valid_at", ts),
            ("invalid_at", ts),
            ("expired_at", ts),
            ("embedding", pa.list_(pa.float32(), dim)),
            ("slot", pa.int64()),
        ]
    )


def changes_from_table(notes: pa.Table, dim: int) -> ChangeSet:
    changes = ChangeSet()
    if notes.num_rows:
        vecs = notes.column("embedding").combine_chunks().flatten().to_numpy().reshape(-1, dim)
        plain = notes.drop_columns([c for c in ("embedding", "slot") if c in notes.column_names])
        for row, vec in zip(plain.to_pylist(), vecs, strict=True):
            for name in _JSON_FIELDS:
                row[name] = json.loads(row[name])
            changes.upserts.append((note_from_record(row), vec.astype(np.float32)))
    return changes
