"""Parquet snapshots of one tenant: notes (with vectors) and versions, checksummed, swapped in atomically.

Layout under a tenant folder:
    snap-<seq>/notes.parquet     one row per note, typed columns, `embedding` a fixed-size float32 list
    snap-<seq>/versions-*.arrow  prior versions (note as JSON, embedding, stage, cause, changed_at) in
                                 segments, Arrow IPC files the open tenant memory-maps (engine/state/
                                 history.py) and the next snapshot links instead of rewriting (engine/
                                 storage/versions_files.py); `meta.versions` lists them in order. Older
                                 snapshots have one versions.arrow, or versions.parquet (read whole)
    snap-<seq>/lexical/          the tantivy index of those notes keyed by index slot, a derived index
    snap-<seq>/state.arrow       the running state by slot (records, hot columns, validity, backlinks;
                                 engine/state/packed.py) and state-sources.arrow: a derived file the
                                 open tenant memory-maps instead of rebuilding itself from the notes
    snap-<seq>/index.faiss       the vector index at <seq> (engine/state/index_file.py: own CRC; a damaged
                                 or stale one is rebuilt from the notes' vectors with a logged message)
    snap-<seq>/meta.json         schema version, seq, row counts, sha256 of each file, encoder and dim,
                                 the versions segments,
                                 sha256 of the derived files (`derived`), and `meta_sha256` of the rest
                                 (older snapshots lack it)
    manifest.json                names the current snapshot

A snapshot is written to `snap-<seq>.tmp`, fsync'ed, renamed, and only then named by the manifest.
Opening tries snapshots newest first and uses the newest whose checksums hold. A derived index that is
missing or damaged does not fail the snapshot: it is rebuilt from the notes, with a warning. When the
state file and the indexes are adopted, the notes and versions files (which search does not read) may
be checked in the background (`defer`; engine/storage/checksums.py).
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from collections.abc import Collection
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from engine.errors import ConfigError, CorruptStore, StoreError
from engine.state import packed
from engine.state.lexical import LexicalIndex
from engine.state.tenant_state import TenantMemory
from engine.storage.checksums import Pending, damaged, sha256_all
from engine.storage.derived import (
    BY_SLOT,
    LEXICAL,
    STATE,
    adopt_state,
    load_index,
    read_lexical,
    write_lexical,
)
from engine.storage.fsutil import atomic_write_bytes, fsync_dir, fsync_file
from engine.storage.notes_file import NotesBase, changes_from_table, write_notes
from engine.storage.versions_files import is_segment, segments_of, write_segments

SCHEMA_VERSION = 2
_READABLE = (1, 2)
"""1: one versions file per snapshot; 2: versions segments (`meta.versions`)."""
INDEX_FILE = "index.faiss"
log = logging.getLogger("amem")

_OLD_VERSIONS = "versions.parquet"


class DamagedVersions(CorruptStore):
    """Only versions segments failed their checksums (`names`): the snapshot's notes are whole."""

    def __init__(self, message: str, names: set[str]) -> None:
        super().__init__(message)
        self.names = names


@dataclass(slots=True)
class SnapshotInfo:
    seq: int
    path: Path
    meta: dict[str, Any]
    pending: Pending | None = None
    """With `defer`: the checksums of notes.parquet and the versions segments, still being computed."""
    notes_base: NotesBase | None = None
    """Its notes file, when the tenant's records were adopted from its state file (see NotesBase)."""


def write_snapshot(
    folder: Path,
    tm: TenantMemory,
    seq: int,
    encoder: str,
    unlocked: AbstractContextManager[Any] | None = None,
    notes_base: NotesBase | None = None,
) -> SnapshotInfo:
    """Write, fsync and swap in a snapshot; on failure (a full disk) nothing of it is left behind and the
    error is a StoreError naming the folder, so the log (still whole) remains the tenant's record.

    `unlocked` is entered while the files are written: the caller's tenant lock is released there, so
    searches go on (most of a snapshot's time: 21 s at 200k notes), while the caller keeps writers out.
    What a search would otherwise change lazily is settled first (the lexical index's buffered writes),
    and the state adopts the new files only once the lock is held again. `notes_base`: the notes file the
    tenant's records were adopted from, whose rows of unwritten notes are taken over."""
    tmp = folder / f"snap-{seq:012d}.tmp"
    try:
        tm.lexical.flush()
        with unlocked or nullcontext():
            final, meta = _write_files(folder, tmp, tm, seq, encoder, notes_base)
        tm.history.rebase(segments_of(final, meta))
        _rebase(final, tm)
        return SnapshotInfo(seq, final, meta, notes_base=_notes_base(final, meta))
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise StoreError(f"{folder}: cannot write a snapshot: {exc.strerror or exc}") from exc
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _write_files(
    folder: Path, tmp: Path, tm: TenantMemory, seq: int, encoder: str, notes_base: NotesBase | None
) -> tuple[Path, dict[str, Any]]:
    """The snapshot's files, fsynced, swapped in and named by the manifest. Reads the state only, and
    nothing a concurrent search changes (no decoded-note cache)."""
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    num_notes, chunks = write_notes(tm, tmp / "notes.parquet", notes_base)
    segments = write_segments(tmp, tm.history, seq)
    written = [tmp / "notes.parquet", *(s.path for s in segments if s.sha256 is None)]
    sums = {s.path.name: s.sha256 for s in segments if s.sha256 is not None}
    sums |= {p.name: d or "" for p, d in zip(written, sha256_all(written), strict=True)}  # "": gone
    derived = {LEXICAL: write_lexical(tmp / LEXICAL, tm), "lexical_keys": BY_SLOT}
    state_files = packed.write(tmp / STATE, tm.pack())
    derived[STATE] = dict(zip([p.name for p in state_files], sha256_all(state_files), strict=True))
    meta = {
        "schema_version": SCHEMA_VERSION,
        "seq": seq,
        "tenant": tm.tenant,
        "encoder": encoder,
        "dim": tm.index.dim,
        "rows": {"notes.parquet": num_notes} | {s.path.name: s.rows for s in segments},
        "sha256": sums,
        "versions": [s.path.name for s in segments],
        "notes_chunks": chunks,
        "derived": derived,
    }
    tm.index.save(tmp / INDEX_FILE, position=seq)
    meta["meta_sha256"] = _meta_digest(meta)
    atomic_write_bytes(tmp / "meta.json", json.dumps(meta, indent=1).encode())
    for path in [*written, *(tmp / name for name in derived[STATE])]:
        fsync_file(path)
    fsync_dir(tmp)  # the linked segments' entries
    final = folder / f"snap-{seq:012d}"
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    fsync_dir(folder)
    atomic_write_bytes(
        folder / "manifest.json",
        json.dumps({"schema_version": SCHEMA_VERSION, "current": final.name, "seq": seq}).encode(),
    )
    return final, meta


def _notes_base(path: Path, meta: dict[str, Any]) -> NotesBase | None:
    chunks = meta.get("notes_chunks")
    return NotesBase(path / "notes.parquet", list(chunks)) if isinstance(chunks, list) else None


def _rebase(final: Path, tm: TenantMemory) -> None:
    """Run on the snapshot just written: records from its state file, the lexical index on disk."""
    tm.adopt(packed.read(final / STATE))
    if tm.lexical.path is None:
        tm.adopt_lexical(LexicalIndex.working_copy(final / LEXICAL, tm.scratch))


def prune_snapshots(folder: Path, keep: int = 2) -> None:
    """Keep the newest `keep` snapshots: the previous one is the fallback if the newest is damaged."""
    snaps = sorted(p for p in folder.glob("snap-*") if not p.name.endswith(".tmp"))
    for old in snaps[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    for tmp in folder.glob("snap-*.tmp"):
        shutil.rmtree(tmp, ignore_errors=True)


def snapshots_newest_first(folder: Path) -> list[Path]:
    return sorted(
        (p for p in folder.glob("snap-*") if p.is_dir() and not p.name.endswith(".tmp")), reverse=True
    )


def read_snapshot(
    path: Path, tm: TenantMemory, encoder: str, defer: bool = False, lost: Collection[str] = ()
) -> SnapshotInfo:
    """Load one snapshot into an empty TenantMemory; CorruptStore if a checksum or row count is off
    (DamagedVersions if only versions segments are off). Segments named in `lost` are left out.

    With `defer`, when the state file and the vector index are adopted (so the notes are not read), the
    checksums of the notes and versions files are left running: `SnapshotInfo.pending` gives their verdict.
    """
    meta = _read_meta(path)
    _check_meta(path, meta, tm, encoder)
    files = {path / name: digest for name, digest in meta["sha256"].items() if name not in lost}
    parquet_versions = _OLD_VERSIONS in meta["sha256"]
    try:
        num_notes = pq.ParquetFile(path / "notes.parquet").metadata.num_rows
        old_versions = pq.read_table(path / _OLD_VERSIONS) if parquet_versions else None
    except (OSError, pa.ArrowException) as exc:
        raise CorruptStore(
            Pending(files).error() or f"{path}: unreadable Parquet or Arrow file ({exc})"
        ) from exc
    if meta["rows"].get("notes.parquet") != num_notes:
        raise CorruptStore(f"{path / 'meta.json'}: row counts {meta['rows']} do not match the Parquet files")
    # a loaded index keeps every note's slot; its state file then brings the notes without decoding them
    adopted = load_index(path / INDEX_FILE, tm, int(meta["seq"]), num_notes)
    fast = adopted and adopt_state(path, meta, tm, num_notes) and not parquet_versions
    sums = Pending(files)  # started after the index is read: on a cold disk they would share its reads
    if not (fast and defer) and (failed := sums.failed()):
        names = {p.name for p in failed}
        if all(is_segment(name) for name in names):
            raise DamagedVersions(damaged(failed[0]), names)
        raise CorruptStore(damaged(failed[0]))
    ids = None
    if not fast:
        notes = _read_notes(path)
        tm.apply(changes_from_table(notes, tm.index.dim), index_text=False)
        ids = notes.column("id").to_pylist()
    tm.adopt_lexical(read_lexical(path, meta, tm, adopted, ids))
    if old_versions is None:
        tm.history.load(segments_of(path, meta, lost))  # mapped when read; checksums vouch for rows
    elif meta["rows"].get(_OLD_VERSIONS) == old_versions.num_rows:
        tm.history.load_table(old_versions)
    else:
        raise CorruptStore(f"{path / 'meta.json'}: row counts {meta['rows']} do not match the versions file")
    pending, notes_base = (sums if defer else None, _notes_base(path, meta)) if fast else (None, None)
    return SnapshotInfo(int(meta["seq"]), path, meta, pending, notes_base)


def versions_listed(path: Path) -> dict[str, int]:
    """The versions segments a snapshot lists, with their rows ({} when its meta.json is unreadable:
    the snapshot fails to load anyway)."""
    try:
        meta = _read_meta(path)
    except CorruptStore:
        return {}
    return {s.path.name: s.rows for s in segments_of(path, meta)}


def _read_notes(path: Path) -> pa.Table:
    try:
        return pq.read_table(path / "notes.parquet")
    except (OSError, pa.ArrowException) as exc:
        raise CorruptStore(f"{path}: unreadable Parquet or Arrow file ({exc})") from exc


_META_FIELDS = {"schema_version": int, "seq": int, "encoder": str, "dim": int, "rows": dict, "sha256": dict}


def _read_meta(path: Path) -> dict[str, Any]:
    """meta.json, checked against its own checksum (absent in older snapshots), its fields and its folder."""
    where = path / "meta.json"
    try:
        meta = json.loads(where.read_text())
    except (OSError, ValueError) as exc:
        raise CorruptStore(f"{where}: unreadable snapshot metadata ({exc})") from exc
    if not isinstance(meta, dict):
        raise CorruptStore(f"{where}: damaged snapshot metadata (not a JSON object)")
    expected = meta.pop("meta_sha256", None)
    if expected is not None and expected != _meta_digest(meta):
        raise CorruptStore(f"{where}: checksum mismatch (snapshot metadata damaged)")
    bad = [k for k, kind in _META_FIELDS.items() if not isinstance(meta.get(k), kind)]
    if bad or not all(isinstance(v, str) for v in meta["sha256"].values()):
        raise CorruptStore(f"{where}: damaged snapshot metadata (missing or mistyped: {bad or ['sha256']})")
    if f"snap-{meta['seq']:012d}" != path.name:
        raise CorruptStore(f"{where}: damaged snapshot metadata (seq {meta['seq']} in folder {path.name})")
    return meta


def _meta_digest(meta: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(meta, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _check_meta(path: Path, meta: dict[str, Any], tm: TenantMemory, encoder: str) -> None:
    if meta.get("schema_version") not in _READABLE:
        raise CorruptStore(f"{path}: schema version {meta.get('schema_version')} (expected {_READABLE})")
    if meta.get("dim") != tm.index.dim or meta.get("encoder") != encoder:
        raise ConfigError(
            f"{path}: store was built with encoder {meta.get('encoder')!r} ({meta.get('dim')}-d); "
            f"open it with the same encoder, not {encoder!r} ({tm.index.dim}-d)"
        )
