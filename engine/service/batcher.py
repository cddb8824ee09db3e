"""Searches that queue in the service run together: continuous batching for `POST /v1/search`.

A search that finds a read worker free runs at once, alone, so an idle service adds no wait. Under
load, searches queue for the workers; the one that gets a worker takes every search queued behind it
for the same tenant and options (at most `RecallConfig.max_batch_queries`) and runs them as one
`search_many`: one encoder call and one pass over the tenant's vectors, and one thread hop, for all of
them. The others find their answers ready when their turn comes. Hand-written: the batching rule is
the service's own (per tenant and options, no timer), not something a library offers.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import anyio

from engine.config import Config
from engine.errors import InputError
from engine.model.note import Hit
from engine.service.guard import Overloaded, admitted


@dataclass(slots=True, eq=False)
class _Search:
    query: str
    answer: asyncio.Future[list[Hit]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class SearchBatcher:
    def __init__(self, backend: Any, config: Config) -> None:
        self.backend, self.config = backend, config
        self._queued: dict[tuple[Any, ...], list[_Search]] = {}

    async def search(
        self, limiter: anyio.CapacityLimiter, query: str, tenant: str, **options: Any
    ) -> list[Hit]:
        key = (tenant, *sorted(options.items()))
        mine = _Search(query)
        self._queued.setdefault(key, []).append(mine)
        try:
            async with admitted(limiter, self.config.service):
                if self._waiting(key, mine):
                    await self._run(self._take(key), tenant, options)
        except Overloaded:
            if self._waiting(key, mine):  # else a batch took it meanwhile: its answer is coming
                self._drop(key, mine)
                raise
        except BaseException:
            self._drop(key, mine)
            raise
        return await mine.answer

    def _waiting(self, key: tuple[Any, ...], search: _Search) -> bool:
        return search in self._queued.get(key, ())

    def _take(self, key: tuple[Any, ...]) -> list[_Search]:
        queue = self._queued[key]
        batch = queue[: self.config.recall.max_batch_queries]
        del queue[: len(batch)]
        if not queue:
            del self._queued[key]
        return batch

    def _drop(self, key: tuple[Any, ...], search: _Search) -> None:
        if self._waiting(key, search):
            queue = self._queued[key]
            queue.remove(search)
            if not queue:
                del self._queued[key]

    async def _run(self, batch: list[_Search], tenant: str, options: dict[str, Any]) -> None:
        # A task of its own: if the request that runs the batch goes away, the others still get answers.
        work = asyncio.ensure_future(
            anyio.to_thread.run_sync(self._search_many, [s.query for s in batch], tenant, options)
        )
        work.add_done_callback(lambda done: _deliver(batch, done))
        await asyncio.wait([work])  # unlike awaiting the task, cancelling this wait leaves the work running

    def _search_many(self, queries: list[str], tenant: str, options: dict[str, Any]) -> list[Any]:
        """Each query's hits, or the InputError that query alone raises."""
        if len(queries) == 1 or not hasattr(self.backend, "search_many"):
            return [self._alone(q, tenant, options) for q in queries]
        try:
            return list(self.backend.search_many(queries, tenant=tenant, **options))
        except InputError:  # one query is bad: each answers alone, so only its sender gets the error
            return [self._alone(q, tenant, options) for q in queries]

    def _alone(self, query: str, tenant: str, options: dict[str, Any]) -> Any:
        try:
            return self.backend.search(query, tenant=tenant, **options)
        except InputError as exc:
            return exc


def _deliver(batch: list[_Search], done: asyncio.Future[list[Any]]) -> None:
    """Each search its hits, or its own InputError; a failure of the whole batch to all of them."""
    failed = done.exception()
    for search, hits in zip(batch, [failed] * len(batch) if failed else done.result(), strict=True):
        if search.answer.done():
            continue
        if isinstance(hits, BaseException):
            search.answer.set_exception(hits)
        else:
            search.answer.set_result(hits)
