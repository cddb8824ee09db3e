"""Durable home of one tenant: snapshot + write-ahead log + one-writer lock.

Write path: `log(changes)` appends the ChangeSet as one WAL record (one fsync: group commit) before the
caller applies it, so whatever `add` acknowledged survives a crash. `checkpoint` writes a snapshot at the
log's sequence number and truncates the log up to the *previous* snapshot, so a damaged newest snapshot
still has a complete fallback (previous snapshot + log).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import numpy as np

from engine.config import Config
from engine.errors import CorruptStore, NotFound, ReadOnlyStore
from engine.gc_pause import gc_paused
from engine.model.changes import ChangeSet
from engine.model.note import Note
from engine.model.records import RECORD_FORMAT, changes_from_records, changes_to_records
from engine.model.tenant_name import tenant_dir
from engine.state.tenant_state import TenantMemory
from engine.storage.checksums import Pending, damaged
from engine.storage.lock import StoreLock
from engine.storage.notes_file import NotesBase
from engine.storage.replay_progress import ReplayProgress
from engine.storage.scratch import Scratch
from engine.storage.snapshot import (
    DamagedVersions,
    SnapshotInfo,
    prune_snapshots,
    read_snapshot,
    snapshots_newest_first,
    versions_listed,
    write_snapshot,
)
from engine.storage.versions_files import is_segment
from engine.storage.wal import WriteAheadLog

log = logging.getLogger("amem")


class TenantStorage:
    def __init__(self, root: Path, tenant: str, config: Config, encoder: str) -> None:
        self.tenant = tenant
        self.config = config
        self.encoder = encoder
        self.folder = tenant_dir(root, tenant)
        self.read_only = config.storage.read_only
        self.problems: list[str] = []
        self._lock: StoreLock | None = None
        if not self.read_only:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._lock = StoreLock(self.folder / "LOCK")
            self._lock.acquire()
        self._scratch = Scratch(self.folder) if self.folder.exists() else None
        self._wal = self._open_wal() if config.storage.wal and self._writable_or_exists() else None
        self.seq = 0
        self._since_snapshot = 0
        self._seen: tuple[tuple[int, int, int], ...] = ()
        self._pending: tuple[str, Pending, int] | None = None
        self._damaged: set[str] = set()
        """Snapshots whose background checksums failed: skipped when the tenant is loaded again."""
        self._lost: set[str] = set()
        """Versions segments found damaged (engine/storage/versions_files.py)."""
        self._notes_base: NotesBase | None = None

    @property
    def scratch(self) -> Path | None:
        """Where this process's working files for the tenant go (engine/storage/scratch.py); None: the
        system's temp folder."""
        return self._scratch.path if self._scratch is not None else None

    def _open_wal(self) -> WriteAheadLog | None:
        """The log; one whose header is damaged is reported and set aside (writer) or skipped (reader)."""
        path = self.folder / "wal.log"
        try:
            return WriteAheadLog(path, read_only=self.read_only)
        except CorruptStore as exc:
            self._problem(f"{exc}; log header damaged, opening on the snapshot alone")
            if self.read_only:
                return None
            path.rename(path.with_name(f"wal.log.corrupt-{time.time_ns()}"))
            return WriteAheadLog(path)

    def _writable_or_exists(self) -> bool:
        return not self.read_only or (self.folder / "wal.log").exists()

    def load(self, tm: TenantMemory) -> TenantMemory:
        """Newest good snapshot, then every logged ChangeSet after it (see `verified`)."""
        self._seen = self._signature()
        self._since_snapshot = 0
        snap_seq = self._load_snapshot(tm)
        self.seq = snap_seq
        if self._wal is not None:
            if self._wal.base_seq > snap_seq:
                self._problem(
                    f"{self.folder / 'wal.log'}: records {snap_seq + 1}..{self._wal.base_seq} are missing "
                    "(the snapshot that held them is damaged and the log was truncated past them)"
                )
            # strict=False: damage inside the log stops replay at the last whole group (reported), so the
            # tenant opens on its last good state instead of not at all.
            skipped: list[str] = []
            progress = ReplayProgress(self.tenant, self._wal.last_seq - snap_seq)
            for seq, record in self._wal.replay(after_seq=snap_seq, strict=False):
                _replay(tm, record, skipped)
                self.seq = seq
                self._since_snapshot += 1
                progress.step()
            progress.finish()
            self._report_skipped(skipped)
            if self._wal.last_problem:
                self._problem(f"{self.folder / 'wal.log'}: {self._wal.last_problem}")
            # After the replay: a log damaged below the snapshot must be accepted (strict=False) before
            # this first write may salvage it.
            if not self.read_only and self._wal.last_seq < snap_seq:
                self._wal.truncate(snap_seq)  # the log restarts after the snapshot, never below it
        return tm

    def refresh(self, tm: TenantMemory) -> TenantMemory:
        """Read-only: catch up with what the writer did since the last look.

        New log records are applied to `tm`; when the writer truncated its log past what this reader has
        (a newer snapshot took those records), a fresh state is loaded and returned instead. An unchanged
        log and manifest cost two stat calls.
        """
        signature = self._signature()
        if not self.read_only or signature == self._seen:
            return tm
        wal_path = self.folder / "wal.log"
        wal = (
            WriteAheadLog(wal_path, read_only=True) if self.config.storage.wal and wal_path.exists() else None
        )
        newest = snapshots_newest_first(self.folder)
        snap_seq = int(newest[0].name.split("-")[1]) if newest else 0
        if (wal.base_seq if wal is not None else snap_seq) > self.seq:
            self._wal = wal
            return self.load(tm.empty_copy())
        self._seen = signature
        if wal is not None:
            self._wal = wal
            skipped: list[str] = []
            for seq, record in wal.replay(after_seq=self.seq, strict=False):
                _replay(tm, record, skipped)
                self.seq = seq
            self._report_skipped(skipped)
        return tm

    def _signature(self) -> tuple[tuple[int, int, int], ...]:
        out = []
        for name in ("wal.log", "manifest.json"):
            try:
                st = (self.folder / name).stat()
                out.append((st.st_ino, st.st_size, st.st_mtime_ns))
            except FileNotFoundError:
                out.append((0, 0, 0))
        return tuple(out)

    def _load_snapshot(self, tm: TenantMemory) -> int:
        """The newest snapshot that loads. One whose damaged versions segments an older snapshot does
        not hold is passed over (that one and the log rebuild them); one whose damaged segments every
        older snapshot shares (linked: one file) loads without them, and the versions lost are reported."""
        self._pending, self._notes_base = None, None
        snaps = [p for p in snapshots_newest_first(self.folder) if p.name not in self._damaged]
        at = 0
        while at < len(snaps):
            path = snaps[at]
            listed = versions_listed(path) if self._lost else {}  # meta.json read again only after damage
            lost = self._lost & listed.keys()
            if lost and any(not self._lost & versions_listed(o).keys() for o in snaps[at + 1 :]):
                self._problem(f"{damaged(path / min(lost))}; falling back to an older snapshot")
                at += 1
                continue
            try:
                info = read_snapshot(path, tm, self.encoder, defer=True, lost=lost)
            except CorruptStore as exc:
                at += self._failed(tm, exc)
                continue
            self._loaded(info, {name: listed[name] for name in lost})
            return info.seq
        return 0

    def _failed(self, tm: TenantMemory, exc: CorruptStore) -> int:
        """Drop what was half-read; 0: the same snapshot again (only versions segments were damaged,
        now known), 1: the next older one."""
        tm.__init__(tm.tenant, tm.index.dim, tm.use_cuda, tm.index.config)  # type: ignore[misc]
        if isinstance(exc, DamagedVersions):
            self._lost |= exc.names
            return 0
        self._problem(f"{exc}; falling back to an older snapshot")
        return 1

    def _loaded(self, info: SnapshotInfo, lost: dict[str, int]) -> None:
        for name, rows in sorted(lost.items()):
            self._problem(
                f"{damaged(info.path / name)}; the older snapshot shares the file, so its {rows} earlier "
                "versions of notes are lost (the notes themselves are whole)"
            )
        if info.pending is not None:  # with the problems known so far (the log's come after)
            self._pending = (info.path.name, info.pending, len(self.problems))
        self._notes_base = info.notes_base

    def verified(self, tm: TenantMemory) -> TenantMemory:
        """`tm` once its snapshot's background checksums hold (they wait here); when one fails, the tenant
        is loaded again from an older snapshot and the log, and that new state is returned instead."""
        if self._pending is None:
            return tm
        name, pending, known = self._pending
        self._pending = None
        failed = pending.failed()
        if not failed:
            return tm
        del self.problems[known:]  # what replaying the log onto the damaged snapshot found is moot
        if all(is_segment(p.name) for p in failed):
            self._lost |= {p.name for p in failed}  # _load_snapshot passes them over or leaves them out
        else:
            self._problem(f"{damaged(failed[0])}; falling back to an older snapshot")
            self._damaged.add(name)
        return self.load(tm.empty_copy())

    def _report_skipped(self, skipped: list[str]) -> None:
        if skipped:  # only after a damaged snapshot: the log refers to notes it held
            self._problem(f"{len(skipped)} logged changes could not be applied, e.g. {skipped[0]}")

    def _problem(self, message: str) -> None:
        log.warning("tenant %s: %s", self.tenant, message)
        self.problems.append(message)

    def log(self, changes: ChangeSet, state: TenantMemory | None = None) -> None:
        """Log `changes` before they are applied to `state`; given the state, the record is compact
        (format 2: what the state already holds is referred to, not repeated)."""
        if self.read_only:
            raise ReadOnlyStore(f"tenant {self.tenant!r} at {self.folder} is open read-only")
        if self._wal is not None and changes:
            compact = state is not None and self.config.storage.compact_log
            records = changes_to_records(changes, StateBase(state) if compact else None)  # type: ignore[arg-type]
            self.seq = self._wal.append([{"format": RECORD_FORMAT if compact else 1, "changes": records}])
            self._since_snapshot += 1
        elif changes:
            self.seq += 1
            self._since_snapshot += 1

    def should_checkpoint(self, tm: TenantMemory) -> bool:
        held, stored, storage = tm.notes.held, len(tm.notes), self.config.storage
        bar = max(storage.snapshot_held, min(stored - held, storage.snapshot_held_max))
        return self._since_snapshot >= storage.snapshot_every or held >= bar

    def checkpoint(
        self,
        tm: TenantMemory,
        purge: bool = False,
        unlocked: Callable[[], AbstractContextManager[Any]] | None = None,
    ) -> None:
        """Snapshot now. `purge` (after a hard delete) also drops the fallback snapshot and the whole log,
        so no copy of deleted content stays on disk. `unlocked` gives the context in which the tenant's
        lock is released (see `write_snapshot`); removing the old snapshot (a second or more at 200k
        notes) and trimming the log, which read no state, run in one too."""
        if self.read_only or (self._since_snapshot == 0 and not purge):
            return
        previous = [int(p.name.split("-")[1]) for p in snapshots_newest_first(self.folder)]
        info = write_snapshot(
            self.folder, tm, self.seq, self.encoder, unlocked and unlocked(), self._notes_base
        )
        self._notes_base = info.notes_base
        with unlocked() if unlocked else nullcontext():
            prune_snapshots(self.folder, keep=1 if purge else 2)
            if self._wal is not None:
                self._wal.truncate(upto_seq=self.seq if purge or not previous else previous[0])
        self._since_snapshot = 0

    def close(self, tm: TenantMemory | None, snapshot: bool = True) -> None:
        """Release the tenant; with `snapshot`, checkpoint it first (else its log holds what is new).
        Without a log (`wal=False`) there is nothing to replay: it is checkpointed whatever `snapshot` says."""
        try:
            if tm is not None and (snapshot or self._wal is None):
                self.checkpoint(tm if self.read_only else self.verified(tm))
        finally:
            if self._wal is not None:
                self._wal.close()
            if self._scratch is not None:
                self._scratch.close()
            if self._lock is not None:
                self._lock.release()


def _replay(tm: TenantMemory, record: dict[str, Any], skipped: list[str]) -> None:
    """Apply one logged ChangeSet. A record is a write batch: the same churn of short-lived objects, so the
    cyclic collector is paused as for the batch itself."""
    with gc_paused():
        tm.apply(changes_from_records(record["changes"], StateBase(tm), skipped))


class StateBase:
    """A tenant's state as the `Base` compact log records refer to."""

    def __init__(self, tm: TenantMemory) -> None:
        self.tm = tm

    def current_note(self, note_id: str) -> Note | None:
        return self.tm.notes.get(note_id)

    def current_vector(self, note_id: str) -> np.ndarray | None:
        try:
            return self.tm.vector(note_id)
        except NotFound:
            return None
