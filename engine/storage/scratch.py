"""Working folders of the processes that have a tenant open: `<tenant>/scratch/<pid>-<random>/`.

What goes there: versions spilled between snapshots and the lexical index's working copy (hard links to
the snapshot's files, which only work on the same file system). They used to go to the system's temp
folder, where a killed process left them for good and a tmpfs `/tmp` held them in RAM (GBs of spills
at 1M notes).

Each open tenant, writer or reader, owns one folder and holds an flock on its `LOCK` file for as long
as it is open; the kernel drops the lock when the process dies, however it dies. Every open first
clears the folders whose lock it can take (their owner is gone). A folder seen before its owner has
locked it (the moment between making it and locking it) is left alone unless it is older than
`UNLOCKED_GRACE_S`. A reader that may not write in the store works in the system's temp folder.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
from pathlib import Path

from engine.errors import StoreError
from engine.storage.lock import StoreLock

log = logging.getLogger("amem")
SCRATCH = "scratch"
UNLOCKED_GRACE_S = 60.0


class Scratch:
    """This process's working folder under one tenant folder (`path` None: the system's temp folder)."""

    def __init__(self, tenant_folder: Path) -> None:
        self.path: Path | None = None
        self._lock: StoreLock | None = None
        root = tenant_folder / SCRATCH
        try:
            root.mkdir(exist_ok=True)
            clear_abandoned(root)
            path = Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=root))
            self._lock = StoreLock(path / "LOCK").acquire()
        except (OSError, StoreError) as exc:  # a reader on a store it may not write to
            log.debug("%s: no working folder here (%s); using the system's temp folder", root, exc)
            return
        self.path = path

    def close(self) -> None:
        """Remove the folder (its files are only ever this process's working copies)."""
        if self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)
            self.path = None
        if self._lock is not None:
            self._lock.release()
            self._lock = None


def clear_abandoned(root: Path) -> list[Path]:
    """Remove the working folders under `root` whose owner is gone; returns them."""
    removed = []
    for folder in root.iterdir():
        try:
            if not folder.is_dir() or not _abandoned(folder):
                continue
        except OSError:  # removed meanwhile by another process's clearing
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


def _abandoned(folder: Path) -> bool:
    lock_file = folder / "LOCK"
    if not lock_file.exists():
        return time.time() - folder.stat().st_mtime > UNLOCKED_GRACE_S
    lock = StoreLock(lock_file)
    try:
        lock.acquire()
    except StoreError:  # StoreLocked: its owner is alive; else gone already, or not ours to judge
        return False
    lock.release()  # dead owner: removing the folder next is safe (no live process will lock it)
    return True
