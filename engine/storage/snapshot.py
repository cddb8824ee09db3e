"""Parquet snapshots of one tenant: notes (with vectors) and versions, checksummed, swapped in atomically.

Layout under a tenant folder:
    snap-<seq>/notes.parquet     one row per note, typed columns, `embedding` a fixed-size float32 list
    snap-<seq>/versions.arrow    prior versions (note as JSON, embedding, stage, cause, changed_at), an
                                 Arrow IPC file the open tenant memory-maps (engine/state/history.py);
                                 older snapshots have versions.parquet instead, read whole
    snap-<seq>/lexical/          the tantivy index of those notes keyed by index slot, a derived index
    snap-<seq>/state.arrow       the running state by slot (records, hot columns, validity, backlinks;
                                 engine/state/packed.py) and state-sources.arrow: a derived file the
                                 open tenant memory-maps instead of rebuilding itself from the notes
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
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from engine.errors import ConfigError, CorruptIndex, CorruptStore, StoreError
from engine.model.changes import ChangeSet
from engine.model.records import dumps, note_from_record
from engine.state import packed
from engine.state.history import write_file as write_versions
from engine.state.lexical import LexicalIndex
from engine.state.note_table import FIELDS, decode_fields
from engine.state.tenant_state import TenantMemory, lexical_text
from engine.state.vector_index import VectorIndex
from engine.storage.fsutil import atomic_write_bytes, fsync_dir, fsync_file

SCHEMA_VERSION = 1
INDEX_FILE = "index.faiss"
log = logging.getLogger("amem")

LEXICAL = "lexical"
STATE = "state.arrow"
_BY_SLOT = "slot"
"""`derived.lexical_keys`: the lexical documents are keyed by index slot (older snapshots: by row)."""
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
    sums = dict(zip(files, _sha256_all([tmp / name for name in files]), strict=True))
    derived = {LEXICAL: _write_lexical(tmp / LEXICAL, tm), "lexical_keys": _BY_SLOT}
    state_files = packed.write(tmp / STATE, tm.pack())
    derived[STATE] = dict(zip([p.name for p in state_files], _sha256_all(state_files), strict=True))
    meta = {
        "schema_version": SCHEMA_VERSION,
        "seq": seq,
        "tenant": tm.tenant,
        "encoder": encoder,
        "dim": tm.index.dim,
        "rows": {n: t.num_rows for n, t in files.items()},
        "sha256": sums,
        "derived": derived,
    }
    tm.index.save(tmp / INDEX_FILE, position=seq)
    meta["meta_sha256"] = _meta_digest(meta)
    atomic_write_bytes(tmp / "meta.json", json.dumps(meta, indent=1).encode())
    for name in [*files, *derived[STATE]]:
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
    _rebase(final, tm)
    return SnapshotInfo(seq=seq, path=final, meta=meta)


def _rebase(final: Path, tm: TenantMemory) -> None:
    """Run on the snapshot just written: records from its state file, the lexical index on disk."""
    tm.adopt(packed.read(final / STATE))
    if tm.lexical.path is None:
        tm.adopt_lexical(LexicalIndex.working_copy(final / LEXICAL))


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
        num_notes = pq.ParquetFile(path / "notes.parquet").metadata.num_rows
        versions = _read_versions(path)
    except (OSError, pa.ArrowException) as exc:
        raise CorruptStore(f"{path}: unreadable Parquet or Arrow file ({exc})") from exc
    rows = {"notes.parquet": num_notes, _versions_name(path): versions.num_rows}
    if any(meta["rows"].get(name) != count for name, count in rows.items()):
        raise CorruptStore(f"{path / 'meta.json'}: row counts {meta['rows']} do not match the Parquet files")
    # a loaded index keeps every note's slot; its state file then brings the notes without decoding them
    adopted = _load_index(path / INDEX_FILE, tm, int(meta["seq"]), num_notes)
    ids = None
    if not (adopted and _adopt_state(path, meta, tm, num_notes)):
        notes = _read_notes(path)
        tm.apply(_changes_from_tables(notes, tm.index.dim), index_text=False)
        ids = notes.column("id").to_pylist()
    tm.adopt_lexical(_read_lexical(path, meta, tm, adopted, ids))
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


def _read_notes(path: Path) -> pa.Table:
    try:
        return pq.read_table(path / "notes.parquet")
    except (OSError, pa.ArrowException) as exc:
        raise CorruptStore(f"{path}: unreadable Parquet or Arrow file ({exc})") from exc


def _load_index(path: Path, tm: TenantMemory, seq: int, notes: int) -> bool:
    """Reuse the persisted vector index (its HNSW graph costs minutes to rebuild at 1M notes) when it
    matches this snapshot; otherwise the notes' vectors rebuild it as they are applied."""
    if not path.exists():
        return False
    try:
        index = VectorIndex.load(path, seq, config=tm.index.config, use_cuda=tm.use_cuda)
    except CorruptIndex as exc:
        log.warning("%s; rebuilding the vector index from the snapshot's vectors", exc)
        return False
    if len(index) != notes:
        log.warning("%s: %d notes for %d in the snapshot; rebuilding the index", path, len(index), notes)
        return False
    tm.adopt_index(index)
    return True


def _adopt_state(path: Path, meta: dict[str, Any], tm: TenantMemory, num_notes: int) -> bool:
    """Take the snapshot's state file when whole and in step with the adopted index (else: False, and
    the notes are read from Parquet)."""
    expected = meta.get("derived", {}).get(STATE)
    if expected is None:  # an older snapshot: the next one will carry a state file
        log.info("tenant %s: %s has no state file; reading the notes", tm.tenant, path.name)
        return False
    try:
        if _sha256_all([path / name for name in expected]) != list(expected.values()):
            raise ValueError("checksum mismatch")
        state = packed.read(path / STATE)
        if state.num_slots != tm.index.num_slots:
            raise ValueError(f"{state.num_slots} slots for {tm.index.num_slots} in the index")
        tm.adopt(state)
        if len(tm.notes) != num_notes or not all(map(tm.notes.__contains__, _some(tm.index.ids))):
            raise ValueError("notes out of step with the index")
        return True
    except (OSError, ValueError) as exc:
        log.warning("tenant %s: state file %s unusable (%s); reading the notes", tm.tenant, path / STATE, exc)
        index = tm.index  # untouched by adopt(): kept, the rest of the half-adopted state dropped
        tm.__init__(tm.tenant, index.dim, tm.use_cuda, index.config)  # type: ignore[misc]
        tm.adopt_index(index)
        return False


def _some(ids: list[str | None]) -> list[str]:
    """A sample of the index's ids (a spot check that records sit in the slots the index gives them)."""
    live = [i for i in ids[:: max(1, len(ids) // 64)] if i is not None]
    return live[:64]


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
    names = list(meta["sha256"])
    for name, digest in zip(names, _sha256_all([path / n for n in names]), strict=True):
        if digest != meta["sha256"][name]:
            raise CorruptStore(f"{path / name}: checksum mismatch (file damaged or truncated)")


def _write_lexical(folder: Path, tm: TenantMemory) -> dict[str, str]:
    """The tantivy index of the snapshot's notes keyed by slot: the live index's files when it is on
    disk (no note decoded), else built from the notes."""
    if tm.lexical.path is not None:
        tm.lexical.flush()
        shutil.copytree(tm.lexical.path, folder)
        return _tree_sums(folder)
    index = LexicalIndex(folder)
    for slot in tm.index.slot_of.values():
        visible, invalid = tm.validity_at(slot)
        index.upsert(slot, lexical_text(tm.notes.at(slot)), visible, invalid)
    index.flush()
    return _tree_sums(folder)


def _read_lexical(
    path: Path, meta: dict[str, Any], tm: TenantMemory, adopted: bool, ids: list[str] | None
) -> LexicalIndex | None:
    """The snapshot's lexical index if whole and in step with the notes; None (rebuild) otherwise."""
    folder, derived = path / LEXICAL, meta.get("derived", {})
    try:
        if derived.get(LEXICAL) is None:
            raise ValueError("absent (an older snapshot)")
        if _tree_sums(folder) != derived[LEXICAL]:
            raise ValueError("checksum mismatch")
        if derived.get("lexical_keys") == _BY_SLOT and not adopted:
            raise ValueError("keyed by the slots of a vector index that was rebuilt")
        if derived.get("lexical_keys") != _BY_SLOT and (
            ids is None or any(tm.index.slot_of.get(note_id) != row for row, note_id in enumerate(ids))
        ):
            raise ValueError("slots out of step with the notes")
        index = LexicalIndex.working_copy(folder)
        if len(index) != len(tm.notes):
            raise ValueError(f"{len(index)} documents for {len(tm.notes)} notes")
        return index
    except (OSError, ValueError) as exc:
        log.warning(
            "tenant %s: lexical index %s unusable (%s); rebuilding it from the notes", tm.tenant, folder, exc
        )
        return None


def _tree_sums(folder: Path) -> dict[str, str]:
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: no such folder")
    files = [p for p in sorted(folder.rglob("*")) if p.is_file()]
    names = [p.relative_to(folder).as_posix() for p in files]
    return {name: digest or "" for name, digest in zip(names, _sha256_all(files), strict=True)}


def _notes_table(tm: TenantMemory) -> pa.Table:
    """Columns straight from the records (no Note built: ~5x faster on a whole tenant)."""
    slots = np.fromiter(tm.index.slot_of.values(), dtype=np.int64, count=len(tm.index.slot_of))
    if not len(slots):
        empty = pa.array([], pa.list_(pa.float32(), tm.index.dim))
        return _notes_schema().empty_table().append_column("embedding", empty)
    rows = (decode_fields(tm.notes.record(int(s))) for s in slots)  # type: ignore[arg-type]
    columns = dict(zip(FIELDS, zip(*rows, strict=True), strict=True))
    us = 1e-6
    out: dict[str, list[Any]] = {name: list(columns[name]) for name in _PLAIN}
    for name in _TIMES:
        out[name] = [None if t is None else t * us for t in columns[name]]
    out["links"] = [
        dumps([{"target": a, "reason": b, "created_at": c * us} for a, b, c in x]) for x in columns["links"]
    ]
    out["metadata"] = [dumps(m) for m in columns["metadata"]]
    out["occurrences"] = [dumps([t * us for t in x]) for x in columns["occurrences"]]
    table = pa.Table.from_pydict(out, schema=_notes_schema())
    flat = pa.array(tm.index.vectors(slots).astype(np.float32).ravel(), type=pa.float32())
    return table.append_column("embedding", pa.FixedSizeListArray.from_arrays(flat, tm.index.dim))


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


def _sha256_all(paths: list[Path]) -> list[str | None]:
    """Digests of the files (None: missing), hashed on threads: hashlib lets go of the GIL, and opening a
    large tenant is mostly reading its snapshot through the hash."""
    with ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1))) as pool:
        return list(pool.map(_sha256_or_none, paths))


def _sha256_or_none(path: Path) -> str | None:
    return _sha256(path) if path.exists() else None


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
