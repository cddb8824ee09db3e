"""The HTTP answer to each of the engine's errors (and to the service's own: overload, validation).

Bodies never echo server paths or another tenant's data: the operator reads the details in the log.
"""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from engine.errors import ConfigError, InputError, LLMError, NotFound, StoreError, StoreLocked, TooLarge
from engine.service.guard import RETRY_AFTER, Overloaded, excerpt, overloaded, validation_error

log = logging.getLogger("amem.service")
NOT_FOUND = "note not found"


def add_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(InputError, _input_error)  # type: ignore[arg-type]
    app.add_exception_handler(NotFound, _not_found)  # type: ignore[arg-type]
    app.add_exception_handler(StoreError, _store_error)  # type: ignore[arg-type]
    app.add_exception_handler(LLMError, _llm_error)  # type: ignore[arg-type]
    app.add_exception_handler(ConfigError, _config_error)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, validation_error)  # type: ignore[arg-type]
    app.add_exception_handler(Overloaded, overloaded)  # type: ignore[arg-type]


def _input_error(_: Request, exc: InputError) -> JSONResponse:
    parts = ["body", *exc.field.split(".")] if exc.field else ["body"]
    loc = [int(p) if p.isdigit() else p for p in parts]
    kind, status = ("too_large", 413) if isinstance(exc, TooLarge) else ("value_error", 422)
    return JSONResponse({"detail": [{"type": kind, "loc": loc, "msg": excerpt(str(exc), 320)}]}, status)


KEYS_BROKEN = "the API keys file cannot be used; the server log says why"


def _config_error(request: Request, exc: ConfigError) -> JSONResponse:
    # Fail closed, and keep server paths out of the answer: the operator reads them in the log.
    log.error("%s %s: %s", request.method, request.url.path, exc)
    return JSONResponse({"detail": KEYS_BROKEN}, status_code=503, headers=RETRY_AFTER)


def _not_found(_: Request, exc: NotFound) -> JSONResponse:
    # One body for "never existed" and "another tenant's": the message would otherwise tell them apart.
    return JSONResponse({"detail": NOT_FOUND}, status_code=404)


def _store_error(request: Request, exc: StoreError) -> JSONResponse:
    log.error("%s %s: %s", request.method, request.url.path, exc)
    busy = isinstance(exc, StoreLocked)
    detail = (
        "the tenant's store is held by another writer; retry later" if busy else "the store cannot be written"
    )
    return JSONResponse({"detail": detail}, status_code=503, headers={"Retry-After": "1"} if busy else None)


def _llm_error(request: Request, exc: LLMError) -> JSONResponse:
    log.error("%s %s: %s", request.method, request.url.path, exc)
    return JSONResponse({"detail": f"the LLM backend failed: {type(exc).__name__}"}, status_code=502)
