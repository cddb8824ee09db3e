"""Parquet snapshots of one tenant: notes (with vectors) and versions, checksummed, swapped in atomically.

Layout under a tenant folder:
    snap-<seq>/notes.parquet     one row per note, typed columns, `embedding` a fixed-size float32 list
    snap-<seq>/versions.arrow    prior versions (note as JSON, embedding, stage, cause, changed_at), an
                                 Arrow IPC file the open tenant memory-maps (engine/state/history.py);
                                 older snapshots have versions.parquet instead, read whole
    snap-<seq>/lexical/          the tantivy index of those notes (slot = row), a derived index
    snap-<seq>/index.faiss       the vector index at <seq> (engine/state/index_file.py: own CRC; a damaged
                                 or stale one is rebuilt from the notes' vectors with a logged message)
    snap-<seq>/meta.json         schema version, seq, row counts, sha256 of each file, encoder and dim,
                                 sha256 of the derived files (`derived`), and `meta_sha256` of the rest
                                 (older snapshots lack it)
    manifest.json                names the current snapshot

A snapshot is written to `snap-<seq>.tmp`, fsync'ed, renamed, and only then named by the manifest.
Opening tries snapshots newest first and uses the newest whose checksums hold. A derived index that is
missing or damaged does not fail the snapshot: it is rebuilt from the notes, with a warning.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from engine.errors import ConfigError, CorruptIndex, CorruptStore, StoreError
from engine.model.changes import ChangeSet
from engine.model.records import dumps, note_from_record, note_to_record
from engine.state.history import write_file as write_versions
from engine.state.lexical import LexicalIndex
from engine.state.tenant_state import TenantMemory, lexical_text
from engine.state.vector_index import VectorIndex
from engine.storage.fsutil import atomic_write_bytes, fsync_dir, fsync_file

SCHEMA_VERSION = 1
INDEX_FILE = "index.faiss"
log = logging.getLogger("amem")

LEXICAL = "lexical"
VERSIONS = "versions.arrow"
_OLD_VERSIONS = "versions.parquet"
_LIST_FIELDS = {"keywords", "tags", "source_ids"}
_JSON_FIELDS = {"links", "metadata", "occurrences"}


@dataclass(slots=True)
class SnapshotInfo:
    seq: int
    path: Path
    meta: dict[str, Any]


def write_snapshot(folder: Path, tm: TenantMemory, seq: int, encoder: str) -> SnapshotInfo:
    """Write, fsync and swap in a snapshot; on failure (a full disk) nothing of it is left behind and the
    error is a StoreError naming the folder, so the log (still whole) remains the tenant's record."""
    tmp = folder / f"snap-{seq:012d}.tmp"
    try:
        return _write_snapshot(folder, tmp, tm, seq, encoder)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise StoreError(f"{folder}: cannot write a snapshot: {exc.strerror or exc}") from exc
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _write_snapshot(folder: Path, tmp: Path, tm: TenantMemory, seq: int, encoder: str) -> SnapshotInfo:
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    files = {"notes.parquet": _notes_table(tm), VERSIONS: tm.history.table()}
    pq.write_table(files["notes.parquet"], tmp / "notes.parquet")
    write_versions(files[VERSIONS], tmp / VERSIONS)
    sums = {name: _sha256(tmp / name) for name in files}
    derived = _write_lexical(tmp / LEXICAL, tm)
    meta = {
        "schema_version": SCHEMA_VERSION,
        "seq": seq,
        "tenant": tm.tenant,
        "encoder": encoder,
        "dim": tm.index.dim,
        "rows": {n: t.num_rows for n, t in files.items()},
        "sha256": sums,
        "derived": {LEXICAL: derived},
    }
    tm.index.save(tmp / INDEX_FILE, position=seq)
    meta["meta_sha256"] = _meta_digest(meta)
    atomic_write_bytes(tmp / "meta.json", json.dumps(meta, indent=1).encode())
    for name in files:
        fsync_file(tmp / name)
    final = folder / f"snap-{seq:012d}"
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    fsync_dir(folder)
    atomic_write_bytes(
        folder / "manifest.json",
        json.dumps({"schema_version": SCHEMA_VERSION, "current": final.name, "seq": seq}).encode(),
    )
    tm.history.rebase(final / VERSIONS)
    return SnapshotInfo(seq=seq, path=final, meta=meta)


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


def read_snapshot(path: Path, tm: TenantMemory, encoder: str) -> SnapshotInfo:
    """Load one snapshot into an empty TenantMemory; CorruptStore if a checksum or row count is off."""
    meta = _read_meta(path)
    _check_meta(path, meta, tm, encoder)
    try:
        notes = pq.read_table(path / "notes.parquet")
        versions = _read_versions(path)
    except (OSError, pa.ArrowException) as exc:
        raise CorruptStore(f"{path}: unreadable Parquet or Arrow file ({exc})") from exc
    rows = {"notes.parquet": notes.num_rows, _versions_name(path): versions.num_rows}
    if any(meta["rows"].get(name) != count for name, count in rows.items()):
        raise CorruptStore(f"{path / 'meta.json'}: row counts {meta['rows']} do not match the Parquet files")
    _load_index(path / INDEX_FILE, tm, int(meta["seq"]), notes.num_rows)
    # a loaded index keeps every note's slot
    tm.apply(_changes_from_tables(notes, tm.index.dim), index_text=False)
    tm.adopt_lexical(_read_lexical(path, meta, tm, notes.column("id").to_pylist()))
    if _versions_name(path) == VERSIONS:
        tm.history.load(path / VERSIONS)
    else:
        tm.history.load_table(versions)
    return SnapshotInfo(seq=int(meta["seq"]), path=path, meta=meta)


def _versions_name(path: Path) -> str:
    return VERSIONS if (path / VERSIONS).exists() or not (path / _OLD_VERSIONS).exists() else _OLD_VERSIONS


def _read_versions(path: Path) -> pa.Table:
    """The versions table (memory-mapped: only its row count is read here)."""
    if _versions_name(path) == VERSIONS:
        return pa.ipc.open_file(pa.memory_map(str(path / VERSIONS))).read_all()
    return pq.read_table(path / _OLD_VERSIONS)


def _load_index(path: Path, tm: TenantMemory, seq: int, notes: int) -> None:
    """Reuse the persisted vector index (its HNSW graph costs minutes to rebuild at 1M notes) when it
    matches this snapshot; otherwise the notes' vectors rebuild it as they are applied."""
    if not path.exists():
        return
    try:
        index = VectorIndex.load(path, seq, config=tm.index.config, use_cuda=tm.use_cuda)
    except CorruptIndex as exc:
        log.warning("%s; rebuilding the vector index from the snapshot's vectors", exc)
        return
    if len(index) != notes:
        log.warning("%s: %d notes for %d in the snapshot; rebuilding the index", path, len(index), notes)
        return
    tm.adopt_index(index)


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
    if meta.get("schema_version") != SCHEMA_VERSION:
        raise CorruptStore(f"{path}: schema version {meta.get('schema_version')} (expected {SCHEMA_VERSION})")
    if meta.get("dim") != tm.index.dim or meta.get("encoder") != encoder:
        raise ConfigError(
            f"{path}: store was built with encoder {meta.get('encoder')!r} ({meta.get('dim')}-d); "
            f"open it with the same encoder, not {encoder!r} ({tm.index.dim}-d)"
        )
    for name, expected in meta["sha256"].items():
        if not (path / name).exists() or _sha256(path / name) != expected:
            raise CorruptStore(f"{path / name}: checksum mismatch (file damaged or truncated)")


def _write_lexical(folder: Path, tm: TenantMemory) -> dict[str, str]:
    """The tantivy index of the snapshot's notes, slot = row (as `read_snapshot` will number them)."""
    index = LexicalIndex(folder)
    for row, note in enumerate(tm.notes.values()):
        visible, invalid = tm.validity(note.id)
        index.upsert(row, lexical_text(note), visible, invalid)
    index.flush()
    return _tree_sums(folder)


def _read_lexical(path: Path, meta: dict[str, Any], tm: TenantMemory, ids: list[str]) -> LexicalIndex | None:
    """The snapshot's lexical index if whole and in step with the notes; None (rebuild) otherwise."""
    folder, expected = path / LEXICAL, meta.get("derived", {}).get(LEXICAL)
    try:
        if expected is None:
            raise ValueError("absent (an older snapshot)")
        if _tree_sums(folder) != expected:
            raise ValueError("checksum mismatch")
        if any(tm.index.slot_of.get(note_id) != row for row, note_id in enumerate(ids)):
            raise ValueError("slots out of step with the notes")
        index = LexicalIndex.working_copy(folder)
        if len(index) != len(ids):
            raise ValueError(f"{len(index)} documents for {len(ids)} notes")
        return index
    except (OSError, ValueError) as exc:
        log.warning(
            "tenant %s: lexical index %s unusable (%s); rebuilding it from the notes", tm.tenant, folder, exc
        )
        return None


def _tree_sums(folder: Path) -> dict[str, str]:
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: no such folder")
    return {p.relative_to(folder).as_posix(): _sha256(p) for p in sorted(folder.rglob("*")) if p.is_file()}


def _notes_table(tm: TenantMemory) -> pa.Table:
    rows = [note_to_record(n) for n in tm.notes.values()]
    vecs = np.stack([tm.vector(n.id) for n in tm.notes.values()]) if rows else np.zeros((0, tm.index.dim))
    for row in rows:
        for name in _JSON_FIELDS:
            row[name] = dumps(row[name])
    table = pa.Table.from_pylist(rows, schema=_notes_schema()) if rows else _notes_schema().empty_table()
    flat = pa.array(vecs.astype(np.float32).ravel(), type=pa.float32())
    return table.append_column("embedding", pa.FixedSizeListArray.from_arrays(flat, tm.index.dim))


def _notes_schema() -> pa.Schema:
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
        ]
    )


def _changes_from_tables(notes: pa.Table, dim: int) -> ChangeSet:
    changes = ChangeSet()
    if notes.num_rows:
        vecs = notes.column("embedding").combine_chunks().flatten().to_numpy().reshape(-1, dim)
        for row, vec in zip(notes.drop_columns(["embedding"]).to_pylist(), vecs, strict=True):
            for name in _JSON_FIELDS:
                row[name] = json.loads(row[name])
            changes.upserts.append((note_from_record(row), vec.astype(np.float32)))
    return changes


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
