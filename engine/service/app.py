"""The recall service: one FastAPI app over a Memory (or anything with its methods: see `Backend`).

Every request names its tenant only through its API key (`Authorization: Bearer <key>` or
`X-API-Key`), so one tenant cannot even name another's data: a note of another tenant is looked up in
the caller's tenant and is "not found", with the same 404 body as a note that never existed.

Status codes: 401 missing or unknown key, 403 a tenant key on an admin endpoint, 404 no such note (in
your tenant), 422 a malformed body (the `loc` names the field, for pydantic's checks and the
engine's InputError alike), 503 the tenant's store is held by another writer or cannot be written,
502 the LLM backend failed.

Threads: Memory calls run off the event loop (they block on a tenant's lock while a write holds it),
but in two small pools, one for reads and one for writes, each as wide as the machine has cores.
Searches are CPU-bound and hold the GIL most of the time, so more threads only add switching: on 2
cores, FastAPI's default 40-thread pool gave 2/3 of the throughput and a p99 13x higher (measured
with bench/service.py). Writes get their own pool so a long batch never queues the searches.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, Protocol, TypeVar

import anyio
from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from engine.config import Config
from engine.errors import ConfigError, InputError, TooLarge
from engine.memory import Memory
from engine.model.note import Hit, Interaction, Note, NoteVersion
from engine.model.tenant_name import validate_tenant
from engine.service.batcher import SearchBatcher
from engine.service.guard import BodyGuard, admit
from engine.service.handlers import KEYS_BROKEN, add_error_handlers
from engine.service.keys import KeyStore
from engine.service.mcp_http import mount_mcp
from engine.service.schemas import (
    AddRequest,
    AddResponse,
    BatchSearchRequest,
    BatchSearchResponse,
    HistoryResponse,
    KeyOut,
    KeyRequest,
    MemoryIn,
    NoteOut,
    SearchRequest,
    SearchResponse,
    hit_out,
    note_out,
    version_out,
)
from engine.write.validate import check_size, to_interaction

log = logging.getLogger("amem.service")
OPEN_TENANT_HEADER = "X-Amem-Tenant"
"""Without a keys file (local development only) the tenant comes from this header, default 'default'."""
T = TypeVar("T")


class Backend(Protocol):
    """What the app needs of a memory: `Memory` itself, or ray_jobs.serve's replica-side wrapper."""

    def add_interactions(self, interactions: list[Interaction], tenant: str = ...) -> list[str]: ...

    def search(
        self,
        query: str,
        tenant: str = ...,
        k: int = ...,
        as_of: Any = ...,
        include_superseded: bool = ...,
        expand_links: bool | None = ...,
    ) -> list[Hit]: ...

    def search_many(
        self,
        queries: list[str],
        tenant: str = ...,
        k: int = ...,
        as_of: Any = ...,
        include_superseded: bool = ...,
        expand_links: bool | None = ...,
    ) -> list[list[Hit]]: ...

    def get(self, note_id: str, tenant: str = ...) -> Note: ...

    def history(self, note_id: str, tenant: str = ...) -> list[NoteVersion]: ...

    def delete(self, note_id: str, tenant: str = ...) -> None: ...

    def close(self) -> None: ...


def create_app(
    store: Path,
    keys: Path | None,
    memory: Backend | None = None,
    mcp: bool = True,
    mcp_stateless: bool = False,
) -> FastAPI:
    """The app over `memory`, or over a Memory opened on `store` (and closed at shutdown) when None;
    without `mcp` there is no /mcp (a `--workers` reader forwards it to the writer); `mcp_stateless` for
    replicas that share no MCP session state (Ray Serve's)."""
    key_store = KeyStore(keys) if keys is not None else None
    owned = memory is None
    backend: Backend = memory if memory is not None else Memory(store, Config.from_env())
    config: Config = getattr(backend, "config", None) or Config.from_env()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        threads = os.cpu_count() or 1  # limiters belong to the running loop: made here, not before
        app.state.reads, app.state.writes = anyio.CapacityLimiter(threads), anyio.CapacityLimiter(threads)
        yield
        if owned:
            backend.close()

    app = FastAPI(
        title="amem recall service",
        version="1",
        lifespan=lifespan,
        description="Agentic memory (A-MEM) notes per tenant: add, hybrid search, history, delete.",
    )
    app.state.backend, app.state.keys, app.state.config = backend, key_store, config
    app.state.batcher = SearchBatcher(backend, config)  # concurrent searches share a search_many
    app.include_router(_router)
    if mcp:
        mount_mcp(app, backend, key_store, mcp_stateless)  # MCP over streamable HTTP at /mcp, same keys
    app.add_middleware(BodyGuard, limit=config.service.max_request_bytes)
    add_error_handlers(app)
    return app


# --- auth ------------------------------------------------------------------------------
def _presented_key(request: Request) -> str | None:
    auth = request.headers.get("authorization", "")
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip() or None
    return request.headers.get("x-api-key") or None


def _unauthorized(detail: str) -> HTTPException:
    return HTTPException(401, detail, headers={"WWW-Authenticate": "Bearer"})


async def _tenant(request: Request) -> str:
    keys: KeyStore | None = request.app.state.keys
    if keys is None:
        try:
            return validate_tenant(request.headers.get(OPEN_TENANT_HEADER, "default"))
        except InputError as exc:
            err = {
                "type": "value_error",
                "loc": ("header", OPEN_TENANT_HEADER),
                "msg": str(exc),
                "input": None,
            }
            raise RequestValidationError([err]) from exc
    key = _presented_key(request)
    if key is None:
        raise _unauthorized("missing API key (Authorization: Bearer <key>)")
    tenant = keys.tenant_for(key)
    if tenant is None:
        raise _unauthorized("invalid API key")
    return tenant


async def _admin(request: Request) -> KeyStore:
    keys: KeyStore | None = request.app.state.keys
    if keys is None:
        raise HTTPException(404, "key management is off: the service runs without a keys file")
    key = _presented_key(request)
    if key is None:
        raise _unauthorized("missing API key (Authorization: Bearer <admin key>)")
    if keys.is_admin(key):
        return keys
    if keys.tenant_for(key) is not None:
        raise HTTPException(403, "this endpoint needs the admin key")
    raise _unauthorized("invalid API key")


async def _backend(request: Request) -> Backend:
    backend: Backend = request.app.state.backend
    return backend


async def _read(request: Request, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    return await admit(request.app.state.reads, request.app.state.config.service, fn, *args, **kwargs)


async def _write(request: Request, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    return await admit(request.app.state.writes, request.app.state.config.service, fn, *args, **kwargs)


Tenant = Annotated[str, Depends(_tenant)]
Admin = Annotated[KeyStore, Depends(_admin)]
Mem = Annotated[Backend, Depends(_backend)]
_router = APIRouter()


# --- memories --------------------------------------------------------------------------
@_router.post("/v1/memories", status_code=201, response_model=AddResponse, tags=["memories"])
async def add_memories(body: AddRequest, tenant: Tenant, mem: Mem, request: Request) -> AddResponse:
    """Add one or many interactions as one batch; each becomes a note (or merges into a near-duplicate)."""
    _check_sizes(body, request.app.state.config)
    items = [_interaction(m, i) for i, m in enumerate(body.memories)]
    return AddResponse(ids=await _write(request, mem.add_interactions, items, tenant=tenant))


def _check_sizes(body: AddRequest, config: Config) -> None:
    """The limits before any work: 413 naming the field (Memory checks them too, for callers in-process)."""
    if len(body.memories) > config.write.max_batch_items:
        msg = f"{len(body.memories)} items, more than the limit of {config.write.max_batch_items}"
        raise TooLarge(msg, field="memories")
    for i, m in enumerate(body.memories):
        try:
            check_size(m.content, config.write.max_content_bytes, "content")
        except TooLarge as exc:
            raise TooLarge(str(exc), field=f"memories.{i}.content") from None


def _interaction(item: MemoryIn, index: int) -> Interaction:
    try:
        return to_interaction(item.model_dump(), where=f"memories[{index}]")
    except InputError as exc:
        loc = ("body", "memories", index, *([exc.field] if exc.field else []))
        raise RequestValidationError(
            [{"type": "value_error", "loc": loc, "msg": str(exc), "input": None}]
        ) from exc


@_router.post("/v1/search", response_model=SearchResponse, tags=["memories"])
async def search(body: SearchRequest, tenant: Tenant, request: Request) -> Response:
    """Hybrid (dense + BM25) recall with optional 1-hop link expansion, at a point in time if as_of is set.
    Searches queued together run as one batch (engine/service/batcher.py)."""
    hits = await request.app.state.batcher.search(
        request.app.state.reads,
        body.query,
        tenant,
        k=body.k,
        as_of=body.as_of,
        include_superseded=body.include_superseded,
        expand_links=body.expand_links,
    )
    # Serialised here, not by FastAPI, which would dump, validate and dump the hits again.
    answer = SearchResponse.model_construct(hits=[hit_out(h) for h in hits])
    return Response(answer.model_dump_json(), media_type="application/json")


@_router.post("/v1/search/batch", response_model=BatchSearchResponse, tags=["memories"])
async def search_batch(body: BatchSearchRequest, tenant: Tenant, mem: Mem, request: Request) -> Response:
    """Several searches with the same options in one call (one pass over the tenant's vectors for all)."""
    results = await _read(
        request,
        mem.search_many,
        body.queries,
        tenant=tenant,
        k=body.k,
        as_of=body.as_of,
        include_superseded=body.include_superseded,
        expand_links=body.expand_links,
    )
    answers = [SearchResponse.model_construct(hits=[hit_out(h) for h in hits]) for hits in results]
    return Response(
        BatchSearchResponse.model_construct(results=answers).model_dump_json(), media_type="application/json"
    )


@_router.get("/v1/memories/{note_id}", response_model=NoteOut, tags=["memories"])
async def get_memory(note_id: str, tenant: Tenant, mem: Mem, request: Request) -> NoteOut:
    return note_out(await _read(request, mem.get, note_id, tenant=tenant))


@_router.get("/v1/memories/{note_id}/history", response_model=HistoryResponse, tags=["memories"])
async def get_history(note_id: str, tenant: Tenant, mem: Mem, request: Request) -> HistoryResponse:
    versions = await _read(request, mem.history, note_id, tenant=tenant)
    return HistoryResponse(id=note_id, versions=[version_out(v) for v in versions])


@_router.delete("/v1/memories/{note_id}", status_code=204, tags=["memories"])
async def delete_memory(note_id: str, tenant: Tenant, mem: Mem, request: Request) -> Response:
    """Hard delete: gone from the index, the graph, the history and the next snapshot."""
    await _write(request, mem.delete, note_id, tenant=tenant)
    return Response(status_code=204)


@_router.get("/healthz", tags=["service"])
async def healthz(request: Request) -> JSONResponse:
    """200 when the service can answer; 503 when it cannot authenticate anyone (the keys file is unusable)."""
    keys: KeyStore | None = request.app.state.keys
    try:
        if keys is not None:
            keys.list()
    except ConfigError as exc:
        log.error("healthz: %s", exc)
        return JSONResponse({"status": "error", "detail": KEYS_BROKEN}, status_code=503)
    return JSONResponse({"status": "ok"})


# --- keys (admin) -------------------------------------------------------------------------
@_router.post("/v1/keys", status_code=201, response_model=KeyOut, tags=["admin"])
def add_key(body: KeyRequest, keys: Admin) -> KeyOut:
    return KeyOut(**keys.add(body.tenant, body.key))


@_router.get("/v1/keys", response_model=list[KeyOut], tags=["admin"])
def list_keys(keys: Admin) -> list[KeyOut]:
    return [KeyOut(**entry) for entry in keys.list()]


@_router.delete("/v1/keys/{key_id}", status_code=204, tags=["admin"])
def remove_key(key_id: str, keys: Admin) -> Response:
    if not keys.remove(key_id):
        raise HTTPException(404, "no such key")
    return Response(status_code=204)
