"""A snapshot's versions as segments that snapshots share.

Versions never change once written, and they are most of a big tenant's snapshot (3.0 of 4.3 GB at 400k
notes), so rewriting all of them at every snapshot cost most of its time. A snapshot now links the
previous one's segments into its folder (a hard link: no bytes copied; a copy where the file system has
none) and writes only the versions made since, as one new segment. Past MAX_SEGMENTS the two neighbouring
segments with the fewest rows together are merged into one (size-tiered: a version is rewritten a few
times over a tenant's life, not at every snapshot). A purge (a deleted note's versions must leave the
disk) writes every version into one segment.

A linked segment is one file for both kept snapshots, so damage to it is not repaired by falling back to
the older one: engine/storage/tenant_store.py then opens the newest snapshot without it and reports the
versions lost (a segment holds prior versions only; the notes themselves are in notes.parquet and the
state file). A segment only the newest snapshot holds is recovered as before, from the older one and
the log.
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Collection
from pathlib import Path
from typing import Any

import pyarrow as pa

from engine.state.history import History, Segment, read_file, write_file

PREFIX = "versions-"
LEGACY = "versions.arrow"
"""The one versions file of a snapshot written before segments (schema version 1)."""
MAX_SEGMENTS = 8


def is_segment(name: str) -> bool:
    return name == LEGACY or (name.startswith(PREFIX) and name.endswith(".arrow"))


def write_segments(folder: Path, history: History, seq: int) -> list[Segment]:
    """The versions of a snapshot being written to `folder`, oldest first; new ones carry no digest."""
    if history.purged:
        return _nonempty([_write(folder, history.table(), seq)])
    segments = [_link(s, folder, seq) for s in history.segments]
    segments += _nonempty([_write(folder, history.new_table(), seq)])
    while len(segments) > MAX_SEGMENTS:
        segments = _merge_smallest(folder, segments, seq)
    return segments


def segments_of(path: Path, meta: dict[str, Any], lost: Collection[str] = ()) -> list[Segment]:
    """The segments a snapshot's meta.json lists (one, `versions.arrow`, in an older snapshot), less `lost`."""
    names = meta.get("versions", [LEGACY] if LEGACY in meta["sha256"] else [])
    return [
        Segment(path / name, int(meta["rows"].get(name, 0)), meta["sha256"].get(name))
        for name in names
        if name not in lost
    ]


def _name(seq: int) -> str:
    """Unique even when a purge rewrites the snapshot of the same seq."""
    return f"{PREFIX}{seq:012d}-{secrets.token_hex(4)}.arrow"


def _write(folder: Path, table: pa.Table, seq: int) -> Segment:
    path = folder / _name(seq)
    if table.num_rows:
        write_file(table, path)
    return Segment(path, table.num_rows)


def _nonempty(segments: list[Segment]) -> list[Segment]:
    return [s for s in segments if s.rows]


def _link(segment: Segment, folder: Path, seq: int) -> Segment:
    path = folder / (segment.path.name if segment.path.name != LEGACY else _name(seq))
    try:
        os.link(segment.path, path)
    except OSError:  # no hard links here (or across devices): the bytes are copied, same digest
        shutil.copyfile(segment.path, path)
    return Segment(path, segment.rows, segment.sha256)


def _merge_smallest(folder: Path, segments: list[Segment], seq: int) -> list[Segment]:
    at = min(range(len(segments) - 1), key=lambda i: segments[i].rows + segments[i + 1].rows)
    pair = segments[at : at + 2]
    tables = [read_file(s.path) for s in pair]
    merged = _write(folder, pa.concat_tables(tables), seq)
    for s in pair:
        s.path.unlink()
    return [*segments[:at], merged, *segments[at + 2 :]]
