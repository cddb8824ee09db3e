"""The persisted vector index: one file, FAISS's own serialisation plus the slot ids, with a trailer.

    [FAISS index bytes][slot ids as JSON][manifest JSON][u64 manifest length][MAGIC]

The manifest records the log position the index reflects, the byte sizes and a CRC-32 of the body,
so a reader checks the position before reading the body and rejects a torn or damaged file with a
CorruptIndex naming it (the caller then rebuilds the index from the vectors).
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import faiss
import numpy as np

from engine.errors import CorruptIndex

MAGIC = b"AMEMVIX1"
_TAIL = struct.Struct("<Q8s")


def write_index(path: Path, store: faiss.Index, ids: list[str | None], position: int) -> None:
    """Atomically (temp file, fsync, rename) write `store` and its slot ids, tagged with `position`."""
    body = faiss.serialize_index(store)
    id_bytes = json.dumps(ids).encode()
    crc = zlib.crc32(id_bytes, zlib.crc32(body.data))
    manifest = {
        "format": 1,
        "position": position,
        "dim": store.d,
        "count": sum(i is not None for i in ids),
        "index_bytes": len(body),
        "ids_bytes": len(id_bytes),
        "crc32": crc,
    }
    meta = json.dumps(manifest).encode()
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        for part in (body.data, id_bytes, meta, _TAIL.pack(len(meta), MAGIC)):
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
    with open(path, "rb") as f:
        body = np.fromfile(f, dtype=np.uint8, count=n_index)
        id_bytes = f.read(n_ids)
    # The CRC runs beside the decode (both let go of the GIL: ~1 s of a 1M tenant's reopen); a decoded
    # index is used only once the CRC holds, and FAISS reports bad input as errors, not crashes.
    with ThreadPoolExecutor(max_workers=1) as pool:
        crc = pool.submit(lambda: zlib.crc32(id_bytes, zlib.crc32(body.data)))
        try:
            store, ids, problem = faiss.deserialize_index(body), json.loads(id_bytes), None
        except (RuntimeError, ValueError) as exc:
            problem = exc
        if crc.result() != manifest["crc32"]:
            raise CorruptIndex(f"{path}: checksum mismatch (damaged vector index file)")
    if problem is not None:
        raise CorruptIndex(f"{path}: cannot decode the vector index: {problem}") from problem
    if store.ntotal != len(ids) or store.d != manifest["dim"]:
        raise CorruptIndex(f"{path}: {store.ntotal} rows for {len(ids)} slot ids")
    return store, ids
