"""Prior versions of one tenant's notes.

Versions read from a snapshot stay in their Arrow table (compact, columnar) and become NoteVersion
objects only when a note's history is asked for. Versions made since are kept as objects only until
`SEAL_EVERY` of them gather; then they are encoded (the snapshot's record form) and appended to the
Arrow table as one more chunk. Opening a tenant costs nothing per version, and a growing tenant holds
history near its on-disk size instead of a Note copy and a vector object per version.
"""

from __future__ import annotations

import json
from collections import defaultdict

import pyarrow as pa
import pyarrow.compute as pc

from engine.model.note import NoteVersion
from engine.model.records import dumps, version_from_record, version_to_record

SCHEMA = pa.schema(
    [
        ("note_id", pa.string()),
        ("version", pa.int32()),
        ("note", pa.string()),
        ("embedding", pa.string()),
        ("stage", pa.string()),
        ("cause", pa.string()),
        ("changed_at", pa.float64()),
        ("reason", pa.string()),
    ]
)


SEAL_EVERY = 4096
"""Live versions gathered before they are sealed into an Arrow chunk (one chunk per ~4 batches)."""


class History:
    def __init__(self) -> None:
        self._live: defaultdict[str, list[NoteVersion]] = defaultdict(list)
        self._num_live = 0
        self._stored = SCHEMA.empty_table()
        self._rows: defaultdict[str, list[int]] | None = None
        self._dropped: set[str] = set()

    def load(self, table: pa.Table) -> None:
        """Take the versions of a snapshot (before any live version exists)."""
        if "reason" not in table.column_names:  # snapshots written before reasons were kept
            table = table.append_column("reason", pa.nulls(table.num_rows, pa.string()))
        self._stored, self._rows = table.select(SCHEMA.names).cast(SCHEMA), None

    def append(self, version: NoteVersion) -> None:
        self._live[version.note_id].append(version)
        self._num_live += 1
        if self._num_live >= SEAL_EVERY:
            self._seal()

    def _seal(self) -> None:
        """Move the live versions into the Arrow table, indexing only the new rows."""
        chunk = _to_table([v for vs in self._live.values() for v in vs])
        index, first = self._row_index(), self._stored.num_rows
        for row, note_id in enumerate(chunk.column("note_id").to_pylist()):
            index[note_id].append(first + row)
        self._stored = pa.concat_tables([self._stored, chunk])
        self._live.clear()
        self._num_live = 0

    def drop(self, note_id: str) -> None:
        """Forget every version of a deleted note."""
        self._num_live -= len(self._live.pop(note_id, []))
        if note_id in self._row_index():
            self._dropped.add(note_id)

    def of(self, note_id: str) -> list[NoteVersion]:
        """Oldest first."""
        rows = [] if note_id in self._dropped else self._row_index().get(note_id, [])
        stored = [_from_row(r) for r in self._stored.take(rows).to_pylist()] if rows else []
        return stored + list(self._live.get(note_id, []))

    def __contains__(self, note_id: str) -> bool:
        return bool(self.of(note_id))

    def __len__(self) -> int:
        dropped = sum(len(self._row_index()[i]) for i in self._dropped)
        return self._stored.num_rows - dropped + self._num_live

    def table(self) -> pa.Table:
        """Every version, as a snapshot stores them."""
        stored = self._stored
        if self._dropped:
            keep = pc.invert(pc.is_in(stored.column("note_id"), pa.array(sorted(self._dropped))))
            stored = stored.filter(keep)
        live = _to_table([v for vs in self._live.values() for v in vs])
        return pa.concat_tables([stored, live])

    def _row_index(self) -> defaultdict[str, list[int]]:
        if self._rows is None:
            index: defaultdict[str, list[int]] = defaultdict(list)
            for row, note_id in enumerate(self._stored.column("note_id").to_pylist()):
                index[note_id].append(row)
            self._rows = index
        return self._rows


def _to_table(versions: list[NoteVersion]) -> pa.Table:
    rows = [version_to_record(v) for v in versions]
    for row in rows:
        row["note"] = dumps(row["note"])
    return pa.Table.from_pylist(rows, schema=SCHEMA) if rows else SCHEMA.empty_table()


def _from_row(row: dict[str, object]) -> NoteVersion:
    row["note"] = json.loads(row["note"])  # type: ignore[arg-type]
    return version_from_record(row)
