"""The amem MCP server (official SDK, `MCPServer`): memory tools over one Memory.

Every call runs for one tenant, which `tenant_of(ctx)` names: fixed for `amem mcp` over stdio, taken
from the API key of the HTTP request under `amem serve`. A note of another tenant is looked up in the
caller's tenant and is "no memory with id ..." exactly like one that never existed.

Failures the caller can fix (a bad field, an unknown id, a busy store) come back as tool errors
(`is_error`) whose text names the field, so the model can correct its call; the server keeps running.
Writes return after Memory has logged them (fsync), like every other write path.

Memory calls block (a write holds the tenant's lock; a search is CPU-bound), so they run off the event
loop in two small pools, reads and writes, as the REST app does (see engine/service/app.py for why).
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import os
from collections.abc import Callable
from typing import Annotated, Any, Protocol, TypeVar

import anyio
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

import engine.service.mcp_schemas as out
from engine.errors import InputError, LLMError, NotFound, StoreError, StoreLocked
from engine.model.note import Hit, Interaction, Note, NoteVersion
from engine.service.mcp_schemas import MAX_ITEMS, MemoryItem, TimeIn
from engine.write.validate import to_interaction

log = logging.getLogger("amem.mcp")
MAX_K = 100
"""A tool result goes into the model's context window: a hundred memories is already a lot of it."""
MAX_PAGE = 200
T = TypeVar("T")
TenantOf = Callable[[Context], str]
INSTRUCTIONS = (
    "Long-term memory (amem). Before answering anything that may depend on earlier conversations or facts "
    "about the user, call search_memory. When the user tells you something worth remembering (a fact, a "
    "preference, a plan, a change), call add_memory with the text and, if known, when it happened. "
    "Memories keep their history: a newer fact supersedes an older one, and search_memory(as_of=...) "
    "answers what was true at a past time."
)
READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
DESTROY = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)

Id = Annotated[
    str, Field(min_length=1, description="A memory id, as returned by add_memory or search_memory.")
]
Query = Annotated[str, Field(min_length=1, description="What to recall, in natural language or keywords.")]
K = Annotated[int, Field(ge=1, le=MAX_K, description=f"How many memories to return (1-{MAX_K}).")]
AsOf = Annotated[
    TimeIn | None,
    Field(description="Recall what was true at this time (ISO-8601 or epoch seconds) instead of now."),
]
Limit = Annotated[int, Field(ge=1, le=MAX_PAGE, description=f"Memories per page (1-{MAX_PAGE}).")]
Text = Annotated[str | None, Field(description="New value, or omit to keep.")]
Words = Annotated[list[str] | None, Field(description="New list (replaces the old one), or omit to keep.")]


class MemoryLike(Protocol):
    """What the tools need of a memory (`Memory` has all of it)."""

    def add_interactions(self, interactions: list[Interaction], tenant: str = ...) -> list[str]: ...
    def search(
        self, query: str, tenant: str = ..., k: int = ..., as_of: Any = ..., include_superseded: bool = ...
    ) -> list[Hit]: ...
    def get(self, note_id: str, tenant: str = ...) -> Note: ...
    def history(self, note_id: str, tenant: str = ...) -> list[NoteVersion]: ...
    def update(self, note_id: str, tenant: str = ..., **fields: Any) -> Note: ...
    def delete(self, note_id: str, tenant: str = ...) -> None: ...
    def page(
        self, tenant: str = ..., after: tuple[Any, str] | None = ..., limit: int = ...
    ) -> tuple[list[Note], bool]: ...


def build_server(memory: MemoryLike, tenant_of: TenantOf) -> MCPServer:
    """An MCPServer whose tools and `memory://{id}` resource act on `memory` for tenant_of(ctx)."""
    server: MCPServer = MCPServer("amem", instructions=INSTRUCTIONS, version="1", log_level="WARNING")
    tools = MemoryTools(memory, tenant_of)
    for fn, hints in (
        (tools.add_memory, WRITE),
        (tools.add_memories, WRITE),
        (tools.search_memory, READ),
        (tools.get_memory, READ),
        (tools.update_memory, WRITE),
        (tools.delete_memory, DESTROY),
        (tools.memory_history, READ),
        (tools.list_memories, READ),
    ):
        server.add_tool(
            fn, description=inspect.cleandoc(fn.__doc__ or ""), annotations=hints, structured_output=True
        )
    server.resource("memory://{note_id}", name="memory", mime_type="application/json")(tools.memory_resource)
    return server


class MemoryTools:
    def __init__(self, memory: MemoryLike, tenant_of: TenantOf) -> None:
        self.memory, self.tenant_of = memory, tenant_of
        self._limiters: dict[bool, anyio.CapacityLimiter] = {}

    async def add_memory(
        self,
        ctx: Context,
        content: Annotated[str, Field(min_length=1, description="The text to remember, stored whole.")],
        timestamp: Annotated[
            TimeIn | None, Field(description="When it happened: ISO-8601 or epoch seconds; default now.")
        ] = None,
        speaker: Annotated[str | None, Field(description="Who said it, if someone did.")] = None,
        metadata: Annotated[
            dict[str, Any] | None, Field(description="Any JSON object to keep with it.")
        ] = None,
    ) -> out.Added:
        """Remember one thing: a message, fact, preference or event. Returns its memory id.

        The memory is annotated (keywords, tags, context), linked to related memories, and may supersede an
        older fact it contradicts. Adding the same text again merges into the existing memory."""
        item = MemoryItem(
            content=content, timestamp=timestamp, speaker=speaker, metadata=metadata, source_id=None
        )
        return await self.add_memories(ctx, [item])

    async def add_memories(
        self,
        ctx: Context,
        items: Annotated[
            list[MemoryItem],
            Field(min_length=1, max_length=MAX_ITEMS, description="The interactions, oldest first."),
        ],
    ) -> out.Added:
        """Remember many things at once (a conversation, a list of facts) as one batch.

        Faster than many add_memory calls.

        Every item is checked first: one bad item rejects the whole batch, naming it (items[i]) and the field."""
        batch = [_interaction(item, i) for i, item in enumerate(items)]
        return out.Added(
            ids=await self._run(True, self.memory.add_interactions, batch, tenant=self.tenant_of(ctx))
        )

    async def search_memory(
        self, ctx: Context, query: Query, k: K = 10, as_of: AsOf = None, include_superseded: bool = False
    ) -> out.SearchResult:
        """Recall memories relevant to a question or topic, best first, with each one's time and validity.

        By default only facts still true now are returned; set as_of to ask what was true at a past time, or
        include_superseded=true to also see facts that were later replaced. A hit with `via` set was added
        because a stronger hit links to it."""
        hits = await self._run(
            False,
            self.memory.search,
            query,
            tenant=self.tenant_of(ctx),
            k=k,
            as_of=as_of,
            include_superseded=include_superseded,
        )
        return out.SearchResult(hits=[out.hit(h) for h in hits])

    async def get_memory(self, ctx: Context, id: Id) -> out.MemoryDetail:
        """Everything about one memory: text, time, keywords, tags, context, links, metadata and validity.

        Links point to related memories (get_memory them by id)."""
        return out.detail(await self._run(False, self.memory.get, id, tenant=self.tenant_of(ctx), note_id=id))

    async def update_memory(
        self,
        ctx: Context,
        id: Id,
        content: Text = None,
        speaker: Text = None,
        context: Text = None,
        keywords: Words = None,
        tags: Words = None,
        metadata: Annotated[
            dict[str, Any] | None, Field(description="New metadata (replaces the old), or omit to keep.")
        ] = None,
    ) -> out.MemoryDetail:
        """Correct a memory in place (only the fields you give change); the prior version is kept in memory_history."""
        given = {
            "content": content,
            "speaker": speaker,
            "context": context,
            "keywords": keywords,
            "tags": tags,
            "metadata": metadata,
        }
        fields = {name: value for name, value in given.items() if value is not None}
        if not fields:
            raise ToolError(f"give at least one field to change: {sorted(given)}")
        note = await self._run(True, self.memory.update, id, tenant=self.tenant_of(ctx), note_id=id, **fields)
        return out.detail(note)

    async def delete_memory(self, ctx: Context, id: Id) -> out.Deleted:
        """Forget a memory for good (privacy): it leaves search, links and history at once. Cannot be undone."""
        await self._run(True, self.memory.delete, id, tenant=self.tenant_of(ctx), note_id=id)
        return out.Deleted(id=id)

    async def memory_history(self, ctx: Context, id: Id) -> out.History:
        """How a memory changed over time: each prior version, oldest first, with what changed it and when."""
        versions = await self._run(False, self.memory.history, id, tenant=self.tenant_of(ctx), note_id=id)
        return out.History(id=id, versions=[out.version(v) for v in versions])

    async def list_memories(
        self,
        ctx: Context,
        cursor: Annotated[
            str | None, Field(description="next_cursor from the previous page; omit for the first page.")
        ] = None,
        limit: Limit = 50,
    ) -> out.Page:
        """Page through all memories, oldest stored first. Memories added while paging appear on a later page."""
        return await self._run(False, _page, self.memory, self.tenant_of(ctx), cursor, limit)

    async def memory_resource(self, note_id: str, ctx: Context) -> str:
        """One memory with its keywords, tags, context, links and validity, as JSON."""
        try:
            note = await self._run(
                False, self.memory.get, note_id, tenant=self.tenant_of(ctx), note_id=note_id
            )
        except ToolError as exc:
            raise ResourceNotFoundError(str(exc)) from None
        return json.dumps(out.detail(note).model_dump(mode="json"))

    async def _run(
        self, write: bool, fn: Callable[..., T], *args: Any, note_id: str | None = None, **kwargs: Any
    ) -> T:
        """fn in the read or write pool; what the caller can act on becomes a ToolError naming the field."""
        if write not in self._limiters:  # made here: a limiter belongs to the running event loop
            self._limiters[write] = anyio.CapacityLimiter(os.cpu_count() or 1)
        try:
            return await anyio.to_thread.run_sync(
                functools.partial(fn, *args, **kwargs), limiter=self._limiters[write]
            )
        except NotFound:
            raise ToolError(f"no memory with id {note_id!r} (field 'id')") from None
        except InputError as exc:
            raise ToolError(str(exc)) from None
        except StoreLocked:
            raise ToolError("the memory store is held by another writer; retry in a moment") from None
        except StoreError as exc:
            log.error("store error: %s", exc)
            raise ToolError("the memory store cannot be written right now") from None
        except LLMError as exc:
            log.error("LLM backend failed: %s", exc)
            raise ToolError(f"the LLM backend failed ({type(exc).__name__}); retry later") from None


def _interaction(item: MemoryItem, index: int) -> Interaction:
    try:
        return to_interaction(item.model_dump(exclude_none=True), where=f"items[{index}]")
    except InputError as exc:
        raise ToolError(str(exc)) from None


def _page(memory: MemoryLike, tenant: str, cursor: str | None, limit: int) -> out.Page:
    after = out.decode_cursor(cursor) if cursor else None
    page, more = memory.page(tenant, after=after, limit=limit)
    return out.Page(
        memories=[out.summary(n) for n in page],
        next_cursor=out.encode_cursor(out.order_key(page[-1])) if more else None,
    )
