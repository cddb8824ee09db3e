"""Async OpenAI-compatible client (chat completions, embeddings) and the HTTP backend built on it.

A stage sends all of its requests at once (asyncio.gather) so vLLM's continuous batching sees them
together. Admission is by requests in flight *and* by estimated tokens in flight: servers answer 429
when their KV cache fills, which depends on tokens, long before they run out of request slots.
Retryable faults (429, 5xx, timeouts, connection errors) are retried with exponential backoff and
jitter; the gate is released while a request backs off, so the others keep the server busy.

The pipeline is synchronous, so the coroutines run on a private event loop in a daemon thread
(`LoopThread`): a sync caller blocks on a future, which works from a plain thread, a FastAPI worker
thread, or code that is itself inside a running event loop.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import random
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, TypeVar

import httpx

from engine.config import Config
from engine.cost import CostMeter
from engine.errors import ConfigError, LLMBadOutput, LLMError, LLMRetryable
from engine.llm.prompts import Prompt, response_format
from engine.llm.transport import LeanTransport

T = TypeVar("T")

_HTTPX_LOG = logging.getLogger("httpx")
_RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})
_MAX_RETRY_AFTER_S = 30.0


def estimate_tokens(prompt: Prompt, max_tokens: int) -> int:
    """Upper-bound guess of a request's KV footprint: ~4 chars per prompt token, plus the answer budget."""
    return sum(len(m["content"]) for m in prompt) // 4 + max_tokens


def api_base(url: str) -> str:
    """`http://host:8000` and `http://host:8000/v1/` both mean the OpenAI-style base `.../v1`."""
    url = url.rstrip("/")
    return url if url.endswith("/v1") else url + "/v1"


class TokenGate:
    """Admits requests first come, first served, while requests and estimated tokens in flight fit."""

    def __init__(self, max_requests: int, max_tokens: int) -> None:
        self.max_requests = max_requests
        self.max_tokens = max_tokens
        self.num_requests = 0
        self.num_tokens = 0
        # A FIFO of parked requests, woken only when they fit: a Condition.notify_all would wake every
        # waiter on every release, quadratic work with hundreds of requests parked.
        self._waiters: collections.deque[tuple[int, asyncio.Future[None]]] = collections.deque()

    def _fits(self, tokens: int) -> bool:
        return self.num_requests < self.max_requests and self.num_tokens + tokens <= self.max_tokens

    def _take(self, tokens: int) -> None:
        self.num_requests += 1
        self.num_tokens += tokens

    async def acquire(self, tokens: int) -> int:
        """Waits until admitted; returns the tokens charged (a request bigger than the budget runs alone)."""
        tokens = min(tokens, self.max_tokens)
        if not self._waiters and self._fits(tokens):
            self._take(tokens)
            return tokens
        admitted = asyncio.get_running_loop().create_future()
        self._waiters.append((tokens, admitted))
        try:
            await admitted
        except asyncio.CancelledError:
            if admitted.done() and not admitted.cancelled():
                self.release(tokens)  # admitted, then cancelled before it could run: give the slot back
            raise
        return tokens

    def release(self, tokens: int) -> None:
        self.num_requests -= 1
        self.num_tokens -= tokens
        while self._waiters and self._fits(self._waiters[0][0]):
            waiting, admitted = self._waiters.popleft()
            if not admitted.done():  # skip waiters that were cancelled while parked
                self._take(waiting)
                admitted.set_result(None)


class LoopThread:
    """A private event loop on a daemon thread; `run` blocks the calling thread until a coroutine is done."""

    def __init__(self, name: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("LoopThread.run called from its own loop (would deadlock); await instead")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def create(self, factory: Callable[[], T]) -> T:
        """Runs a constructor on the loop thread, so loop-bound state is created where it is used."""
        return self.run(_call(factory))

    def close(self) -> None:
        if self._loop.is_closed():
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()


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
        self._http = httpx.AsyncClient(
            base_url=api_base(base_url),
            # identity: the lean transport hands bodies over as they come, undecoded
            headers={"Authorization": f"Bearer {config.llm.api_key}", "Accept-Encoding": "identity"},
            timeout=httpx.Timeout(config.llm.timeout_s),
            transport=LeanTransport(config.llm.max_in_flight),
        )

    async def chat(self, stage: str, prompt: Prompt, schema: dict[str, Any]) -> str:
        body = {
            "model": self.model,
            "messages": prompt,
            "max_tokens": self._config.llm.max_tokens,
            "temperature": 0.0,
            "response_format": response_format(stage, schema),
        }
        tokens = estimate_tokens(prompt, self._config.llm.max_tokens)
        data, latency_s = await self._send(stage, tokens, "/chat/completions", body)
        prompt_tokens, completion_tokens = _usage(data, prompt)
        # Recorded before the content is checked: a garbled answer still cost its tokens.
        self._record(
            stage,
            calls=1,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            latency_s=latency_s,
        )
        return _content(data)

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
                return await _post(self._http, path, body), time.perf_counter() - started
            except LLMRetryable as exc:
                if attempt == self._config.llm.retries:
                    raise
                delay = self._backoff(attempt, exc)
            finally:
                self._gate.release(charged)
            self._record(stage, retries=1)
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")  # the loop returns or raises

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


async def _post(http: httpx.AsyncClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    try:
        response = await http.post(path, json=body)
    except httpx.TimeoutException as exc:
        raise LLMRetryable(f"POST {path}: timed out ({type(exc).__name__})") from exc
    except httpx.TransportError as exc:
        raise LLMRetryable(f"POST {path}: {type(exc).__name__}: {exc}") from exc
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


def _content(data: dict[str, Any]) -> str:
    try:
        text = data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise LLMBadOutput("chat response has no choices[0].message.content") from None
    if not isinstance(text, str):
        raise LLMBadOutput("chat response content is not a string")
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
            completion_tokens = len(_content(data)) // 4
        except LLMBadOutput:
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
        self, stage: str, prompts: Sequence[Prompt], schema: dict[str, Any]
    ) -> list[str | LLMError]:
        """Every prompt's answer text, or the LLMError it ended with (same order)."""
        return self._loop.run(gather_llm([self._client.chat(stage, p, schema) for p in prompts]))

    def close(self) -> None:
        self._loop.run(self._client.aclose())
        self._loop.close()


async def _call(factory: Callable[[], T]) -> T:
    return factory()


async def gather_llm(calls: Sequence[Awaitable[T]]) -> list[T | LLMError]:
    """All calls concurrently; LLMErrors become per-item results, anything else is a bug and propagates."""
    results = await asyncio.gather(*calls, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException) and not isinstance(result, LLMError):
            raise result
    return results  # type: ignore[return-value]
