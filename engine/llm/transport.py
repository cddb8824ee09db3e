"""A lean HTTP/1.1 keep-alive transport for httpx, on plain asyncio streams.

Why: measured on loopback, httpcore (with h11 and anyio underneath) spends ~1 ms of CPU per request
and scans its whole pool on every request; at 64+ requests in flight that CPU, not the server,
bounds a stage. This transport does only what an OpenAI-compatible JSON API needs: one request per
connection at a time, Content-Length or chunked bodies, keep-alive, TLS when the URL says https.
httpx still builds requests, applies timeouts' values, and hands back `httpx.Response`.

Errors are httpx's own (ConnectError, ReadTimeout, RemoteProtocolError...), so callers map them
exactly as they would with the default transport.
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque

import httpx

_MAX_HEADER_BYTES = 64 * 1024


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @property
    def is_usable(self) -> bool:
        return not self.reader.at_eof() and not self.writer.is_closing()

    def close(self) -> None:
        self.writer.close()


class LeanTransport(httpx.AsyncBaseTransport):
    """Keep-alive pool of at most `max_connections` idle connections to one origin."""

    def __init__(self, max_connections: int, tls: ssl.SSLContext | None = None) -> None:
        self._idle: deque[_Connection] = deque()
        self._max_idle = max_connections
        self._tls = tls

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeouts = request.extensions.get("timeout", {})
        conn, reused = await self._checkout(request, timeouts.get("connect"))
        try:
            response, keep = await self._exchange(conn, request, timeouts.get("read"))
        except httpx.RemoteProtocolError:
            conn.close()
            if not reused:
                raise
            # The server closed an idle keep-alive connection as we reused it: one fresh try.
            conn, _ = await self._checkout(request, timeouts.get("connect"), fresh=True)
            response, keep = await self._exchange(conn, request, timeouts.get("read"))
        except BaseException:
            conn.close()
            raise
        self._checkin(conn, keep)
        return response

    async def aclose(self) -> None:
        while self._idle:
            self._idle.popleft().close()

    async def _checkout(
        self, request: httpx.Request, timeout: float | None, fresh: bool = False
    ) -> tuple[_Connection, bool]:
        while self._idle and not fresh:
            conn = self._idle.pop()
            if conn.is_usable:
                return conn, True
            conn.close()
        url = request.url
        is_tls = url.scheme == "https"
        port = url.port or (443 if is_tls else 80)
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(
                    url.host,
                    port,
                    ssl=(self._tls or ssl.create_default_context()) if is_tls else None,
                    limit=_MAX_HEADER_BYTES,
                )
        except TimeoutError as exc:
            raise httpx.ConnectTimeout(f"connect to {url.host}:{port} timed out", request=request) from exc
        except OSError as exc:
            raise httpx.ConnectError(f"connect to {url.host}:{port}: {exc}", request=request) from exc
        return _Connection(reader, writer), False

    def _checkin(self, conn: _Connection, keep: bool) -> None:
        if keep and conn.is_usable and len(self._idle) < self._max_idle:
            self._idle.append(conn)
        else:
            conn.close()

    async def _exchange(
        self, conn: _Connection, request: httpx.Request, timeout: float | None
    ) -> tuple[httpx.Response, bool]:
        try:
            async with asyncio.timeout(timeout):
                conn.writer.write(_head(request) + await request.aread())
                await conn.writer.drain()
                return await _read_response(conn.reader, request)
        except TimeoutError as exc:
            raise httpx.ReadTimeout(f"no response from {request.url.host} in time", request=request) from exc
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
            raise httpx.RemoteProtocolError(f"connection broken: {exc!r}", request=request) from exc


def _head(request: httpx.Request) -> bytes:
    lines = [b"%s %s HTTP/1.1" % (request.method.encode(), request.url.raw_path)]
    lines += [b"%s: %s" % (name, value) for name, value in request.headers.raw]
    return b"\r\n".join(lines) + b"\r\n\r\n"


async def _read_response(reader: asyncio.StreamReader, request: httpx.Request) -> tuple[httpx.Response, bool]:
    head = await reader.readuntil(b"\r\n\r\n")
    status_line, *header_lines = head[:-4].split(b"\r\n")
    parts = status_line.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise httpx.RemoteProtocolError(f"bad status line {status_line[:80]!r}", request=request)
    headers = [tuple(line.split(b":", 1)) for line in header_lines]
    if any(len(h) != 2 for h in headers):
        raise httpx.RemoteProtocolError("malformed response header", request=request)
    pairs = [(name.strip(), value.strip()) for name, value in headers]
    fields = {name.lower(): value for name, value in pairs}
    status = int(parts[1])
    body = await _read_body(reader, status, fields, request)
    keep = body is not None and fields.get(b"connection", b"").lower() != b"close" and parts[0] != b"HTTP/1.0"
    if body is None:
        body = await reader.read()
    # The body is already decoded from its transfer encoding; stop httpx from decoding it again.
    pairs = [(n, v) for n, v in pairs if n.lower() != b"transfer-encoding"]
    return httpx.Response(status, headers=pairs, content=body, request=request), keep


async def _read_body(
    reader: asyncio.StreamReader, status: int, fields: dict[bytes, bytes], request: httpx.Request
) -> bytes | None:
    """The body bytes; None when it runs to the end of the connection (which then cannot be reused)."""
    if status in (204, 304) or status < 200 or request.method == "HEAD":
        return b""
    if b"chunked" in fields.get(b"transfer-encoding", b"").lower():
        chunks = []
        while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
            chunks.append(await reader.readexactly(size))
            await reader.readexactly(2)
        await reader.readuntil(b"\r\n")  # trailer section ends with an empty line
        return b"".join(chunks)
    if b"content-length" in fields:
        return await reader.readexactly(int(fields[b"content-length"]))
    return None
