"""MCP at /mcp of the recall app, over real uvicorn on loopback, with the SDK's streamable-HTTP client."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from engine.service import create_app
from tests.service.live import serve
from tests.service.mcp_calls import call, error

ALICE, BOB = "alice-key-0123456789", "bob-key-0123456789ab"


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    keys = tmp_path_factory.mktemp("keys") / "keys.json"
    keys.write_text(json.dumps({"admin_key": "admin-key-0123456789", "keys": {ALICE: "alice", BOB: "bob"}}))
    yield from serve(create_app(tmp_path_factory.mktemp("store"), keys))


@asynccontextmanager
async def session(url: str, key: str = "", **headers: str) -> AsyncIterator[ClientSession]:
    if key:
        headers["Authorization"] = f"Bearer {key}"
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as s,
    ):
        await s.initialize()
        yield s


def test_http_tools_add_search_as_of_history_delete(base_url: str) -> None:
    async def scenario() -> None:
        async with session(base_url, ALICE) as s:
            names = {t.name for t in (await s.list_tools()).tools}
            assert {"add_memory", "search_memory", "memory_history", "list_memories"} <= names
            (note,) = (await call(s, "add_memory", content="Alice runs marathons", timestamp="2024-03-01"))[
                "ids"
            ]
            hits = (await call(s, "search_memory", query="what sport does Alice do"))["hits"]
            assert hits[0]["id"] == note
            early = await call(s, "search_memory", query="Alice marathons", as_of="2024-02-01T00:00:00Z")
            assert note not in [h["id"] for h in early["hits"]]
            await call(s, "update_memory", id=note, tags=["sport"])
            assert [v["stage"] for v in (await call(s, "memory_history", id=note))["versions"]] == ["update"]
            assert (await error(s, "search_memory", query="x", k=-1)).split("\n")[1] == "k"
            await call(s, "delete_memory", id=note)
            assert f"no memory with id {note!r}" in await error(s, "get_memory", id=note)

    anyio.run(scenario)


def test_http_tenants_are_isolated_by_key(base_url: str) -> None:
    async def scenario() -> None:
        async with session(base_url, ALICE) as alice:
            (secret,) = (await call(alice, "add_memory", content="Alice's locker code is 4812"))["ids"]
        async with session(base_url, BOB) as bob:
            hits = (await call(bob, "search_memory", query="locker code", k=50))["hits"]
            assert secret not in [h["id"] for h in hits]
            # Another tenant's id reads exactly like an id that never existed.
            for tool in ("get_memory", "memory_history", "delete_memory"):
                theirs = await error(bob, tool, id=secret)
                missing = await error(bob, tool, id="0" * 32)
                assert theirs.replace(secret, "ID") == missing.replace("0" * 32, "ID")
            assert secret not in json.dumps(await call(bob, "list_memories", limit=200))
        async with session(base_url, ALICE) as alice:  # and Bob's attempts changed nothing
            assert (await call(alice, "get_memory", id=secret))["content"] == "Alice's locker code is 4812"

    anyio.run(scenario)


def test_http_mcp_and_rest_share_the_tenant(base_url: str) -> None:
    async def scenario() -> str:
        async with session(base_url, BOB) as bob:
            return str((await call(bob, "add_memory", content="Bob prefers window seats"))["ids"][0])

    note = anyio.run(scenario)
    rest = httpx.get(f"{base_url}/v1/memories/{note}", headers={"Authorization": f"Bearer {BOB}"}, timeout=30)
    assert rest.status_code == 200 and rest.json()["content"] == "Bob prefers window seats"


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer not-a-real-key-000000"}])
def test_http_mcp_without_a_valid_key_is_401(base_url: str, headers: dict[str, str]) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    accept = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    r = httpx.post(f"{base_url}/mcp", json=body, headers=headers | accept, timeout=30)
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"


def test_http_without_keys_takes_the_tenant_header_on_loopback_only(tmp_path: Path) -> None:
    """No keys file (local development): X-Amem-Tenant picks the tenant, and the DNS-rebinding guard
    turns away a request whose Host is not loopback (what a rebinding web page would send)."""
    served = serve(create_app(tmp_path / "store", None))
    url = next(served)

    async def scenario() -> None:
        async with session(url, **{"X-Amem-Tenant": "t1"}) as one:
            (note,) = (await call(one, "add_memory", content="t1 keeps bees"))["ids"]
        async with session(url, **{"X-Amem-Tenant": "t2"}) as two:
            assert "no memory with id" in await error(two, "get_memory", id=note)

    try:
        anyio.run(scenario)
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
        headers = {"Host": "evil.example", "Accept": "application/json, text/event-stream"}
        assert httpx.post(f"{url}/mcp", json=body, headers=headers, timeout=30).status_code == 421
        bad_tenant = httpx.post(f"{url}/mcp", json=body, headers={"X-Amem-Tenant": "../x"}, timeout=30)
        assert bad_tenant.status_code == 400 and "X-Amem-Tenant" in bad_tenant.text
    finally:
        next(served, None)
