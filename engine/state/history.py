"""Prior versions of one tenant's notes, kept on disk and read when a note's history is asked for.

Versions outnumber notes (every evolution, supersession and merge keeps one: about three per note on
chat) and each is a whole note plus its vector, so held in RAM they were most of a tenant's memory.
Here they live in Arrow IPC files, memory-mapped: the snapshot's versions segments (the base, `Segment`;
a segment never changes once written, so snapshots share them: engine/storage/versions_files.py) and one
spill file per `SEAL_EVERY` versions made since. RAM holds, per stored version, a 16-byte entry of a
sorted key index (hash of the note id -> row); a lookup is a binary search per file, then the rows are
read from the map. Versions made since the last seal are kept as objects until the next seal.

After a snapshot is written, `rebase` takes its segments and drops the spill files; a purge (a deleted
note's versions) makes the snapshot write every version into one new segment, which is how they leave
the disk. Spill files go under `scratch` (a stored tenant's
own scratch folder, on the store's disk) or, without one, the system's temp folder.
"""

from __future__ import annotations

import json
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
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


@dataclass(frozen=True, slots=True)
class Segment:
    """One versions file of a snapshot: its rows and the sha256 its snapshot recorded (None: not known)."""

    path: Path
    rows: int
    sha256: str | None = None


SEAL_EVERY = 4096
"""Live versions gathered before they are sealed into a spill file (one file per ~4 batches)."""


@dataclass(slots=True)
class _Mapped:
    """One memory-mapped versions file and its key index."""

    table: pa.Table
    keys: np.ndarray
    """`_key` of each row's note id, sorted."""
    rows: np.ndarray
    """Row of each sorted key."""
    prefix: bool
    """Keys are id prefixes (every id has _PREFIX bytes), else Python's hash."""

    @classmethod
    def open(cls, path: Path) -> _Mapped:
        table = read_file(path)
        keys, prefix = _keys(table.column("note_id"))
        order = np.argsort(keys, kind="stable")
        return cls(table, keys[order], order, prefix)

    def rows_of(self, note_id: str) -> np.ndarray:
        key = _key(note_id, self.prefix)
        lo, hi = np.searchsorted(self.keys, key, "left"), np.searchsorted(self.keys, key, "right")
        return np.sort(self.rows[lo:hi])


_PREFIX = 16
_MIX = np.uint64(0x9E3779B97F4A7C15)


def _keys(ids: pa.ChunkedArray) -> tuple[np.ndarray, bool]:
    """Row keys, computed on the column's bytes without a Python string per row (note ids are hex
    digests and uuids: their first 16 bytes are as good as a hash; a clash only costs a compared row)."""
    column = ids.combine_chunks().cast(pa.large_string()) if len(ids) else pa.array([], pa.large_string())
    offsets = np.frombuffer(column.buffers()[1], np.int64)[column.offset : column.offset + len(column) + 1]
    if len(column) and column.null_count == 0 and int(np.diff(offsets).min()) >= _PREFIX:
        data = np.frombuffer(column.buffers()[2], np.uint8)
        heads = data[offsets[:-1, None] + np.arange(_PREFIX)].view(np.uint64)
        return (heads[:, 0] ^ (heads[:, 1] * _MIX)).view(np.int64), True
    return np.fromiter((hash(i) for i in column.to_pylist()), np.int64, len(column)), False


def _key(note_id: str, prefix: bool) -> int:
    raw = note_id.encode()
    if not prefix or len(raw) < _PREFIX:
        return hash(note_id) if not prefix else -1  # a short id is in no prefix-keyed file
    a, b = int.from_bytes(raw[:8], "little"), int.from_bytes(raw[8:16], "little")
    key = a ^ ((b * int(_MIX)) & (2**64 - 1))
    return key - 2**64 if key >= 2**63 else key


class History:
    def __init__(self, scratch: Path | None = None) -> None:
        self.scratch = scratch
        self._live: defaultdict[str, list[NoteVersion]] = defaultdict(list)
        self._num_live = 0
        self._files: list[_Mapped] = []
        """The spill files, mapped."""
        self.segments: list[Segment] = []
        """The snapshot's versions files, oldest first; each is mapped on its first read (cold: 9 s at 1M)."""
        self._by_name: dict[str, _Mapped] = {}
        self._spill: tempfile.TemporaryDirectory[str] | None = None
        self._dropped: set[str] = set()

    def load(self, segments: list[Segment]) -> None:
        """Take a snapshot's versions files (before any live version exists), mapped when first read."""
        self._files, self.segments, self._by_name = [], list(segments), {}

    def load_table(self, table: pa.Table) -> None:
        """Take the versions of an older snapshot (Parquet, read whole): spilled to disk at once."""
        if table.num_rows:
            self._files = [self._write_spill(_conform(table))]

    def rebase(self, segments: list[Segment]) -> None:
        """A snapshot holding every version so far was written as `segments`: take them, drop the spill.
        A segment it shares with the previous snapshot (same name: the same file, linked) stays mapped."""
        kept = {s.path.name: self._by_name[s.path.name] for s in segments if s.path.name in self._by_name}
        self._files, self.segments, self._by_name, self._dropped = [], list(segments), kept, set()
        self._live.clear()
        self._num_live = 0
        if self._spill is not None:
            self._spill.cleanup()
            self._spill = None

    def append(self, version: NoteVersion, seal: bool = True) -> None:
        """`seal=False`: the caller seals (`seal`) later, with the tenant's lock released (a seal writes
        a spill file: 0.25 s for 4,096 versions, most of what applying a batch then took)."""
        self._live[version.note_id].append(version)
        self._num_live += 1
        if seal:
            self.seal()

    def seal(self) -> None:
        """Write the live versions to a spill file once SEAL_EVERY of them are gathered."""
        if self._num_live >= SEAL_EVERY:
            self._files.append(self._write_spill(_to_table([v for vs in self._live.values() for v in vs])))
            self._live.clear()
            self._num_live = 0

    def _write_spill(self, table: pa.Table) -> _Mapped:
        if self._spill is None:
            self._spill = tempfile.TemporaryDirectory(
                prefix="amem-history-", dir=self.scratch, ignore_cleanup_errors=True
            )
        path = Path(self._spill.name) / f"chunk-{len(self._files):06d}.arrow"
        write_file(table, path)
        return _Mapped.open(path)

    def _mapped(self) -> list[_Mapped]:
        for segment in self.segments:
            if segment.path.name not in self._by_name:
                self._by_name[segment.path.name] = _Mapped.open(segment.path)
        return [self._by_name[s.path.name] for s in self.segments] + self._files

    def drop(self, note_id: str) -> None:
        """Forget every version of a deleted note (gone from disk at the next snapshot's `rebase`)."""
        self._num_live -= len(self._live.pop(note_id, []))
        self._dropped.add(note_id)

    def of(self, note_id: str) -> list[NoteVersion]:
        """Oldest first."""
        stored = []
        if note_id not in self._dropped:
            for mapped in self._mapped():
                rows = mapped.rows_of(note_id)
                if len(rows):
                    found = mapped.table.take(pa.array(rows)).to_pylist()
                    stored += [_from_row(r) for r in found if r["note_id"] == note_id]
        return stored + list(self._live.get(note_id, []))

    def __contains__(self, note_id: str) -> bool:
        return bool(self.of(note_id))

    def __len__(self) -> int:
        """Versions kept: row counts of the segments (not mapped for it), the spill files and the live."""
        if self._dropped:  # a purge not yet snapshotted (rare): count what a snapshot would keep
            return self.table().num_rows
        base = sum(s.rows for s in self.segments)
        return base + sum(m.table.num_rows for m in self._files) + self._num_live

    @property
    def purged(self) -> bool:
        """A deleted note's versions are still in the segments: the next snapshot rewrites them all."""
        return bool(self._dropped)

    def table(self) -> pa.Table:
        """Every version, as a snapshot stores them."""
        return self._without_dropped([m.table for m in self._mapped()])

    def new_table(self) -> pa.Table:
        """The versions made since the snapshot's segments (the spill files and the live ones)."""
        return self._without_dropped([m.table for m in self._files])

    def _without_dropped(self, tables: list[pa.Table]) -> pa.Table:
        stored = pa.concat_tables([SCHEMA.empty_table(), *tables])
        if self._dropped:
            stored = stored.filter(
                pc.invert(pc.is_in(stored.column("note_id"), pa.array(sorted(self._dropped))))
            )
        return pa.concat_tables([stored, _to_table([v for vs in self._live.values() for v in vs])])

    def close(self) -> None:
        self._files, self.segments, self._by_name = [], [], {}
        if self._spill is not None:
            self._spill.cleanup()
            self._spill = None


def write_file(table: pa.Table, path: Path) -> None:
    """A versions table as an uncompressed Arrow IPC file (memory-mappable)."""
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, SCHEMA) as writer:
        writer.write_table(table.cast(SCHEMA), max_chunksize=65536)


def read_file(path: Path) -> pa.Table:
    """A versions file, memory-mapped (the table's buffers keep the map)."""
    return _conform(pa.ipc.open_file(pa.memory_map(str(path))).read_all())


def _conform(table: pa.Table) -> pa.Table:
    if "reason" not in table.column_names:  # snapshots written before reasons were kept
        table = table.append_column("reason", pa.nulls(table.num_rows, pa.string()))
    return table.select(SCHEMA.names).cast(SCHEMA)


def _to_table(versions: list[NoteVersion]) -> pa.Table:
    rows = [version_to_record(v) for v in versions]
    for row in rows:
        row["note"] = dumps(row["note"])
    return pa.Table.from_pylist(rows, schema=SCHEMA) if rows else SCHEMA.empty_table()


def _from_row(row: dict[str, object]) -> NoteVersion:
    row["note"] = json.loads(row["note"])  # type: ignore[arg-type]
    return version_from_record(row)
