"""ASGI pieces of `amem serve --workers`: a reader forwards what it must not answer to the writer.

Forwarded as it came (method, path, query, headers, body streamed both ways), so the writer applies the
same authentication, limits and errors as on a direct request: writes, key administration and MCP (whose
sessions live in one process). A reader answers searches (single and batched) and GETs itself.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import httpx
from starlette.types import ASGIApp, Message, Receive, Scope, Send

READS = frozenset({"GET", "HEAD", "OPTIONS"})
_HOP_BY_HOP = {b"connection", b"keep-alive", b"transfer-encoding", b"host", b"upgrade", b"te", b"trailer"}
_NOT_PASSED_BACK = _HOP_BY_HOP | {b"date", b"server"}
"""Of the writer's answer: hop-by-hop headers, and those this process's own server adds again."""
WORKER_HEADER = b"x-amem-worker"
_UNREACHABLE = json.dumps({"detail": "the writer process is not reachable; retry later"}).encode()


def forwarded(method: str, path: str) -> bool:
    """Whether a reader sends this request to the writer."""
    if path == "/mcp" or path.startswith("/mcp/"):
        return True
    return method not in READS and path not in ("/v1/search", "/v1/search/batch")


class ForwardWrites:
    def __init__(self, app: ASGIApp, writer_url: str) -> None:
        self.app, self.writer_url = app, writer_url
        self._client: httpx.AsyncClient | None = None  # made on the serving loop, at first use

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not forwarded(scope["method"], scope["path"]):
            await self.app(scope, receive, send)
            return
        if self._client is None:
            # No read timeout: a write batch through an LLM backend may take minutes; the client's own
            # timeout bounds it.
            self._client = httpx.AsyncClient(
                base_url=self.writer_url, timeout=httpx.Timeout(None, connect=5.0)
            )
        path = scope["raw_path"].decode("latin-1") if scope.get("raw_path") else scope["path"]
        query = scope.get("query_string", b"").decode("latin-1")
        request = self._client.build_request(
            scope["method"],
            path + (f"?{query}" if query else ""),
            headers=[(k, v) for k, v in scope["headers"] if k.lower() not in _HOP_BY_HOP],
            content=_body(receive),
        )
        try:
            response = await self._client.send(request, stream=True)
        except httpx.TransportError:
            await _reply(send, 503, _UNREACHABLE)
            return
        try:
            headers = [(k, v) for k, v in response.headers.raw if k.lower() not in _NOT_PASSED_BACK]
            await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            await response.aclose()


async def _body(receive: Receive) -> AsyncIterator[bytes]:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        yield message.get("body", b"")
        if not message.get("more_body", False):
            return


async def _reply(send: Send, status: int, body: bytes) -> None:
    headers = [(b"content-type", b"application/json"), (b"retry-after", b"1")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


class WorkerHeader:
    """`X-Amem-Worker: <n>` on every answer: which process answered (0 is the writer; a request a reader
    forwarded keeps the writer's 0)."""

    def __init__(self, app: ASGIApp, index: int) -> None:
        self.app, self.value = app, str(index).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def tagged(message: Message) -> None:
            headers = message.get("headers", [])
            if message["type"] == "http.response.start" and all(k != WORKER_HEADER for k, _ in headers):
                message = {**message, "headers": [*headers, (WORKER_HEADER, self.value)]}
            await send(message)

        await self.app(scope, receive, tagged)
