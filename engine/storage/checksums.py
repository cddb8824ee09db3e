"""Checksums of a snapshot's files: hashed on threads at once, or in the background while a tenant serves.

Most of a big tenant's snapshot is bytes that search never reads: notes.parquet (read only when the
state file is unusable) and versions.arrow (read by history and rollback). Hashing them before the
first search was 5.7 s of the 13 s a 1M-note tenant took to reopen. `Pending` hashes them on daemon
threads instead; every call other than search waits for its verdict first (TenantStorage.verified), so
nothing reads, writes or snapshots a file before it is known whole. Search reads only files checked
before it starts: the state file and the lexical index (sha256 here) and the vector index (its CRC).
"""

from __future__ import annotations

import contextlib
import hashlib
import mmap
import os
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

_WINDOW = 64 << 20
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
    """Hashed through memory-mapped windows of _WINDOW: one `update` per window, with the GIL let go for
    all of it, so a background check rarely holds the GIL when a search wants it (at 1 MB reads it took
    it back ~9,000 times over a 1M tenant's files, and searches right after a reopen waited: p50 11 ms
    against 5). The kernel still reads the file in readahead-sized pieces, so a search's page faults do
    not queue behind 16 MB reads (which raised their cold p99 from 25 to 38 ms)."""
    try:
        h = hashlib.sha256()
        with path.open("rb") as f:
            size = os.fstat(f.fileno()).st_size
            for start in range(0, size, _WINDOW):
                length = min(_WINDOW, size - start)
                with mmap.mmap(f.fileno(), length, access=mmap.ACCESS_READ, offset=start) as window:
                    h.update(window)
        return h.hexdigest()
    except FileNotFoundError:
        return None


class Pending:
    """Files being hashed in the background, each against the digest the snapshot recorded."""

    def __init__(self, expected: dict[Path, str]) -> None:
        self._expected = expected
        self._digests = {path: _hash_later(path) for path in expected}

    def failed(self) -> list[Path]:
        """Waits for every digest; the files that are off."""
        return [path for path, want in self._expected.items() if self._digests[path].result() != want]

    def error(self) -> str | None:
        """Waits for every digest; the first file that is off, as a message naming it (None: all whole)."""
        failed = self.failed()
        return damaged(failed[0]) if failed else None


def damaged(path: Path) -> str:
    return f"{path}: checksum mismatch (file damaged or truncated)"


def _hash_later(path: Path) -> Future[str | None]:
    """A daemon thread, not an executor's: a process that exits with a check still running must not
    wait for it (executor threads are joined at exit). A small file is hashed at once (see _INLINE)."""
    digest: Future[str | None] = Future()
    if _size(path) < _INLINE:
        digest.set_result(sha256_or_none(path))
        return digest

    def run() -> None:
        _yield_to_search()
        try:
            digest.set_result(sha256_or_none(path))
        except OSError:  # unreadable counts as damaged
            digest.set_result(None)

    threading.Thread(target=run, name=f"amem-sha256-{path.name}", daemon=True).start()
    return digest


def _yield_to_search() -> None:
    """Lowest CPU priority for this thread (Linux: nice is per thread). Searches do not wait for these
    checks; at nice 0 the hash took a core from the searches answered right after a 1M reopen. An idle
    machine still runs it at full speed."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError):  # not allowed here: check at the normal priority
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
