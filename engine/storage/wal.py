"""Write-ahead log of one tenant store: JSON records, group commit, torn-tail detection.

Each `append(records)` is one group: one write + one fsync, and all-or-nothing on replay. Every record
is framed with length, CRC32 and a gap-free sequence number (format: engine/walformat.py); opening an
existing log continues its numbering, and `truncate` keeps it (the header stores the base).

When a read meets damage it resynchronises on the next frame marker and decides:

* torn tail: nothing valid from a *later* group follows. A crash cut the final write, which was never
  acknowledged, so it is dropped (reported in `last_problem`, logged as a warning). Damage to an
  acknowledged final group looks the same and is treated the same; nothing can tell them apart.
* corruption: a later group follows, so acknowledged data is damaged. `replay` raises CorruptStore
  naming path and offset; `replay(strict=False)` keeps the records before it and lets the writer
  salvage: the damaged file is kept as `<name>.corrupt-<ns>` and the log is rewritten without it.

Opening never changes the file: a writer trims a torn tail (or salvages) on its first write, so
readers may open the log while the writer works. The caller holds the StoreLock to write.
A failed append (full disk, I/O error) is cut off again before StoreError is raised, and an append
to a log that was deleted or replaced behind the writer is refused rather than acknowledged.
`replay(after_seq=n)` with n below the log's base (records a truncate dropped, e.g. every snapshot
lost) raises CorruptStore instead of returning a history with a hole in it.

Records are dicts of JSON values (str keys: other keys come back as strings). Vectors go in as
`encode_vector(v)`: base64 of little-endian float32, about a third the size of a list of floats.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO

from engine.errors import CorruptStore, ReadOnlyStore, StoreError
from engine.storage.fsutil import atomic_write, copy_range, fsync_dir, write_all
from engine.storage.walformat import (
    HEADER_SIZE,
    Scan,
    WalProblem,
    decode_record,
    encode_record,
    pack_frame,
    pack_header,
    read_header,
)

__all__ = ["WalProblem", "WriteAheadLog"]

log = logging.getLogger(__name__)


class WriteAheadLog:
    """The log at `path`; missing is fine (it is created on the first append)."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self.last_problem: WalProblem | None = None
        self._mutex = threading.Lock()
        self._fd: int | None = None  # write handle: opened, and the tail repaired, on the first write
        self._closed = self._salvage_ok = self._broken = False
        self._base = self._last_seq = self._end = 0
        if self.path.exists():
            self._load()

    @property
    def last_seq(self) -> int:
        """Sequence number of the last committed record (base_seq if the log holds none)."""
        return self._last_seq

    @property
    def base_seq(self) -> int:
        return self._base

    def append(self, records: list[dict[str, Any]]) -> int:
        """Durably log `records` as one group; returns the last sequence number given out."""
        payloads = [encode_record(record, i) for i, record in enumerate(records)]
        with self._mutex:
            self._check_writable()
            if not payloads:
                return self._last_seq
            self._ensure_writer()
            first = self._last_seq + 1
            data = b"".join(pack_frame(first + i, first, len(payloads), p) for i, p in enumerate(payloads))
            self._write(data)
            self._last_seq = first + len(payloads) - 1
            return self._last_seq

    def replay(
        self, after_seq: int | None = None, *, strict: bool = True
    ) -> Iterator[tuple[int, dict[str, Any]]]:
        """(seq, record) of every committed record with seq > after_seq, in order.

        after_seq=None: whatever the log holds. An explicit after_seq below base_seq means the caller
        lacks records that a truncate already dropped: CorruptStore, or with strict=False a warning.
        """
        with self._mutex:
            self._check_open()
            if not self.path.exists():
                return
            f = _open_read(self.path)
            limit = self._end if self._fd is not None else os.fstat(f.fileno()).st_size
        with f:
            base = read_header(f, self.path)
            if after_seq is not None and after_seq < base:
                self._gap(after_seq, base, strict)
            scan = Scan(f, base, limit)
            for group in scan.groups():
                yield from (
                    (fr.seq, decode_record(fr, self.path)) for fr in group if fr.seq > (after_seq or 0)
                )
        self._finish_replay(scan.problem, strict)

    def truncate(self, upto_seq: int) -> None:
        """Drop records with seq <= upto_seq (a snapshot holds them); later ones are kept.

        upto_seq past last_seq drops everything and makes the next record upto_seq + 1, which is how a
        log is brought in line with a snapshot that is newer than it.
        """
        with self._mutex:
            self._check_writable()
            if upto_seq <= self._base:
                return
            self._ensure_writer()
            start = self._offset_after(upto_seq)
            kept = self._end - start
            with atomic_write(self.path) as out:
                out.write(pack_header(upto_seq))
                copy_range(self.path, start, self._end, out)
            self._reopen(base=upto_seq, end=HEADER_SIZE + kept)
            self._last_seq = max(self._last_seq, upto_seq)

    def close(self) -> None:
        with self._mutex:
            self._closed = True
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def __enter__(self) -> WriteAheadLog:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # --- opening and repair --------------------------------------------------------
    def _load(self) -> None:
        with _open_read(self.path) as f:
            scan = Scan(f, read_header(f, self.path), os.fstat(f.fileno()).st_size)
            for _ in scan.groups():
                pass
        self._base, self._last_seq, self._end = scan.base_seq, scan.last_seq, scan.good_end
        self.last_problem = scan.problem
        if scan.problem is not None:
            log.warning("%s: %s", self.path, scan.problem)

    def _ensure_writer(self) -> None:
        if self._fd is not None:
            return
        if self._end == 0:  # there was no log when this one was opened
            with atomic_write(self.path) as out:
                out.write(pack_header(self._base))
            self._end = HEADER_SIZE
        elif self.last_problem is not None and self.last_problem.kind == "corrupt":
            self._salvage()
        self._fd = _open_append(self.path)
        if os.fstat(self._fd).st_size > self._end:
            self._trim_tail()

    def _trim_tail(self) -> None:
        assert self._fd is not None
        try:
            os.ftruncate(self._fd, self._end)
            os.fsync(self._fd)
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot trim the torn tail: {exc.strerror or exc}") from exc
        log.info("%s: trimmed the torn tail after offset %d", self.path, self._end)

    def _salvage(self) -> None:
        # Link first, then replace: at every instant `path` is the damaged log or the good prefix.
        aside = self.path.with_name(f"{self.path.name}.corrupt-{time.time_ns()}")
        try:
            os.link(self.path, aside)
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot keep the damaged log as {aside}: {exc}") from exc
        fsync_dir(self.path.parent)
        with atomic_write(self.path) as out:
            out.write(pack_header(self._base))
            copy_range(self.path, HEADER_SIZE, self._end, out)
        log.warning(
            "%s: salvaged the records up to seq %d; the damaged log is kept as %s",
            self.path,
            self._last_seq,
            aside,
        )
        self.last_problem = None  # the log on disk is whole again

    def _reopen(self, *, base: int, end: int) -> None:
        if self._fd is not None:
            os.close(self._fd)
        self._fd = None
        self._base, self._end = base, end
        self._fd = _open_append(self.path)

    def _offset_after(self, upto_seq: int) -> int:
        with _open_read(self.path) as f:
            scan = Scan(f, read_header(f, self.path), self._end)
            for group in scan.groups():
                for frame in group:
                    if frame.seq > upto_seq:
                        return frame.offset
        return self._end

    # --- writing -------------------------------------------------------------------
    def _write(self, data: bytes) -> None:
        assert self._fd is not None
        self._check_same_file()
        try:
            write_all(self._fd, data)
            os.fsync(self._fd)
        except OSError as exc:
            detail = self._roll_back()
            raise StoreError(
                f"{self.path}: append failed ({exc.strerror or exc}); the group was not committed{detail}"
            ) from exc
        self._end += len(data)

    def _roll_back(self) -> str:
        # Cut the half-written group off now, so later appends do not land behind garbage.
        assert self._fd is not None
        try:
            os.ftruncate(self._fd, self._end)
            os.fsync(self._fd)
        except OSError as exc:
            self._broken = True
            return f"; rolling it back failed too ({exc.strerror or exc}): reopen the log to repair it"
        return ""

    def _check_same_file(self) -> None:
        # Appending to a log that was deleted or replaced behind us would acknowledge records that
        # no one will ever replay.
        assert self._fd is not None
        try:
            on_disk = os.stat(self.path)
        except FileNotFoundError:
            on_disk = None
        mine = os.fstat(self._fd)
        if on_disk is None or (on_disk.st_dev, on_disk.st_ino) != (mine.st_dev, mine.st_ino):
            raise StoreError(
                f"{self.path}: the log was removed or replaced behind this writer (another "
                "process ignoring the store lock?); refusing to append where no one will read"
            )

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"{self.path}: the log is closed")

    def _check_writable(self) -> None:
        self._check_open()
        if self.read_only:
            raise ReadOnlyStore(f"{self.path}: the log is open read-only")
        if self._broken:
            raise StoreError(f"{self.path}: an earlier append could not be rolled back; reopen the log")
        problem = self.last_problem
        if problem is not None and problem.kind == "corrupt" and not self._salvage_ok:
            raise CorruptStore(
                f"{self.path}: {problem}; replay(strict=False) first to accept losing the records after it"
            )

    def _gap(self, after_seq: int, base: int, strict: bool) -> None:
        message = (
            f"{self.path}: the log starts after seq {base} but the caller only has records up to "
            f"{after_seq}: {after_seq + 1}..{base} were truncated away (they belong in a snapshot)"
        )
        if strict:
            raise CorruptStore(message)
        log.warning("%s; continuing without them", message)

    def _finish_replay(self, problem: WalProblem | None, strict: bool) -> None:
        self.last_problem = problem
        if problem is None or problem.kind == "torn-tail":
            return
        if strict:
            raise CorruptStore(
                f"{self.path}: {problem}; replay with strict=False to keep the records before it"
            )
        self._salvage_ok = True
        log.warning("%s: %s; continuing without the records after it", self.path, problem)


def _open_read(path: Path) -> BinaryIO:
    try:
        return open(path, "rb")
    except OSError as exc:
        raise StoreError(f"{path}: cannot open the log: {exc.strerror or exc}") from exc


def _open_append(path: Path) -> int:
    try:
        return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
    except OSError as exc:
        raise StoreError(f"{path}: cannot open the log for writing: {exc.strerror or exc}") from exc
