"""`amem serve --ray`: the same FastAPI app (engine/service/app.py) in N Ray Serve replicas.

    HTTP proxy -> Api replica x N: auth, validation, reads on a read-only Memory, query embedding
                  batched across concurrent requests with @serve.batch; MCP at /mcp, stateless
                  (the proxy may send each request of a session to another replica)
               -> MemoryWriter x 1: every write (add, update, delete) on the one writable Memory

A tenant folder has one writer (its lock), so writes go to one deployment; replicas open the store
read-only and call `Memory.refresh(tenant)` before a read to pick up what the writer logged since. A
replica refreshes after forwarding a write too, so a client reads its own writes.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from fastapi import FastAPI
from ray import serve
from ray.exceptions import RayTaskError

from engine.config import Config
from engine.encode import Encoder, make_encoder
from engine.errors import AmemError
from engine.memory import Memory
from engine.model.note import Interaction, Note
from engine.service.app import create_app
from engine.service.workers import RefreshingReader
from ray_jobs.cluster import ray_session

QUERY_BATCH = 32
QUERY_WAIT_S = 0.002
"""How long a query waits for others to share its encoder call: small next to a search (~1 ms)."""


class Writer:
    """The store's only writer (deployed as MemoryWriter, one replica)."""

    def __init__(self, store: str) -> None:
        self.memory = Memory(Path(store), Config.from_env())

    def add_interactions(self, interactions: list[Interaction], tenant: str) -> list[str]:
        return self.memory.add_interactions(interactions, tenant=tenant)

    def update(self, note_id: str, tenant: str, fields: dict[str, Any]) -> Note:
        return self.memory.update(note_id, tenant=tenant, **fields)

    def delete(self, note_id: str, tenant: str) -> None:
        self.memory.delete(note_id, tenant=tenant)

    def __del__(self) -> None:  # Serve's shutdown hook for a replica: snapshot and release the locks
        memory = self.__dict__.get("memory")  # absent when __init__ failed: nothing to close
        if memory is not None:
            memory.close()


# num_cpus=0 for every deployment here: the replicas share the machine's cores with the Ray Data and
# ingest work a small cluster also runs; reserving a CPU each would leave a 2-core machine unable to
# place the writer.
MemoryWriter = serve.deployment(
    name="amem-writer", num_replicas=1, ray_actor_options={"num_cpus": 0}, max_ongoing_requests=64
)(Writer)


class BatchedQueryEncoder:
    """An Encoder whose single-text calls (queries) from request threads share one batched call."""

    def __init__(self, inner: Encoder, loop: asyncio.AbstractEventLoop) -> None:
        self.inner, self.loop = inner, loop
        self.name, self.dim = inner.name, inner.dim

    def encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        if len(texts) != 1 or _on_loop(self.loop):  # batch calls, or the loop itself, which must not block
            return self.inner.encode_batch(texts)
        vec = asyncio.run_coroutine_threadsafe(self._encode_one(texts[0]), self.loop).result()
        return vec[None, :]

    def close(self) -> None:
        self.inner.close()

    @serve.batch(max_batch_size=QUERY_BATCH, batch_wait_timeout_s=QUERY_WAIT_S)
    async def _encode_one(self, texts: list[str]) -> list[np.ndarray]:
        return list(self.inner.encode_batch(texts))


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


class ReplicaMemory(RefreshingReader):
    """The app's Backend inside a replica: reads here (read-only store), writes on the writer."""

    def __init__(self, store: Path, writer: Any, encoder: Encoder) -> None:
        super().__init__(store, encoder)
        self.writer = writer

    def add_interactions(self, interactions: list[Interaction], tenant: str = "default") -> list[str]:
        ids: list[str] = _result(self.writer.add_interactions.remote(interactions, tenant))
        self.memory.refresh(tenant)
        return ids

    def update(self, note_id: str, tenant: str = "default", **fields: Any) -> Note:
        note: Note = _result(self.writer.update.remote(note_id, tenant, fields))
        self.memory.refresh(tenant)
        return note

    def delete(self, note_id: str, tenant: str = "default") -> None:
        _result(self.writer.delete.remote(note_id, tenant))
        self.memory.refresh(tenant)


def _result(response: Any) -> Any:
    """A writer call's result; an amem error raised there is raised here as itself (a 4xx, not a 500)."""
    try:
        return response.result()
    except RayTaskError as exc:
        if isinstance(exc.cause, AmemError):
            raise exc.cause from exc
        raise


@serve.ingress()
class Api:
    def __init__(self, store: str, keys: str | None, writer: Any) -> None:
        self.store, self.keys, self.writer = Path(store), Path(keys) if keys else None, writer

    async def __serve_build_asgi_app__(self) -> FastAPI:
        # Runs on the replica's event loop: the loop @serve.batch collects queries on.
        encoder = BatchedQueryEncoder(make_encoder(Config.from_env()), asyncio.get_running_loop())
        memory = ReplicaMemory(self.store, self.writer, encoder)
        return create_app(self.store, self.keys, memory=memory, mcp_stateless=True)


def build(store: Path, keys: Path | None, replicas: int) -> Any:
    """The Serve application: `replicas` Api replicas bound to one MemoryWriter."""
    api = serve.deployment(
        name="amem-api", num_replicas=replicas, max_ongoing_requests=64, ray_actor_options={"num_cpus": 0}
    )(Api)
    return api.bind(str(store), str(keys) if keys else None, MemoryWriter.bind(str(store)))


def run_ray(store: Path, keys: Path | None, host: str, port: int, replicas: int) -> None:
    """Deploy on the running (or a new local) Ray cluster and serve until SIGINT / SIGTERM."""
    stop = threading.Event()
    with ray_session():
        for sig in (signal.SIGINT, signal.SIGTERM):  # after ray.init, which installs handlers of its own
            signal.signal(sig, lambda *_: stop.set())
        serve.start(http_options={"host": host, "port": port})
        try:
            serve.run(build(store, keys, replicas), name="amem", route_prefix="/")
            stop.wait()
        finally:
            serve.shutdown()
