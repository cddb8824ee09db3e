"""Load generators for bench/service.py, over aiohttp against `POST /v1/search`.

- closed loop (`closed_loop`): N clients, each sending its next search when the last one answered: the
  server's throughput, and the latency of a queue N deep;
- open loop (`open_loop`): searches arrive at a set rate (Poisson), whatever the server's pace: the latency
  agents see at that load. Each latency counts from the request's scheduled start, so a server that
  stalls is charged for the requests that waited (no coordinated omission).

aiohttp, not httpx: httpx's async pool spends more CPU per request than the server does, and client and
server share the cores (aiohttp comes with ray[default]).
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from bench.synthetic import queries

MAX_REQUESTS = 2_000_000
"""Hard cap on requests, whatever the duration (the load must stop by itself)."""


@dataclass(slots=True)
class Tally:
    deadline: float
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def is_running(self) -> bool:
        return time.perf_counter() < self.deadline and len(self.latencies) + len(self.errors) < MAX_REQUESTS


async def closed_loop(
    url: str, keys: dict[str, str], clients: int, seconds: float, seed: int, big: int = 0
) -> dict[str, Any]:
    import aiohttp

    connector = aiohttp.TCPConnector(limit=clients + 1)
    async with aiohttp.ClientSession(
        url, connector=connector, timeout=aiohttp.ClientTimeout(total=120)
    ) as http:
        tally = Tally(deadline=time.perf_counter() + seconds)
        slow = Tally(deadline=tally.deadline)
        started = time.perf_counter()
        await asyncio.gather(
            *(_client(http, keys, tally, random.Random(seed * 1000 + i)) for i in range(clients)),
            *([_big_client(http, keys, slow, big)] if big else []),
        )
        elapsed = time.perf_counter() - started
    ok = tally.latencies
    statuses = {x: slow.errors.count(x) for x in sorted(set(slow.errors))}
    extra = {"big_query": {"bytes": big, **percentiles(slow.latencies), "statuses": statuses}} if big else {}
    return {
        **extra,
        "requests": len(ok) + len(tally.errors),
        "errors": len(tally.errors),
        "error_samples": tally.errors[:5],
        "seconds": elapsed,
        "qps": len(ok) / elapsed,
        **percentiles(ok),
    }


async def _client(http: Any, keys: dict[str, str], tally: Tally, rng: random.Random) -> None:
    """One client: searches back to back, a random tenant and query each time."""
    pool, tenants = queries(2000, 0), list(keys)
    while tally.is_running():
        body = {"query": rng.choice(pool), "k": 10}
        headers = {"Authorization": f"Bearer {keys[rng.choice(tenants)]}"}
        await _one(http, body, headers, time.perf_counter(), tally)


async def _big_client(http: Any, keys: dict[str, str], tally: Tally, size: int) -> None:
    """The slow request: a query of `size` bytes, back to back; every answer's status is kept."""
    query = ("what did she say about the garden party " * (size // 40 + 1))[:size]
    key = next(iter(keys.values()))
    while tally.is_running():
        start = time.perf_counter()
        async with http.post(
            "/v1/search", json={"query": query}, headers={"Authorization": f"Bearer {key}"}
        ) as r:
            await r.read()
            tally.latencies.append(time.perf_counter() - start)
            tally.errors.append(str(r.status))


def percentiles(seconds: list[float]) -> dict[str, float]:
    if not seconds:
        return {"p50_ms": float("nan"), "p99_ms": float("nan")}
    ms = sorted(s * 1e3 for s in seconds)
    return {
        "p50_ms": statistics.median(ms),
        "p99_ms": ms[min(len(ms) - 1, int(0.99 * len(ms)))],
        "mean_ms": statistics.fmean(ms),
    }


async def open_loop(url: str, keys: dict[str, str], rate: float, seconds: float, seed: int) -> dict[str, Any]:
    """Searches arriving at `rate` per second for `seconds` (a random tenant and query each)."""
    import aiohttp

    rng, pool, tenants = random.Random(seed), queries(2000, 0), list(keys)
    tally = Tally(deadline=float("inf"))
    # No connection limit: a request waits in the server's queue, never in the client's.
    async with aiohttp.ClientSession(
        url, connector=aiohttp.TCPConnector(limit=0), timeout=aiohttp.ClientTimeout(total=120)
    ) as http:
        sent: list[asyncio.Task[None]] = []
        started = due = time.perf_counter()
        while due < started + seconds and len(sent) < MAX_REQUESTS:
            due += rng.expovariate(rate)
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            headers = {"Authorization": f"Bearer {keys[rng.choice(tenants)]}"}
            body = {"query": rng.choice(pool), "k": 10}
            sent.append(asyncio.create_task(_one(http, body, headers, due, tally)))
        await asyncio.gather(*sent)
        elapsed = time.perf_counter() - started
    return {
        "rate": rate,
        "requests": len(sent),
        "errors": len(tally.errors),
        "error_samples": tally.errors[:5],
        "seconds": elapsed,
        "qps": len(tally.latencies) / elapsed,
        **percentiles(tally.latencies),
    }


async def _one(http: Any, body: dict[str, Any], headers: dict[str, str], due: float, tally: Tally) -> None:
    """One search; its latency counts from `due` (sent, or scheduled to be)."""
    import aiohttp

    try:
        async with http.post("/v1/search", json=body, headers=headers) as r:
            payload = await r.read()
            if r.status == 200:
                tally.latencies.append(time.perf_counter() - due)
            else:
                tally.errors.append(f"{r.status}: {payload[:200]!r}")
    except (aiohttp.ClientError, TimeoutError) as exc:  # counted and reported: the run must show 0
        tally.errors.append(f"{type(exc).__name__}: {exc}")
