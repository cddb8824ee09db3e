"""Admission and threading for the async LLM client.

`TokenGate` admits requests while requests *and* estimated tokens in flight fit (servers answer 429 when
their KV cache fills, which depends on tokens). `LoopThread` runs the client's coroutines on a private
event loop in a daemon thread, so a synchronous caller can block on them from anywhere.
"""

from __future__ import annotations

import asyncio
import collections
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


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


async def _call(factory: Callable[[], T]) -> T:
    return factory()
