"""Prior versions of one tenant's notes.

Versions read from a snapshot stay in their Arrow table (compact, columnar) and become NoteVersion
objects only when a note's history is asked for; versions made since are kept as objects. Opening a
tenant therefore costs nothing per version, and a recall service holds history at its on-disk size.
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
    ]
)


class History:
    def __init__(self) -> None:
        self._live: defaultdict[str, list[NoteVersion]] = defaultdict(list)
        self._stored = SCHEMA.empty_table()
        self._rows: dict[str, list[int]] | None = None
        self._dropped: set[str] = set()

    def load(self, table: pa.Table) -> None:
        """Take the versions of a snapshot (before any live version exists)."""
        self._stored, self._rows = table, None

    def append(self, version: NoteVersion) -> None:
        self._live[version.note_id].append(version)

    def drop(self, note_id: str) -> None:
        """Forget every version of a deleted note."""
        self._live.pop(note_id, None)
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
        return self._stored.num_rows - dropped + sum(len(v) for v in self._live.values())

    def table(self) -> pa.Table:
        """Every version, as a snapshot stores them."""
        stored = self._stored
        if self._dropped:
            keep = pc.invert(pc.is_in(stored.column("note_id"), pa.array(sorted(self._dropped))))
            stored = stored.filter(keep)
        rows = [version_to_record(v) for vs in self._live.values() for v in vs]
        for row in rows:
            row["note"] = dumps(row["note"])
        live = pa.Table.from_pylist(rows, schema=SCHEMA) if rows else SCHEMA.empty_table()
        return pa.concat_tables([stored.cast(SCHEMA), live])

    def _row_index(self) -> dict[str, list[int]]:
        if self._rows is None:
            index: dict[str, list[int]] = defaultdict(list)
            for row, note_id in enumerate(self._stored.column("note_id").to_pylist()):
                index[note_id].append(row)
            self._rows = index
        return self._rows


def _from_row(row: dict[str, object]) -> NoteVersion:
    row["note"] = json.loads(row["note"])  # type: ignore[arg-type]
    return version_from_record(row)
