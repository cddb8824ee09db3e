"""Continuous batching of `POST /v1/search` (engine/service/batcher.py) over a real Memory: searches that
queue while the worker is busy run as one `search_many` per tenant and options, each gets the hits it
would get alone, a bad query fails only its own request, and an overloaded queue still answers 503."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from bench.synthetic import chat, queries
from engine import Config, Memory
from engine.errors import InputError
from engine.service.batcher import SearchBatcher
from engine.service.guard import Overloaded


class Recording:
    """The Memory, with the size of every call the batcher makes."""

    def __init__(self, mem: Memory) -> None:
        self.mem, self.calls = mem, []  # type: ignore[var-annotated]

    def search(self, query: str, **options: Any) -> Any:
        self.calls.append(1)
        return self.mem.search(query, **options)

    def search_many(self, batch: list[str], **options: Any) -> Any:
        self.calls.append(len(batch))
        return self.mem.search_many(batch, **options)


@pytest.fixture(scope="module")
def mem() -> Iterator[Memory]:
    m = Memory()
    m.add_many(chat(300, seed=3), tenant="a")
    m.add_many(chat(300, seed=4), tenant="b")
    yield m
    m.close()


async def queued(batcher: SearchBatcher, searches: list[tuple[str, str]], **options: Any) -> list[Any]:
    """Run `searches` (query, tenant) while the only worker is held, so they all queue, then free it."""
    limiter = anyio.CapacityLimiter(1)
    await limiter.acquire()
    tasks = [asyncio.ensure_future(batcher.search(limiter, q, t, **options)) for q, t in searches]
    await asyncio.sleep(0.05)  # every task is now waiting for the worker
    limiter.release()
    return await asyncio.gather(*tasks, return_exceptions=True)


def test_queued_searches_run_as_one_batch_per_tenant(mem: Memory) -> None:
    backend = Recording(mem)
    batcher = SearchBatcher(backend, mem.config)
    batch = queries(6, seed=11)
    searches = [(q, "a") for q in batch] + [(q, "b") for q in batch[:3]]
    results = asyncio.run(queued(batcher, searches, k=5))
    assert sorted(backend.calls) == [3, 6]
    for (query, tenant), hits in zip(searches, results, strict=True):
        alone = mem.search(query, tenant=tenant, k=5)
        assert [h.note.id for h in hits] == [h.note.id for h in alone]


def test_other_options_are_another_batch(mem: Memory) -> None:
    backend = Recording(mem)
    batcher = SearchBatcher(backend, mem.config)

    async def scenario() -> None:
        limiter = anyio.CapacityLimiter(1)
        await limiter.acquire()
        a = [asyncio.ensure_future(batcher.search(limiter, q, "a", k=5)) for q in ("tea", "bike")]
        b = [asyncio.ensure_future(batcher.search(limiter, q, "a", k=3)) for q in ("tea", "bike")]
        await asyncio.sleep(0.05)
        limiter.release()
        got = await asyncio.gather(*a, *b)
        assert [len(h) for h in got] == [5, 5, 3, 3]

    asyncio.run(scenario())
    assert backend.calls == [2, 2]


def test_a_bad_query_fails_only_its_own_request(mem: Memory) -> None:
    batcher = SearchBatcher(mem, mem.config)
    results = asyncio.run(queued(batcher, [("bicycle", "a"), ("   ", "a"), ("piano", "a")]))
    assert isinstance(results[1], InputError) and results[1].field == "query"
    assert [h.note.id for h in results[0]] == [h.note.id for h in mem.search("bicycle", tenant="a")]
    assert results[2] and not isinstance(results[2], BaseException)


def test_overloaded_queue_is_refused_and_forgotten(mem: Memory) -> None:
    config = Config.of(max_waiting=0)
    batcher = SearchBatcher(mem, config)

    async def scenario() -> None:
        limiter = anyio.CapacityLimiter(1)
        await limiter.acquire()
        with pytest.raises(Overloaded):
            await batcher.search(limiter, "bicycle", "a")
        assert batcher._queued == {}  # nothing left behind for a later batch to run

    asyncio.run(scenario())


def test_the_others_get_answers_when_the_running_request_goes_away(mem: Memory) -> None:
    class Slow(Recording):
        def search_many(self, batch: list[str], **options: Any) -> Any:
            time.sleep(0.3)  # long enough to cancel the request that runs it
            return super().search_many(batch, **options)

    batcher = SearchBatcher(Slow(mem), mem.config)

    async def scenario() -> None:
        limiter = anyio.CapacityLimiter(1)
        await limiter.acquire()
        batch = ["bicycle", "piano", "kayak"]
        tasks = [asyncio.ensure_future(batcher.search(limiter, q, "a")) for q in batch]
        await asyncio.sleep(0.05)
        limiter.release()
        await asyncio.sleep(0.1)  # the first search now runs all three in a worker thread
        tasks[0].cancel()
        rest = await asyncio.gather(*tasks[1:])
        assert tasks[0].cancelled()
        for query, hits in zip(batch[1:], rest, strict=True):
            assert [h.note.id for h in hits] == [h.note.id for h in mem.search(query, tenant="a")]

    asyncio.run(scenario())
