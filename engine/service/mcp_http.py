"""MCP over streamable HTTP at `/mcp` in the recall app, where the API key picks the tenant as in REST.

The key is checked twice on purpose: at the HTTP layer, so a request without a valid key gets the
REST service's 401 before any MCP session exists, and again per tool call from that call's own
request headers, so a session id never carries one key's tenant over to a request made with another.
Without a keys file (loopback only, see engine/service/run.py) the tenant comes from the
X-Amem-Tenant header, default 'default', and the SDK's DNS-rebinding guard is on: an open local
server is what a rebinding web page would aim at. With keys every request must authenticate anyway,
so the guard (which only admits localhost Host headers) stays off and `--host 0.0.0.0` works.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from engine.errors import TenantError
from engine.model.tenant_name import validate_tenant
from engine.service.keys import KeyStore
from engine.service.mcp_tools import build_server

log = logging.getLogger("amem.mcp")
PATH = "/mcp"
OPEN_TENANT_HEADER = "X-Amem-Tenant"
"""The same header the REST app reads without a keys file (engine/service/app.py)."""
NEEDS = ("add_interactions", "search", "get", "history", "update", "delete", "page")


def mount_mcp(app: FastAPI, backend: Any, keys: KeyStore | None, stateless: bool = False) -> None:
    """Serve MCP at /mcp over `backend`, running the SDK's session manager inside the app's lifespan.

    `stateless`: every request stands alone (no MCP session ids), for replicas behind a proxy that sends
    each request to any of them. A backend without the whole Memory surface gets no /mcp."""
    missing = [name for name in NEEDS if not hasattr(backend, name)]
    if missing:
        log.info("no MCP endpoint: the backend lacks %s", missing)
        return
    server = build_server(backend, lambda ctx: _tenant(keys, ctx.headers or {}, ToolError))
    server.streamable_http_app(  # makes the manager
        json_response=True, stateless_http=stateless, transport_security=_security(keys)
    )
    manager = server.session_manager
    app.router.routes.append(
        Route(PATH, endpoint=_Authenticated(manager, keys), methods=["GET", "POST", "DELETE"])
    )
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(a: Any) -> AsyncIterator[Any]:
        async with inner(a) as state, manager.run():  # the manager stops first, then the app closes memory
            yield state

    app.router.lifespan_context = lifespan


def _security(keys: KeyStore | None) -> TransportSecuritySettings:
    if keys is not None:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )


def presented_key(headers: Mapping[str, str]) -> str | None:
    """`Authorization: Bearer <key>` or `X-API-Key: <key>`, as the REST endpoints take it."""
    auth = headers.get("authorization", "")
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip() or None
    return headers.get("x-api-key") or None


def _tenant(keys: KeyStore | None, headers: Mapping[str, str], error: type[Exception]) -> str:
    """The caller's tenant, or `error` saying why there is none."""
    if keys is None:
        try:
            return validate_tenant(
                headers.get(OPEN_TENANT_HEADER.lower(), "default"), field=OPEN_TENANT_HEADER
            )
        except TenantError as exc:
            raise error(str(exc)) from None
    key = presented_key(headers)
    if key is None:
        raise error("missing API key (Authorization: Bearer <key>)")
    tenant = keys.tenant_for(key)
    if tenant is None:
        raise error("invalid API key")
    return tenant


class _Unauthorized(Exception):
    pass


class _Authenticated:
    """ASGI endpoint: 401 (as REST answers it) unless the request names a tenant, then the SDK's handler."""

    def __init__(self, manager: StreamableHTTPSessionManager, keys: KeyStore | None) -> None:
        self.manager, self.keys = manager, keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        try:
            _tenant(self.keys, headers, _Unauthorized)
        except _Unauthorized as exc:
            if self.keys is None:  # open mode: the only failure is a bad tenant header
                response = JSONResponse({"detail": str(exc)}, status_code=400)
            else:
                response = JSONResponse(
                    {"detail": str(exc)}, status_code=401, headers={"WWW-Authenticate": "Bearer"}
                )
            await response(scope, receive, send)
            return
        await self.manager.handle_request(scope, receive, send)
