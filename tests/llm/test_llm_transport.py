"""LeanTransport against hand-written HTTP/1.1 responses: framing, keep-alive, broken connections."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import httpx
import pytest

from engine.llm.transport import LeanTransport

Reply = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def _read_request(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        (
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length")
        ),
        0,
    )
    return await reader.readexactly(length)


def _serve(reply: Reply, requests: list[tuple[str, bytes]]) -> list[httpx.Response]:
    """Start a raw server with `reply`, send `requests` one after another, return the responses."""

    async def scenario() -> list[httpx.Response]:
        server = await asyncio.start_server(reply, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        transport = LeanTransport(max_connections=4)
        out = []
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", transport=transport, timeout=2
        ) as client:
            for path, body in requests:
                out.append(await client.post(path, content=body))
        server.close()
        await server.wait_closed()
        return out

    return asyncio.run(scenario())


def test_content_length_and_keep_alive() -> None:
    connections = []

    async def reply(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(writer)
        while not reader.at_eof():
            try:
                body = await _read_request(reader)
            except asyncio.IncompleteReadError:
                break
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nX-A: b\r\n\r\n%s" % (len(body), body))
            await writer.drain()
        writer.close()

    got = _serve(reply, [("/a", b"one"), ("/b", b"two"), ("/c", b"")])
    assert [r.content for r in got] == [b"one", b"two", b""] and got[0].headers["x-a"] == "b"
    assert len(connections) == 1  # all three over one kept-alive connection


def test_chunked_and_read_to_close() -> None:
    async def reply(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        body = await _read_request(reader)
        if body == b"chunked":
            writer.write(
                b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{"a"\r\n3;x=1\r\n:1}\r\n0\r\n\r\n'
            )
        else:
            writer.write(b"HTTP/1.1 500 Oops\r\nConnection: close\r\n\r\nplain until close")
        await writer.drain()
        writer.close()

    chunked, closed = _serve(reply, [("/", b"chunked"), ("/", b"close")])
    assert chunked.json() == {"a": 1} and "transfer-encoding" not in chunked.headers
    assert (closed.status_code, closed.content) == (500, b"plain until close")


def test_server_closing_idle_connection_is_retried_on_a_fresh_one() -> None:
    async def reply(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")  # no Connection: close, yet closes
        await writer.drain()
        writer.close()

    assert [r.content for r in _serve(reply, [("/", b"x")] * 3)] == [b"ok"] * 3


def test_garbage_is_a_protocol_error() -> None:
    async def reply(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await _read_request(reader)
        writer.write(b"SSH-2.0-nope\r\n\r\n")
        await writer.drain()
        writer.close()

    with pytest.raises(httpx.RemoteProtocolError):
        _serve(reply, [("/", b"x")])


def test_read_timeout_and_refused_connection() -> None:
    async def reply(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(5)

    async def slow() -> None:
        server = await asyncio.start_server(reply, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        async with httpx.AsyncClient(transport=LeanTransport(2), timeout=0.2) as client:
            with pytest.raises(httpx.ReadTimeout):
                await client.post(f"http://127.0.0.1:{port}/", content=b"x")
        server.close()
        async with httpx.AsyncClient(transport=LeanTransport(2), timeout=0.2) as client:
            with pytest.raises(httpx.ConnectError):
                await client.post(f"http://127.0.0.1:{port}/", content=b"x")

    asyncio.run(slow())
