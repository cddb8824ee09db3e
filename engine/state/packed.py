"""A tenant's whole state as a few flat arrays, in one Arrow IPC file beside each snapshot.

The snapshot's Parquet notes are the portable record; rebuilding a tenant from them costs a Note per
row (minutes at a million notes). This file is what the running state is made of, by slot: the note
records (bytes, see note_table.py), the hot columns, validity, backlinks as CSR and the source keys,
sorted. Opening it maps the file: records are read from the map when asked for, never loaded whole, and
the columns are copied once into numpy. It is a derived file: a damaged or missing one means the slow
path from the Parquet notes, as for the other derived indexes.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

_COLUMNS = (
    "timestamp", "speaker", "chars", "timely", "stance", "fixed", "links", "fallback", "created",
    "visible_from", "invalid_at",
)  # fmt: skip
_ADDED = {"fixed": np.int8, "links": np.int32, "fallback": np.int8, "created": np.int64}
"""Columns added after the first state files: a file without one reads -1 (not known) for every slot."""


def source_key(source_id: str) -> int:
    """A process-independent 63-bit key of a source id (Python's hash() changes between runs)."""
    return int.from_bytes(hashlib.blake2b(source_id.encode(), digest_size=8).digest(), "little") >> 1


class Records:
    """Read-only records by slot over an Arrow binary column (memory-mapped: a read touches one record)."""

    def __init__(self, column: pa.Array) -> None:
        column = column.cast(pa.large_binary()) if column.type != pa.large_binary() else column
        self.column = column
        offsets = np.frombuffer(column.buffers()[1], dtype=np.int64)
        self._offsets = offsets[column.offset : column.offset + len(column) + 1]
        data = column.buffers()[2]
        # Arrow exports its buffers as signed bytes ("b"): cast, so a record reads (and compares) as bytes.
        self._data = memoryview(data).cast("B") if data is not None else memoryview(b"")

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def get(self, slot: int) -> memoryview | None:
        if slot >= len(self._offsets) - 1:
            return None
        start, end = self._offsets[slot], self._offsets[slot + 1]
        return self._data[start:end] if end > start else None


@dataclass(slots=True)
class Packed:
    records: Records
    columns: dict[str, np.ndarray]
    """Slot -> value for each name in _COLUMNS (writable copies)."""
    speakers: list[str]
    backlink_offsets: np.ndarray
    """CSR: the notes linking to slot s are backlink_slots[offsets[s]:offsets[s + 1]]."""
    backlink_slots: np.ndarray
    source_keys: np.ndarray
    """Sorted `source_key` of every stored source id, int64."""
    source_slots: np.ndarray

    @property
    def num_slots(self) -> int:
        return len(self.records)


def write(path: Path, packed: Packed) -> list[Path]:
    """Two files: the slot table (one record batch, one chunk per column, so reads index straight into
    the map) and the sorted source keys. Returns their paths, for the caller to fsync."""
    links = pa.LargeListArray.from_arrays(
        pa.array(packed.backlink_offsets, pa.int64()), pa.array(packed.backlink_slots, pa.int32())
    )
    arrays = [
        packed.records.column,
        *(pa.array(packed.columns[c][: packed.num_slots]) for c in _COLUMNS),
        links,
    ]
    main = pa.record_batch(arrays, names=["record", *_COLUMNS, "backlinks"])
    keys = pa.record_batch(
        [pa.array(packed.source_keys, pa.int64()), pa.array(packed.source_slots, pa.int32())], ["key", "slot"]
    )
    meta = {b"speakers": json.dumps(packed.speakers).encode()}
    for where, batch in ((path, main.replace_schema_metadata(meta)), (_sources_path(path), keys)):
        with pa.OSFile(str(where), "wb") as sink, pa.ipc.new_file(sink, batch.schema) as out:
            out.write_batch(batch)
    return [path, _sources_path(path)]


def read(path: Path) -> Packed:
    """Map the files; ValueError when they are not whole files this module wrote."""
    try:
        main = _mapped(path)
        sources = _mapped(_sources_path(path))
        links = main.column("backlinks")
        return Packed(
            records=Records(main.column("record")),
            columns={c: _column(main, c) for c in _COLUMNS},
            speakers=list(json.loads((main.schema.metadata or {})[b"speakers"])),
            backlink_offsets=np.asarray(links.offsets.to_numpy(), dtype=np.int64),
            backlink_slots=np.asarray(links.values.to_numpy(), dtype=np.int32),
            source_keys=np.asarray(sources.column("key").to_numpy(), dtype=np.int64),
            source_slots=np.asarray(sources.column("slot").to_numpy(), dtype=np.int32),
        )
    except (OSError, KeyError, ValueError, pa.ArrowException) as exc:
        raise ValueError(f"{path}: unreadable state file ({exc})") from exc


def _column(main: pa.RecordBatch, name: str) -> np.ndarray:
    if name in _ADDED and name not in main.schema.names:
        return np.full(main.num_rows, -1, dtype=_ADDED[name])
    return main.column(name).to_numpy(zero_copy_only=False).copy()


def _mapped(path: Path) -> pa.RecordBatch:
    reader = pa.ipc.open_file(pa.memory_map(str(path)))
    if reader.num_record_batches != 1:
        raise ValueError(f"{reader.num_record_batches} record batches (expected one)")
    return reader.get_batch(0)


def _sources_path(path: Path) -> Path:
    return path.with_name(path.stem + "-sources.arrow")
