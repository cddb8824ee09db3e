"""What stands between a request and the memory: a body cap, strict JSON, bounded queues, clean errors.

- `BodyGuard` (ASGI middleware) refuses a body past `ServiceConfig.max_request_bytes` with 413 before
  it is parsed (by Content-Length, or by counting a streamed body), and a JSON body with a duplicate key
  with 422, as the chat-log reader does: `{"k": 1, "k": 50}` must not mean whichever came last.
- `admit` bounds the work in flight: at most `max_waiting` requests wait for a worker, and none waits
  past `request_timeout_s`; past either the answer is 503 with Retry-After, so one slow request makes
  the others wait a bounded time instead of piling up behind it.
- `validation_error` is the one 422 body: each error's `loc` names the field, and the offending input
  is echoed only as a short excerpt (a lone surrogate is escaped, never a 500).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio
from fastapi import Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from engine.config import ServiceConfig

T = TypeVar("T")
EXCERPT_CHARS = 80
MAX_ERRORS = 20
RETRY_AFTER = {"Retry-After": "1"}


class Overloaded(Exception):
    """No worker free within the deadline, or too many requests already waiting."""


class BodyGuard:
    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "DELETE"):
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await _too_large(self.limit)(scope, receive, send)
            return
        body, more = bytearray(), True
        while more:  # a body without Content-Length is counted as it streams in
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.limit:
                await _too_large(self.limit)(scope, receive, send)
                return
        problem = _duplicate_key(bytes(body), scope)
        if problem is not None:
            await problem(scope, receive, send)
            return
        await self.app(scope, _replay(bytes(body)), send)


def _replay(body: bytes) -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


def _too_large(limit: int) -> JSONResponse:
    msg = f"request body over the limit of {limit} bytes"
    return JSONResponse({"detail": [{"type": "too_large", "loc": ["body"], "msg": msg}]}, status_code=413)


class _Duplicate(Exception):
    pass


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) < len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Duplicate(key)
            seen.add(key)
    return obj


def _duplicate_key(body: bytes, scope: Scope) -> JSONResponse | None:
    kind = dict(scope["headers"]).get(b"content-type", b"")
    if not body or b"json" not in kind:
        return None
    try:
        json.loads(body, object_pairs_hook=_unique)
    except _Duplicate as exc:
        key = excerpt(str(exc.args[0]))
        err = {"type": "duplicate_key", "loc": ["body", key], "msg": f"duplicate key {key!r}"}
        return JSONResponse({"detail": [err]}, status_code=422)
    except (ValueError, RecursionError):
        return None  # not JSON: FastAPI's own parser reports it
    return None


# --- admission ----------------------------------------------------------------------------
async def admit(
    limiter: anyio.CapacityLimiter, config: ServiceConfig, fn: Callable[..., T], *args: Any, **kwargs: Any
) -> T:
    """Run `fn` in a worker thread once `limiter` admits it, or raise Overloaded (-> 503, Retry-After)."""
    async with admitted(limiter, config):
        # The thread itself runs under anyio's default limiter; `limiter` is what bounds the work.
        return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs))


@asynccontextmanager
async def admitted(limiter: anyio.CapacityLimiter, config: ServiceConfig) -> AsyncIterator[None]:
    """Hold one of `limiter`'s places, or raise Overloaded when too many wait or none frees in time."""
    if limiter.available_tokens < 1 and limiter.statistics().tasks_waiting >= config.max_waiting:
        raise Overloaded("too many requests waiting")
    got = False
    with anyio.move_on_after(config.request_timeout_s):
        await limiter.acquire()
        got = True
    if not got:
        raise Overloaded(f"no worker free within {config.request_timeout_s:g} s")
    try:
        yield
    finally:
        limiter.release()


def overloaded(request: Request, exc: Overloaded) -> JSONResponse:
    return JSONResponse({"detail": f"the service is busy: {exc}; retry later"}, 503, headers=RETRY_AFTER)


# --- the one 422 ------------------------------------------------------------------------------
def excerpt(value: Any, chars: int = EXCERPT_CHARS) -> Any:
    """A short, always-encodable stand-in for an echoed input."""
    if isinstance(value, str):
        short = value if len(value) <= chars else value[:chars] + "..."
        return short.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, bool | int | float) or value is None:
        return value
    return excerpt(type(value).__name__)


def validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
    errors = list(exc.errors())
    out = [
        {
            "type": e.get("type", "value_error"),
            "loc": [excerpt(p) if isinstance(p, str) else p for p in e.get("loc", ())],
            "msg": excerpt(str(e.get("msg", "")), 4 * EXCERPT_CHARS),
            **({"input": excerpt(e["input"])} if "input" in e else {}),
        }
        for e in errors[:MAX_ERRORS]
    ]
    body: dict[str, Any] = {"detail": out}
    if len(errors) > MAX_ERRORS:
        body["more_errors"] = len(errors) - MAX_ERRORS
    return JSONResponse(jsonable_encoder(body), status_code=422)
