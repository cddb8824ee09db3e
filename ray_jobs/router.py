"""Driver side of sharded ingest: route tenants to shard actors, track acks, resend after a restart.

Every delivery stays in `unacked` until its shard acknowledges it (written and fsynced). A shard whose
call fails (actor died) or that answers with a new epoch (actor restarted) is sent again every
delivery it has not acknowledged; the worker ignores seqs it already holds and the pipeline skips
stored source ids, so nothing is lost and nothing doubles.

Backpressure: the driver stops reading while a shard has more than `max_ready_rows` rows it could
write now, or MAX_CALLS calls unanswered. Both clear without more input. (Waiting for *acks* instead
could deadlock: a delivery whose tail sits in a partial batch is acknowledged only after more rows
of its tenant arrive, or `max_wait_ms` passes.)
"""

from __future__ import annotations

import hashlib
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import ray
from ray.exceptions import ActorUnavailableError, RayActorError, RayTaskError
from tqdm import tqdm

from engine.errors import AmemError, StoreError
from ray_jobs.shard import Status

POLL_S = 0.05
MAX_CALLS = 4
"""Unanswered calls per shard before the driver waits."""
RESTART_WAIT_S = 120.0


def get(refs: Any) -> Any:
    """ray.get, raising an amem error from a task or actor as itself (not wrapped in a Ray traceback)."""
    try:
        return ray.get(refs)
    except RayTaskError as exc:
        if isinstance(exc.cause, AmemError):
            raise exc.cause from exc
        raise


def shard_of(tenant: str, num_shards: int) -> int:
    """Stable across processes and runs (Python's hash() of a str is salted per process)."""
    digest = hashlib.blake2b(tenant.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % num_shards


@dataclass(slots=True)
class _Delivery:
    seq: int
    shard: int
    tenant: str
    rows: list[dict[str, Any]]
    epoch: str | None = None
    """Epoch of the incarnation that accepted it (None: no answer yet)."""


@dataclass(slots=True)
class _Shard:
    actor: Any
    epoch: str | None = None
    epochs_seen: set[str] = field(default_factory=set)
    is_suspect: bool = False
    """A call failed: deliveries may not have arrived, so the next answer triggers a resend."""
    cursor: int = 0
    unacked: dict[int, _Delivery] = field(default_factory=dict)
    num_ready: int = 0
    """Rows it could write now, as of its latest answer."""
    num_records: int = 0
    tenants: set[str] = field(default_factory=set)


class Router:
    def __init__(self, actors: list[Any], max_ready_rows: int, bar: tqdm | None = None) -> None:
        self.shards = [_Shard(actor) for actor in actors]
        self.max_ready_rows = max_ready_rows
        self.bar = bar
        self.records_per_tenant: dict[str, int] = defaultdict(int)
        self.num_restarts = 0
        self._next_seq = 0
        self._draining = False
        self._calls: dict[ray.ObjectRef, tuple[int, int | None]] = {}
        """In-flight calls -> (shard, seq of the delivery they carry or None)."""

    # --- sending -------------------------------------------------------------------
    def send(self, tenant: str, rows: list[dict[str, Any]]) -> None:
        index = shard_of(tenant, len(self.shards))
        shard = self.shards[index]
        while self._num_calls(index) >= MAX_CALLS or shard.num_ready > self.max_ready_rows:
            self._poll([index])
        delivery = _Delivery(self._next_seq, index, tenant, rows)
        self._next_seq += 1
        shard.unacked[delivery.seq] = delivery
        shard.num_ready += len(rows)  # an upper bound until the shard's answer says
        shard.tenants.add(tenant)
        self._submit(delivery)
        self._collect(timeout=0)

    def _submit(self, d: _Delivery) -> None:
        shard = self.shards[d.shard]
        self._calls[shard.actor.submit.remote(d.seq, d.tenant, d.rows, shard.cursor)] = (d.shard, d.seq)

    def _num_calls(self, index: int) -> int:
        return sum(1 for shard, _ in self._calls.values() if shard == index)

    def finish(self) -> None:
        """Ask every shard to write its partial batches, then wait until every delivery is acknowledged."""
        self._draining = True
        for index, shard in enumerate(self.shards):
            self._calls[shard.actor.drain.remote(shard.cursor)] = (index, None)
        while any(s.unacked for s in self.shards):
            self._poll([i for i, s in enumerate(self.shards) if s.unacked])

    # --- receiving -----------------------------------------------------------------
    def _poll(self, indexes: list[int]) -> None:
        """Wait a moment, ask shards where they stand and wait for every answer."""
        time.sleep(POLL_S)
        for index in indexes:
            shard = self.shards[index]
            self._calls[shard.actor.status.remote(shard.cursor)] = (index, None)
        self._collect(timeout=None)

    def _collect(self, timeout: float | None) -> None:
        """Handle every finished call; with timeout=None wait until all in-flight calls finished."""
        refs = list(self._calls)
        if not refs:
            return
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=timeout)
        for ref in ready:
            index, seq = self._calls.pop(ref)
            try:
                status: Status = get(ref)
            except (RayActorError, ActorUnavailableError):
                self._lost(index)
                continue
            self._on_status(index, seq, status)

    def _on_status(self, index: int, seq: int | None, status: Status) -> None:
        shard = self.shards[index]
        if seq is not None and seq in shard.unacked:
            shard.unacked[seq].epoch = status.epoch
        shard.num_ready = status.num_ready
        if status.epoch != shard.epoch or shard.is_suspect:
            self._resync(index, status.epoch)
        for acked in status.acked:
            self._ack(shard, acked)
        if status.start <= shard.cursor:  # else acks between the cursor and `start` are still unseen
            shard.cursor = max(shard.cursor, status.num_acked)

    def _ack(self, shard: _Shard, seq: int) -> None:
        delivery = shard.unacked.pop(seq, None)
        if delivery is None:
            return  # acknowledged twice: an older answer arrived late
        shard.num_records += len(delivery.rows)
        self.records_per_tenant[delivery.tenant] += len(delivery.rows)
        if self.bar is not None:
            self.bar.update(len(delivery.rows))

    # --- restarts ------------------------------------------------------------------
    def _lost(self, index: int) -> None:
        """A call failed because the actor died: wait for Ray to restart it, then resync."""
        shard = self.shards[index]
        shard.is_suspect = True
        deadline = time.monotonic() + RESTART_WAIT_S
        while True:
            try:
                status = get(shard.actor.status.remote(0))
                break
            except (RayActorError, ActorUnavailableError) as exc:
                if time.monotonic() > deadline:
                    raise StoreError(f"ingest shard {index} died and was not restarted: {exc}") from exc
                time.sleep(POLL_S)
        self._on_status(index, None, status)

    def _resync(self, index: int, epoch: str) -> None:
        """Send again what `epoch` may not hold: after a restart, nothing the old incarnation had not acked."""
        shard = self.shards[index]
        if shard.epochs_seen and epoch not in shard.epochs_seen:
            self.num_restarts += 1
        shard.epochs_seen.add(epoch)
        if epoch != shard.epoch:
            shard.epoch, shard.cursor = epoch, 0
        shard.is_suspect = False
        for delivery in shard.unacked.values():
            if delivery.epoch != epoch:
                self._submit(delivery)
        if self._draining:
            self._calls[shard.actor.drain.remote(shard.cursor)] = (index, None)
