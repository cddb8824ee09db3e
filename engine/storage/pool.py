"""Open tenants of one Memory: opened on first use, the least recently used closed past a bound.

A persistent store may hold thousands of tenants; only `Config.max_open_tenants` are resident at once
(each closes with a snapshot and reopens from it on its next use). Callers get a tenant with its lock
held, so an eviction can never close a tenant under a running call.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from engine.config import Config
from engine.errors import InputError
from engine.model.tenant_name import validate_tenant
from engine.state.tenant_state import TenantMemory
from engine.storage.lock import StoreLock
from engine.storage.tenant_store import TenantStorage

STORE_LOCK = "LOCK"
"""The store-level writer lock file, beside `tenants/`."""


@dataclass(slots=True)
class Tenant:
    state: TenantMemory
    storage: TenantStorage | None
    lock: threading.RLock = field(default_factory=threading.RLock)
    """Held by every call on the state."""
    writing: threading.RLock = field(default_factory=threading.RLock)
    """Held (before `lock`) by every call that is not a search: a write releases `lock` while it reads
    its neighbours and while it writes a snapshot's files, so searches go on; this keeps the other calls
    (and eviction) out meanwhile."""
    is_closed: bool = False

    @contextmanager
    def unlocked(self) -> Iterator[None]:
        """Let searches take the state for the block (the caller holds both locks, `lock` once)."""
        self.lock.release()
        try:
            yield
        finally:
            self.lock.acquire()


class TenantPool:
    def __init__(self, path: Path | None, config: Config, dim: int, encoder_name: str) -> None:
        self.path = path
        self.config = config
        self.dim = dim
        self.encoder_name = encoder_name
        self.open: OrderedDict[str, Tenant] = OrderedDict()
        self._lock = threading.Lock()
        self.is_closed = False
        self.store_lock = _store_lock(path, config)

    @contextmanager
    def use(self, name: str, create: bool = True, search_only: bool = False) -> Iterator[Tenant | None]:
        """The tenant, locked for the duration; None when it does not exist and `create` is False.

        Unless the call only searches, it also holds the tenant's `writing` lock, and the snapshot the
        tenant opened from has passed its checksums first (a big tenant's are checked in the background:
        search reads none of those files)."""
        name = validate_tenant(name)
        while True:
            t = self._get(name, create)
            if t is None:
                yield None
                return
            with nullcontext() if search_only else t.writing, t.lock:
                if not t.is_closed:  # evicted between lookup and lock: look again
                    if t.storage is not None and not search_only:
                        t.state = t.storage.verified(t.state)
                    yield t
                    return

    def _get(self, name: str, create: bool) -> Tenant | None:
        with self._lock:
            if self.is_closed:
                raise InputError("this Memory is closed")
            t = self.open.get(name)
            if t is not None:
                self.open.move_to_end(name)
                return t
            if not create and not self.exists_on_disk(name):
                return None
            t = self.open[name] = self._open(name)
            self._evict()
            return t

    def _open(self, name: str) -> Tenant:
        if self.path is None:
            return Tenant(state=self._state(name), storage=None)
        storage = TenantStorage(self.path / "tenants", name, self.config, self.encoder_name)
        return Tenant(state=storage.load(self._state(name, storage.scratch)), storage=storage)

    def _state(self, name: str, scratch: Path | None = None) -> TenantMemory:
        return TenantMemory(name, self.dim, self.config.use_cuda, self.config.index, scratch)

    def _evict(self) -> None:
        if self.path is None:
            return  # an in-RAM tenant has nowhere to go
        for name in list(self.open)[: max(0, len(self.open) - self.config.storage.max_open_tenants)]:
            t = self.open[name]
            if not t.writing.acquire(blocking=False):  # busy tenants stay; they are evicted on a later open
                continue
            try:
                if t.lock.acquire(blocking=False):
                    try:
                        self._close(t, t.state.notes.held >= self.config.storage.evict_snapshot_min)
                        del self.open[name]
                    finally:
                        t.lock.release()
            finally:
                t.writing.release()

    @staticmethod
    def _close(t: Tenant, snapshot: bool = True) -> None:
        t.is_closed = True
        if t.storage is not None:
            t.storage.close(t.state, snapshot)

    def exists_on_disk(self, name: str) -> bool:
        return self.path is not None and (self.path / "tenants" / name).is_dir()

    def names(self) -> list[str]:
        known = set(self.open)
        if self.path is not None and (self.path / "tenants").exists():
            known.update(p.name for p in (self.path / "tenants").iterdir() if p.is_dir())
        return sorted(known)

    def close(self) -> None:
        """Close every tenant (snapshot, release its lock); raises the first failure after trying all."""
        with self._lock:
            if self.is_closed:
                return
            self.is_closed = True
            tenants = list(self.open.values())
        errors = []
        for t in tenants:
            with t.writing, t.lock:
                try:
                    self._close(t)
                except Exception as exc:  # every tenant gets its chance to close; the first error is raised
                    errors.append(exc)
        if self.store_lock is not None:
            self.store_lock.release()
        if errors:
            raise errors[0]


def _store_lock(path: Path | None, config: Config) -> StoreLock | None:
    """One writer per store, taken when the writer opens (not per tenant on first use): a second
    `amem serve` on the same store must fail at start, naming the holder, not answer 503 forever."""
    if path is None or config.storage.read_only or not config.storage.store_lock:
        return None
    path.mkdir(parents=True, exist_ok=True)
    return StoreLock(path / STORE_LOCK).acquire()
