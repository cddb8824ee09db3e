"""Async OpenAI-compatible client (chat completions, embeddings) and the HTTP backend built on it.

A stage sends all of its requests at once (asyncio.gather) so vLLM's continuous batching sees them
together. Admission is by requests in flight *and* by estimated tokens in flight: servers answer 429
when their KV cache fills, which depends on tokens, long before they run out of request slots.
Retryable faults (429, 5xx, connection errors) are retried with exponential backoff and jitter; the
gate is released while a request backs off, so the others keep the server busy. Not retried: a timeout
(the server still works the abandoned request; resending it would queue a second copy behind it) and
a rejection of the request's `response_format` (permanent). Every attempt counts as a call, a failed
one also as an error.

Dialects: servers disagree on the JSON-schema form of `response_format` (see `Dialect`). In 'auto' the
first request probes: json_schema, then json_object on a format rejection, then none; the others
wait for it and then use what worked. Timeouts: a server with fewer slots than requests in flight
queues the rest, so a request's timeout is scaled by in-flight over slots (llama.cpp's /props tells
its slots; `llm_server_slots` overrides).

The pipeline is synchronous, so the coroutines run on a private event loop in a daemon thread
(`LoopThread`): a sync caller blocks on a future, which works from a plain thread, a FastAPI worker
thread, or code that is itself inside a running event loop.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import re
import time
from collections.abc import Awaitable, Sequence
from typing import Any, TypeVar

import httpx

from engine.config import Config, Dialect
from engine.cost import CostMeter
from engine.errors import (
    ConfigError,
    LLMBadOutput,
    LLMError,
    LLMFormatRejected,
    LLMRetryable,
    LLMTimeout,
    LLMTruncated,
)
from engine.llm.gate import LoopThread, TokenGate
from engine.llm.prompts import Prompt, response_format
from engine.llm.transport import LeanTransport

T = TypeVar("T")

_HTTPX_LOG = logging.getLogger("httpx")
log = logging.getLogger(__name__)
_RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})
_MAX_RETRY_AFTER_S = 30.0
_NAMES_FORMAT = re.compile(r"response_format|json_schema|json_object", re.IGNORECASE)
"""A 4xx/5xx whose body names one of these rejects the request's format: retrying cannot help."""
_AUTO_ORDER = (Dialect.JSON_SCHEMA, Dialect.JSON_OBJECT, Dialect.NONE)


def estimate_tokens(prompt: Prompt, max_tokens: int) -> int:
    """Upper-bound guess of a request's KV footprint: ~4 chars per prompt token, plus the answer budget."""
    return sum(len(m["content"]) for m in prompt) // 4 + max_tokens


def api_base(url: str) -> str:
    """`http://host:8000` and `http://host:8000/v1/` both mean the OpenAI-style base `.../v1`."""
    url = url.rstrip("/")
    return url if url.endswith("/v1") else url + "/v1"


class OpenAIClient:
    """One OpenAI-compatible endpoint. Create, use and close it on a single event loop."""

    def __init__(self, config: Config, *, base_url: str, model: str, cost: CostMeter | None = None) -> None:
        if _HTTPX_LOG.level == logging.NOTSET:
            # httpx logs every request at INFO; at thousands of requests a batch that drowns real logs
            # whenever something (WordLlama does) puts the root logger at INFO. An explicit level wins.
            _HTTPX_LOG.setLevel(logging.WARNING)
        self.model = model
        self._config = config
        self._cost = cost
        self._gate = TokenGate(config.llm.max_in_flight, config.llm.max_tokens_in_flight)
        self._dialect: Dialect | None = None if config.llm.dialect is Dialect.AUTO else config.llm.dialect
        self._slots: int | None = config.llm.server_slots
        self._probe = asyncio.Lock()
        self._probe_failed = False
        self._http = httpx.AsyncClient(
            base_url=api_base(base_url),
            # identity: the lean transport hands bodies over as they come, undecoded
            headers={"Authorization": f"Bearer {config.llm.api_key}", "Accept-Encoding": "identity"},
            timeout=httpx.Timeout(config.llm.timeout_s),
            transport=LeanTransport(config.llm.max_in_flight),
        )

    async def chat(
        self, stage: str, prompt: Prompt, schema: dict[str, Any], max_tokens: int | None = None
    ) -> str:
        """The answer text; LLMTruncated when it hit `max_tokens` (default config.llm.max_tokens)."""
        if self._slots is None or (self._dialect is None and not self._probe_failed):
            async with self._probe:  # the first request settles slots and dialect; the rest wait for it
                if self._slots is None:
                    self._slots = await self._server_slots()
                if self._dialect is None and not self._probe_failed:
                    try:
                        return await self._probe_dialect(stage, prompt, schema, max_tokens)
                    except LLMError as exc:
                        # No answer at all (dead, overloaded): don't make every request wait its turn.
                        self._probe_failed = not isinstance(exc, LLMFormatRejected | LLMBadOutput)
                        raise
        if self._dialect is None:  # each request probes for itself, concurrently
            return await self._probe_dialect(stage, prompt, schema, max_tokens)
        return await self._chat_as(self._dialect, stage, prompt, schema, max_tokens)

    @property
    def dialect(self) -> Dialect | None:
        """The dialect in use (None until the first answer settles it in 'auto')."""
        return self._dialect

    async def _probe_dialect(
        self, stage: str, prompt: Prompt, schema: dict[str, Any], max_tokens: int | None
    ) -> str:
        for dialect in _AUTO_ORDER:
            try:
                text = await self._chat_as(dialect, stage, prompt, schema, max_tokens)
            except LLMFormatRejected:
                if dialect is _AUTO_ORDER[-1]:
                    raise
                log.warning("llm server rejects response_format %s; trying the next dialect", dialect.value)
                continue
            except LLMBadOutput:
                self._dialect = dialect  # answered 200: the format was accepted
                raise
            self._dialect = dialect
            return text
        raise AssertionError("unreachable")

    async def _chat_as(
        self, dialect: Dialect, stage: str, prompt: Prompt, schema: dict[str, Any], max_tokens: int | None
    ) -> str:
        budget = max_tokens or self._config.llm.max_tokens
        body: dict[str, Any] = {
            "model": self.model,
            "messages": prompt,
            "max_tokens": budget,
            "temperature": 0.0,
        }
        if (fmt := response_format(stage, schema, dialect)) is not None:
            body["response_format"] = fmt
        data, latency_s = await self._send(stage, estimate_tokens(prompt, budget), "/chat/completions", body)
        prompt_tokens, completion_tokens = _usage(data, prompt)
        # Recorded before the content is checked: a garbled answer still cost its tokens.
        self._record(
            stage,
            calls=1,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            latency_s=latency_s,
        )
        return _content(data, budget)

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        tokens = sum(len(t) for t in texts) // 4 + 1
        data, latency_s = await self._send(
            "embed", tokens, "/embeddings", {"model": self.model, "input": list(texts)}
        )
        vectors = _embeddings(data, len(texts))
        usage = data.get("usage") or {}
        self._record(
            "embed", calls=1, prompt_tokens=int(usage.get("prompt_tokens", tokens)), latency_s=latency_s
        )
        return vectors

    async def aclose(self) -> None:
        await self._http.aclose()

    def _record(self, stage: str, **amounts: float) -> None:
        if self._cost is not None:
            self._cost.record(stage, **amounts)

    async def _send(
        self, stage: str, tokens: int, path: str, body: dict[str, Any]
    ) -> tuple[dict[str, Any], float]:
        """The response JSON and the latency of the attempt that got it (time queued at the gate excluded)."""
        for attempt in range(self._config.llm.retries + 1):
            charged = await self._gate.acquire(tokens)
            started = time.perf_counter()
            try:
                return await _post(self._http, path, body, self._timeout()), time.perf_counter() - started
            except (LLMTimeout, LLMFormatRejected):
                self._record(stage, calls=1, errors=1)
                raise
            except LLMRetryable as exc:
                self._record(stage, calls=1, errors=1)
                if attempt == self._config.llm.retries:
                    raise
                delay = self._backoff(attempt, exc)
            except LLMError:
                self._record(stage, calls=1, errors=1)
                raise
            finally:
                self._gate.release(charged)
            self._record(stage, retries=1)
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")  # the loop returns or raises

    def _timeout(self) -> float:
        """The timeout of a request just admitted: the server works `slots` at a time, the rest queue."""
        slots = self._slots or self._config.llm.max_in_flight
        return self._config.llm.timeout_s * max(1, math.ceil(self._gate.num_requests / slots))

    async def _server_slots(self) -> int:
        """llama.cpp's GET /props `total_slots`; otherwise max_in_flight (no scaling)."""
        root = str(self._http.base_url).rstrip("/").removesuffix("/v1")
        try:
            response = await self._http.get(f"{root}/props", timeout=min(5.0, self._config.llm.timeout_s))
            slots = response.json().get("total_slots") if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError, AttributeError):
            slots = None
        return slots if isinstance(slots, int) and slots > 0 else self._config.llm.max_in_flight

    def _backoff(self, attempt: int, exc: LLMRetryable) -> float:
        # Full jitter around the exponential step keeps a burst of 429s from retrying in lockstep.
        delay = self._config.llm.backoff_s * (2**attempt) * (0.5 + random.random())
        retry_after = getattr(exc, "retry_after", None)
        return max(delay, min(retry_after, _MAX_RETRY_AFTER_S)) if retry_after else delay


class RetryableStatus(LLMRetryable):
    """429 / 5xx, carrying the server's Retry-After in seconds when it sent one."""

    def __init__(self, message: str, retry_after: float | None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


async def _post(http: httpx.AsyncClient, path: str, body: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    try:
        response = await http.post(path, json=body, timeout=timeout_s)
    except httpx.TimeoutException as exc:
        raise LLMTimeout(f"POST {path}: timed out after {timeout_s:.0f} s ({type(exc).__name__})") from exc
    except httpx.TransportError as exc:
        raise LLMRetryable(f"POST {path}: {type(exc).__name__}: {exc}") from exc
    if (
        response.status_code != 200
        and "response_format" in body
        and _NAMES_FORMAT.search(response.text[:4000])
    ):
        raise LLMFormatRejected(
            f"POST {path}: HTTP {response.status_code}: the server rejects this response_format: "
            f"{response.text[:300]}"
        )
    if response.status_code in _RETRYABLE_STATUS:
        raise RetryableStatus(f"POST {path}: HTTP {response.status_code}", _retry_after(response))
    if response.status_code != 200:
        raise LLMError(f"POST {path}: HTTP {response.status_code}: {response.text[:300]}")
    try:
        data = response.json()
    except ValueError as exc:
        raise LLMBadOutput(f"POST {path}: response body is not JSON") from exc
    if not isinstance(data, dict):
        raise LLMBadOutput(f"POST {path}: response body is not a JSON object")
    return data


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return float(response.headers["retry-after"])
    except (KeyError, ValueError):
        return None


def _content(data: dict[str, Any], max_tokens: int | None = None) -> str:
    try:
        choice = data["choices"][0]
        text = choice["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise LLMBadOutput("chat response has no choices[0].message.content") from None
    if not isinstance(text, str):
        raise LLMBadOutput("chat response content is not a string")
    if choice.get("finish_reason") == "length":
        raise LLMTruncated(f"answer cut off at max_tokens={max_tokens} (finish_reason 'length')")
    return text


def _usage(data: dict[str, Any], prompt: Prompt) -> tuple[int, int]:
    """(prompt, completion) tokens from the server's `usage`; estimated (~4 chars a token) where absent."""
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    prompt_tokens, completion_tokens = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if not isinstance(prompt_tokens, int):
        prompt_tokens = sum(len(m["content"]) for m in prompt) // 4
    if not isinstance(completion_tokens, int):
        try:
            completion_tokens = len(data["choices"][0]["message"]["content"]) // 4
        except (KeyError, IndexError, TypeError):
            completion_tokens = 0
    return prompt_tokens, completion_tokens


def _embeddings(data: dict[str, Any], n: int) -> list[list[float]]:
    rows = data.get("data")
    if not isinstance(rows, list) or len(rows) != n:
        raise LLMBadOutput(f"embeddings response: expected {n} rows in 'data'")
    try:
        ordered = sorted(rows, key=lambda row: row["index"])
        return [row["embedding"] for row in ordered]
    except (KeyError, TypeError):
        raise LLMBadOutput("embeddings response rows need 'index' and 'embedding'") from None


class HTTPBackend:
    """`complete_batch` over an OpenAI-compatible server (vLLM, SGLang, TGI, OpenAI...)."""

    name = "llm"

    def __init__(self, config: Config, cost: CostMeter) -> None:
        if not config.llm.url:
            raise ConfigError("the HTTP LLM backend needs llm_url (or AMEM_LLM_URL)")
        self._loop = LoopThread("amem-llm")
        url, model = config.llm.url, config.llm.model
        self._client = self._loop.create(lambda: OpenAIClient(config, base_url=url, model=model, cost=cost))

    def complete_batch(
        self, stage: str, prompts: Sequence[Prompt], schema: dict[str, Any], max_tokens: int | None = None
    ) -> list[str | LLMError]:
        """Every prompt's answer text, or the LLMError it ended with (same order)."""
        calls = [self._client.chat(stage, p, schema, max_tokens) for p in prompts]
        return self._loop.run(gather_llm(calls))

    def close(self) -> None:
        self._loop.run(self._client.aclose())
        self._loop.close()


async def gather_llm(calls: Sequence[Awaitable[T]]) -> list[T | LLMError]:
    """All calls concurrently; LLMErrors become per-item results, anything else is a bug and propagates."""
    results = await asyncio.gather(*calls, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException) and not isinstance(result, LLMError):
            raise result
    return results  # type: ignore[return-value]
