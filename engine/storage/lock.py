"""One writer per store: an exclusive, non-blocking flock on a lock file.

Why flock: the kernel drops the lock when the holder's process dies, however it dies (kill -9,
OOM, power), so a crash never leaves a stale lock behind. flock locks belong to an open file
description, so a second `StoreLock` on the same path conflicts even inside the same process.
Readers never take the lock. The lock file is never deleted: unlinking it while another process is
about to lock it would let two writers each lock a different inode.

The holder writes its pid into the file, so the loser's StoreLocked can say who holds the store.
flock is local to one machine; over NFS use one host per store.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
from pathlib import Path
from types import TracebackType

from engine.errors import ReadOnlyStore, StoreError, StoreLocked

log = logging.getLogger(__name__)


class StoreLock:
    """Exclusive writer lock on `path` (a file; created if missing, its directory must exist)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._fd: int | None = None

    @property
    def is_held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> StoreLock:
        """Take the lock or raise StoreLocked at once (never waits)."""
        if self._fd is not None:
            raise StoreLocked(f"{self.path}: this StoreLock already holds the lock")
        fd = self._open()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            pid = _read_pid(fd)
            os.close(fd)
            held_by = f"process {pid}" if pid is not None else "another writer"
            raise StoreLocked(
                f"{self.path}: the store is locked by {held_by}; "
                "only one writer at a time (readers need no lock)"
            ) from exc
        except OSError as exc:
            os.close(fd)
            raise StoreError(f"{self.path}: cannot lock: {exc.strerror or exc}") from exc
        self._fd = fd
        self._record_pid()
        return self

    def release(self) -> None:
        """Give the lock up; releasing a lock that is not held does nothing."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        # Closing the last descriptor drops the flock; the stale pid left in the file is harmless
        # because it is only read when someone holds the lock (and has just written theirs).
        os.close(fd)

    def __enter__(self) -> StoreLock:
        return self.acquire()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()

    def _open(self) -> int:
        try:
            return os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
                raise ReadOnlyStore(
                    f"{self.path}: cannot open the lock file for writing "
                    f"({exc.strerror}); open the store read-only"
                ) from exc
            raise StoreError(f"{self.path}: cannot open the lock file: {exc.strerror or exc}") from exc

    def _record_pid(self) -> None:
        assert self._fd is not None
        try:
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, f"{os.getpid()}\n".encode(), 0)
        except OSError as exc:
            # The pid is only a hint for other writers' error messages; a full disk must not stop
            # the holder from serving, so this is reported, not raised.
            log.warning("%s: lock taken but pid not recorded: %s", self.path, exc)


def holder_pid(path: Path) -> int | None:
    """The pid recorded by the last holder of the lock file at `path` (the lock may be free)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        return _read_pid(fd)
    finally:
        os.close(fd)


def _read_pid(fd: int) -> int | None:
    text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    return int(text) if text.isdigit() else None
