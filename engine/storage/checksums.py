"""Checksums of a snapshot's files: hashed on threads at once, or in the background while a tenant serves.

Most of a big tenant's snapshot is bytes that search never reads: notes.parquet (read only when the
state file is unusable) and versions.arrow (read by history and rollback). Hashing them before the
first search was 5.7 s of the 13 s a 1M-note tenant took to reopen. `Pending` hashes them on daemon
threads instead; every call other than search waits for its verdict first (TenantStorage.verified), so
nothing reads, writes or snapshots a file before it is known whole. Search reads only files checked
before it starts: the state file and the lexical index (sha256 here) and the vector index (its CRC).
"""

from __future__ import annotations

import hashlib
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

_BLOCK = 1 << 20
_INLINE = 1 << 20
"""Bytes below which files are hashed on the calling thread (~2 ms at most): starting hash threads cost
more than hashing a small tenant's snapshot (bench.tenants, docs/scale.md round 7)."""


def sha256_all(paths: list[Path]) -> list[str | None]:
    """Digests of the files (None: missing), hashed on threads: hashlib lets go of the GIL, and opening a
    large tenant is mostly reading its snapshot through the hash."""
    if len(paths) < 2 or sum(_size(p) for p in paths) < _INLINE:
        return [sha256_or_none(p) for p in paths]
    with ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1))) as pool:
        return list(pool.map(sha256_or_none, paths))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def sha256_or_none(path: Path) -> str | None:
    try:
        h = hashlib.sha256()
        with path.open("rb") as f:
            for block in iter(lambda: f.read(_BLOCK), b""):
                h.update(block)
        return h.hexdigest()
    except FileNotFoundError:
        return None


class Pending:
    """Files being hashed in the background, each against the digest the snapshot recorded."""

    def __init__(self, expected: dict[Path, str]) -> None:
        self._expected = expected
        self._digests = {path: _hash_later(path) for path in expected}

    def error(self) -> str | None:
        """Waits for every digest; the first file that is off, as a message naming it (None: all whole)."""
        for path, want in self._expected.items():
            if self._digests[path].result() != want:
                return f"{path}: checksum mismatch (file damaged or truncated)"
        return None


def _hash_later(path: Path) -> Future[str | None]:
    """A daemon thread, not an executor's: a process that exits with a check still running must not
    wait for it (executor threads are joined at exit). A small file is hashed at once (see _INLINE)."""
    digest: Future[str | None] = Future()
    if _size(path) < _INLINE:
        digest.set_result(sha256_or_none(path))
        return digest

    def run() -> None:
        try:
            digest.set_result(sha256_or_none(path))
        except OSError:  # unreadable counts as damaged
            digest.set_result(None)

    threading.Thread(target=run, name=f"amem-sha256-{path.name}", daemon=True).start()
    return digest
