"""The persisted vector index: one file, FAISS's own serialisation plus the slot ids, with a trailer.

    [FAISS index bytes][slot ids as JSON][manifest JSON][u64 manifest length][MAGIC]

The manifest records the log position the index reflects, the byte sizes and a CRC-32 of the body,
so a reader checks the position before reading the body and rejects a torn or damaged file with a
CorruptIndex naming it (the caller then rebuilds the index from the vectors).
"""

from __future__ import annotations

import errno
import json
import os
import struct
import zlib
from pathlib import Path

import faiss

from engine.errors import CorruptIndex

MAGIC = b"AMEMVIX1"
_TAIL = struct.Struct("<Q8s")
_BLOCK = 16 << 20


def write_index(path: Path, store: faiss.Index, ids: list[str | None], position: int) -> None:
    """Atomically (temp file, fsync, rename) write `store` and its slot ids, tagged with `position`.
    FAISS writes its part of the file itself, then the CRC is read back from it: serialising to memory
    first took 2 s and a 570 MB buffer at 428k notes, of a 4.3 s save."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        faiss.write_index(store, str(tmp))
    except RuntimeError as exc:  # FAISS reports a failed write (a full disk) so
        raise OSError(errno.EIO, f"cannot write {tmp}: {exc}") from exc
    n_index = tmp.stat().st_size
    id_bytes = json.dumps(ids).encode()
    crc, _ = _crc_and_ids(tmp, n_index, 0)
    manifest = {
        "format": 1,
        "position": position,
        "dim": store.d,
        "count": sum(i is not None for i in ids),
        "index_bytes": n_index,
        "ids_bytes": len(id_bytes),
        "crc32": zlib.crc32(id_bytes, crc),
    }
    meta = json.dumps(manifest).encode()
    with open(tmp, "ab") as f:
        for part in (id_bytes, meta, _TAIL.pack(len(meta), MAGIC)):
            f.write(part)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_manifest(path: Path) -> dict:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            if size < _TAIL.size:
                raise CorruptIndex(f"{path}: {size} bytes, too short for a vector index file")
            f.seek(size - _TAIL.size)
            meta_len, magic = _TAIL.unpack(f.read(_TAIL.size))
            if magic != MAGIC or meta_len > size - _TAIL.size:
                raise CorruptIndex(f"{path}: not a vector index file (bad trailer)")
            f.seek(size - _TAIL.size - meta_len)
            manifest = json.loads(f.read(meta_len))
    except (OSError, ValueError) as exc:
        raise CorruptIndex(f"{path}: unreadable vector index file: {exc}") from exc
    body = manifest.get("index_bytes", -1) + manifest.get("ids_bytes", -1)
    if body + meta_len + _TAIL.size != size:
        raise CorruptIndex(f"{path}: sizes in the manifest do not add up to the file's {size} bytes")
    return manifest


def read_index(path: Path, expect_position: int) -> tuple[faiss.Index, list[str | None]]:
    """The FAISS store and slot ids saved at `path`; CorruptIndex if damaged or at another position."""
    manifest = read_manifest(path)
    if manifest["position"] != expect_position:
        raise CorruptIndex(
            f"{path}: index saved at log position {manifest['position']}, expected {expect_position}"
        )
    n_index, n_ids = manifest["index_bytes"], manifest["ids_bytes"]
    crc, id_bytes = _crc_and_ids(path, n_index, n_ids)
    if crc != manifest["crc32"]:
        raise CorruptIndex(f"{path}: checksum mismatch (damaged vector index file)")
    try:  # FAISS reads its part of the file itself: no body buffer, and no copy of one (3 s at 1M notes)
        store = faiss.read_index(str(path))
        ids = json.loads(id_bytes)
    except (RuntimeError, ValueError) as exc:
        raise CorruptIndex(f"{path}: cannot decode the vector index: {exc}") from exc
    if store.ntotal != len(ids) or store.d != manifest["dim"]:
        raise CorruptIndex(f"{path}: {store.ntotal} rows for {len(ids)} slot ids")
    return store, ids


def _crc_and_ids(path: Path, n_index: int, n_ids: int) -> tuple[int, bytes]:
    """CRC-32 of the body (FAISS bytes, then slot ids) read in blocks, and the slot ids' bytes."""
    crc, left = 0, n_index
    with open(path, "rb") as f:
        while left > 0:
            block = f.read(min(left, _BLOCK))
            if not block:
                break
            crc, left = zlib.crc32(block, crc), left - len(block)
        id_bytes = f.read(n_ids)
    return zlib.crc32(id_bytes, crc), id_bytes
