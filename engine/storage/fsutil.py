"""Crash-safe file primitives: a file is either its old version or its new one, never half of each.

The recipe is the usual one: write a temp file in the same directory, fsync it, rename it over the
target (atomic on POSIX), then fsync the directory so the rename itself survives a power cut. A full
disk or any other OSError leaves the old file untouched, removes the temp file and raises StoreError.
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from engine.errors import StoreError

TMP_SUFFIX = ".tmp"
# Temp names look like ".manifest.json.1234.9f3a1c2e.tmp": hidden, tagged with the writer's pid.
_TMP_NAME = re.compile(r"\..+\.\d+\.[0-9a-f]{8}" + re.escape(TMP_SUFFIX))


def fsync_dir(path: Path) -> None:
    """Make renames, creations and deletions inside directory `path` durable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise StoreError(f"{path}: cannot open directory to fsync it: {exc.strerror or exc}") from exc
    try:
        os.fsync(fd)
    except OSError as exc:
        raise StoreError(f"{path}: directory fsync failed: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)


def fsync_file(path: Path) -> None:
    """fsync a file that something else (e.g. pyarrow) wrote by name."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise StoreError(f"{path}: fsync failed: {exc.strerror or exc}") from exc


def temp_path_for(path: Path) -> Path:
    """A fresh temp name next to `path` (same directory, so the final rename stays atomic)."""
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}{TMP_SUFFIX}")


@contextmanager
def atomic_write(path: Path) -> Iterator[BinaryIO]:
    """Yield a binary file; on a clean exit it atomically and durably replaces `path`.

    If the body raises, or any step fails, `path` keeps its old content (or stays absent).
    """
    path = Path(path)
    tmp = temp_path_for(path)
    try:
        with open(tmp, "xb") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except OSError as exc:
        _discard(tmp, exc)
        raise StoreError(f"{path}: atomic write failed: {exc.strerror or exc}") from exc
    except BaseException as exc:
        _discard(tmp, exc)
        raise


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Replace `path` with `data` atomically and durably (see `atomic_write`)."""
    with atomic_write(path) as out:
        out.write(data)


def write_all(fd: int, data: bytes) -> None:
    """os.write until every byte is written (a single write may be short)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def copy_range(path: Path, start: int, end: int, out: BinaryIO, chunk: int = 1 << 20) -> None:
    """Copy bytes [start, end) of file `path` into `out`."""
    try:
        with open(path, "rb") as src:
            src.seek(start)
            while start < end:
                block = src.read(min(chunk, end - start))
                if not block:
                    raise StoreError(f"{path}: the file shrank while it was being copied")
                out.write(block)
                start += len(block)
    except OSError as exc:
        raise StoreError(f"{path}: cannot copy: {exc.strerror or exc}") from exc


def remove_stale_temps(directory: Path) -> list[Path]:
    """Delete temp files that a crashed writer left in `directory`; returns what was removed.

    Only call this while holding the store's StoreLock: another live writer's temp file looks the same.
    """
    removed = []
    for entry in Path(directory).iterdir():
        if entry.is_file() and _TMP_NAME.fullmatch(entry.name):
            entry.unlink()
            removed.append(entry)
    if removed:
        fsync_dir(Path(directory))
    return removed


def _discard(tmp: Path, exc: BaseException) -> None:
    # The original failure is what the caller needs to see; a failed clean-up rides along as a note.
    try:
        tmp.unlink(missing_ok=True)
    except OSError as cleanup:
        exc.add_note(f"could not remove temp file {tmp}: {cleanup}")
