"""One ingest shard: the stores of the tenants hashed to it, fed by deliveries, written in batches.

The driver sends *deliveries* (rows of one tenant, numbered by `seq`). They queue per tenant; one worker
thread takes a batch when a tenant has `max_batch` rows queued, when its oldest row has waited
`max_wait_ms`, or when the driver asked to drain, and calls `Memory.add_interactions` (which returns
after the write-ahead log's fsync). Only then are the deliveries whose rows are all written
acknowledged. Acks live in an append-only list per *epoch* (one epoch per incarnation of the actor):
a restarted actor has a new epoch and an empty list, which tells the driver to send again what was
not acknowledged. Sending a seq the worker already holds is ignored, and stored source ids are
skipped by the pipeline, so a resend never doubles a note.

`ShardWorker` is a plain class (tested without Ray); `ray_jobs.ingest` wraps it in `ray.remote`.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.config import Config
from engine.errors import StoreLocked
from engine.memory import Memory
from engine.model.note import Interaction
from ray_jobs.reader import to_interaction

LOCK_WAIT_S = 30.0
"""How long a fresh incarnation waits for the killed one's store locks: its process may still be exiting."""


@dataclass(slots=True)
class Status:
    epoch: str
    """Id of this incarnation of the actor."""
    start: int
    """The caller's cursor: `acked` is this epoch's ack list from here on."""
    acked: list[int]
    """Acknowledged delivery seqs from `start` on."""
    num_acked: int
    """Length of the epoch's ack list: the caller's next cursor."""
    num_records: int
    num_batches: int
    num_queued: int
    """Rows received and not yet written."""
    num_ready: int
    """Of those, the rows the worker can write without more input (full batches, the running batch)."""


@dataclass(slots=True)
class _Queued:
    seq: int
    interaction: Interaction
    arrived: float
    """time.monotonic() when its delivery came in: the age that `max_wait_ms` bounds."""


class ShardWorker:
    def __init__(self, shard: int, store: str, config: Config, max_batch: int, max_wait_ms: float) -> None:
        self.shard = shard
        self.epoch = uuid.uuid4().hex
        self.memory = Memory(Path(store), config)
        self.max_batch = max_batch
        self.max_wait_s = max_wait_ms / 1000.0
        self._queues: dict[str, deque[_Queued]] = {}
        self._remaining: dict[int, int] = {}
        self._acked: list[int] = []
        self._seen: set[int] = set()
        self._num_records = self._num_batches = 0
        self._num_busy = 0
        self._draining = self._stopping = False
        self._error: BaseException | None = None
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name=f"shard-{shard}", daemon=True)
        self._thread.start()

    # --- called by the driver ------------------------------------------------------
    def submit(self, seq: int, tenant: str, rows: list[dict[str, Any]], cursor: int) -> Status:
        interactions = [to_interaction(row) for row in rows]
        with self._cond:
            self._raise_error()
            if seq not in self._seen:  # a resend of something this incarnation already holds
                self._seen.add(seq)
                now = time.monotonic()
                self._queues.setdefault(tenant, deque()).extend(
                    _Queued(seq, item, now) for item in interactions
                )
                if interactions:
                    self._remaining[seq] = len(interactions)
                else:
                    self._acked.append(seq)  # nothing to write: done on arrival
                self._cond.notify_all()
            return self._status(cursor)

    def status(self, cursor: int) -> Status:
        with self._cond:
            self._raise_error()
            return self._status(cursor)

    def drain(self, cursor: int) -> Status:
        """Write partial batches now instead of waiting: the driver has sent everything."""
        with self._cond:
            self._draining = True
            self._cond.notify_all()
            self._raise_error()
            return self._status(cursor)

    def close(self, tenants: list[str]) -> dict[str, Any]:
        """Stop the worker, snapshot every tenant (Memory.close); the notes of `tenants` and the LLM cost.

        The cost is this incarnation's: what a killed one spent is not counted.
        """
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._thread.join()
        counts = {name: self.memory.count(name) for name in tenants}
        self.memory.close()
        with self._cond:
            self._raise_error()
        return {"notes": counts, "cost": self.memory.cost.report()}

    # --- the worker thread ---------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._cond:
                batch = self._wait_for_batch()
                if batch is None:
                    return
                self._num_busy = len(batch[1])
            try:
                self._add(*batch)
            except Exception as exc:  # kept and raised to the driver by its next call
                with self._cond:
                    self._error, self._num_busy = exc, 0
                    self._cond.notify_all()
                return
            with self._cond:
                self._ack(batch[1])
                self._num_busy = 0

    def _wait_for_batch(self) -> tuple[str, list[_Queued]] | None:
        while not self._stopping:
            tenant, wait = self._ready_tenant()
            if tenant is not None:
                return tenant, self._take(tenant)
            self._cond.wait(timeout=wait)
        return None

    def _ready_tenant(self) -> tuple[str | None, float | None]:
        """A tenant whose batch should run now, else how long until the oldest queue ages out."""
        now = time.monotonic()
        full = [t for t, q in self._queues.items() if len(q) >= self.max_batch]
        if full:
            return full[0], None
        waiting = {t: q[0].arrived for t, q in self._queues.items() if q}
        if not waiting:
            return None, None
        tenant = min(waiting, key=waiting.__getitem__)
        due = waiting[tenant] + self.max_wait_s - now
        return (tenant, None) if self._draining or due <= 0 else (None, due)

    def _take(self, tenant: str) -> list[_Queued]:
        queue = self._queues[tenant]
        return [queue.popleft() for _ in range(min(self.max_batch, len(queue)))]

    def _add(self, tenant: str, batch: list[_Queued]) -> None:
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                self.memory.add_interactions([q.interaction for q in batch], tenant=tenant)
                return
            except StoreLocked:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def _ack(self, batch: list[_Queued]) -> None:
        for seq in (q.seq for q in batch):
            self._remaining[seq] -= 1
            if self._remaining[seq] == 0:
                del self._remaining[seq]
                self._acked.append(seq)
        self._num_records += len(batch)
        self._num_batches += 1
        self._cond.notify_all()

    def _status(self, cursor: int) -> Status:
        queued = sum(len(q) for q in self._queues.values())
        full = sum(len(q) // self.max_batch * self.max_batch for q in self._queues.values())
        return Status(
            epoch=self.epoch,
            start=cursor,
            acked=self._acked[cursor:],
            num_acked=len(self._acked),
            num_records=self._num_records,
            num_batches=self._num_batches,
            num_queued=queued + self._num_busy,
            num_ready=full + self._num_busy,
        )

    def _raise_error(self) -> None:
        if self._error is not None:
            raise self._error
