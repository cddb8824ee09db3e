"""`amem mcp` as a real child process, driven by the official MCP client over stdio."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

from engine import Config, Memory
from tests.service.mcp_calls import call, error

ROOT = Path(__file__).resolve().parents[2]
AMEM = Path(sys.executable).parent / "amem"
TOOLS = {
    "add_memory",
    "add_memories",
    "search_memory",
    "get_memory",
    "update_memory",
    "delete_memory",
    "memory_history",
    "list_memories",
}


@asynccontextmanager
async def amem_mcp(store: Path, tenant: str = "maya") -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=str(AMEM),
        args=["mcp", "--store", str(store), "--tenant", tenant],
        env={"PYTHONPATH": str(ROOT), "PYTHONWARNINGS": "ignore"},
        cwd=str(ROOT),
    )
    with open(os.devnull, "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


def test_stdio_tools_add_search_as_of_history_delete(tmp_path: Path) -> None:
    store = tmp_path / "store"

    async def scenario() -> None:
        async with amem_mcp(store) as s:
            listed = {t.name: t for t in (await s.list_tools()).tools}
            assert set(listed) == TOOLS
            assert listed["search_memory"].input_schema["properties"]["k"]["maximum"] == 100
            assert listed["delete_memory"].annotations.destructive_hint  # type: ignore[union-attr]
            assert "Remember one thing" in (listed["add_memory"].description or "")

            added = await call(
                s, "add_memory", content="Maya adopted a cat named Miso", timestamp="2024-06-01T10:00:00Z"
            )
            (cat,) = added["ids"]
            # Acknowledged means logged: another reader of the store sees it while the server still runs.
            with Memory(store, Config.of(read_only=True)) as reader:
                assert reader.get(cat, tenant="maya").content == "Maya adopted a cat named Miso"
            batch = await call(
                s,
                "add_memories",
                items=[
                    {"content": "Maya works as a nurse in Porto", "timestamp": 1700000000, "speaker": "maya"},
                    {"content": "Leo plays the cello", "metadata": {"source": "chat"}},
                ],
            )
            assert len(batch["ids"]) == 2

            hits = (await call(s, "search_memory", query="what pet does Maya have", k=3))["hits"]
            assert hits[0]["id"] == cat and hits[0]["validity"]["invalid_at"] is None
            assert set(hits[0]) >= {"id", "content", "score", "time", "validity", "via"}
            before = await call(s, "search_memory", query="Maya cat Miso", as_of="2024-01-01T00:00:00Z")
            assert cat not in [h["id"] for h in before["hits"]]  # not yet true then
            after = await call(s, "search_memory", query="Maya cat Miso", as_of="2024-07-01T00:00:00Z")
            assert cat in [h["id"] for h in after["hits"]]

            note = await call(s, "update_memory", id=cat, content="Maya adopted a cat named Mochi")
            assert note["version"] == 2 and note["content"].endswith("Mochi")
            history = await call(s, "memory_history", id=cat)
            assert [v["stage"] for v in history["versions"]] == ["update"]
            assert history["versions"][0]["before"]["content"].endswith("Miso")
            detail = await call(s, "get_memory", id=cat)
            assert detail["keywords"] and {"tags", "context", "links", "validity"} <= set(detail)
            read = await s.read_resource(f"memory://{cat}")
            assert json.loads(read.contents[0].text)["id"] == cat  # type: ignore[union-attr]

            assert (await call(s, "delete_memory", id=cat)) == {"id": cat, "deleted": True}
            assert "no memory with id" in await error(s, "get_memory", id=cat)
            left = await call(s, "search_memory", query="Maya cat", k=10)
            assert cat not in [h["id"] for h in left["hits"]]

    anyio.run(scenario)


def test_stdio_bad_input_is_a_tool_error_naming_the_field(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with amem_mcp(tmp_path / "store") as s:
            await call(s, "add_memory", content="Maya likes green tea")
            assert "query" in await error(s, "search_memory", query="")
            assert "field 'query'" in await error(s, "search_memory", query="   ")
            assert "k" in (await error(s, "search_memory", query="tea", k=0)).split("\n")[1]
            assert "k" in (await error(s, "search_memory", query="tea", k=1000)).split("\n")[1]
            assert "field 'as_of'" in await error(s, "search_memory", query="tea", as_of="yesterday-ish")
            assert "field 'timestamp'" in await error(s, "add_memory", content="x", timestamp="32/13/2024")
            bad_batch = await error(s, "add_memories", items=[{"content": "ok"}, {"content": " "}])
            assert "items[1]" in bad_batch and "field 'content'" in bad_batch
            assert "no memory with id 'nope'" in await error(s, "get_memory", id="nope")
            assert "no memory with id" in await error(s, "memory_history", id="nope")
            assert "no memory with id" in await error(s, "delete_memory", id="nope")
            assert "at least one field" in await error(s, "update_memory", id="nope")
            assert "field 'cursor'" in await error(s, "list_memories", cursor="not-a-cursor")
            # The server survived all of that, and nothing bad was written.
            hits = (await call(s, "search_memory", query="green tea"))["hits"]
            assert [h["content"] for h in hits] == ["Maya likes green tea"]

    anyio.run(scenario)


def test_stdio_list_memories_pages_with_a_stable_cursor(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with amem_mcp(tmp_path / "store") as s:
            items = [{"content": f"fact number {i} about topic {i * 7}"} for i in range(7)]
            ids = (await call(s, "add_memories", items=items))["ids"]
            first = await call(s, "list_memories", limit=3)
            await call(s, "add_memory", content="a note added while paging")
            seen = [m["id"] for m in first["memories"]]
            cursor = first["next_cursor"]
            while cursor:
                page = await call(s, "list_memories", cursor=cursor, limit=3)
                seen += [m["id"] for m in page["memories"]]
                cursor = page["next_cursor"]
            assert set(seen[:7]) == set(ids) and len(seen) == len(set(seen)) == 8  # no repeat, no gap
            assert seen[-1] not in ids  # the late note comes last

    anyio.run(scenario)
