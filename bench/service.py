"""Recall service under load: `amem serve` (a subprocess) on a 100k-note store, loopback only.

Run from the repo root: `python -m bench.service` (30 s, 64 clients) or `--quick` (5 s). It builds the
store once (synthetic interactions through Memory with the embedded defaults, two processes, cached
under bench/results/stores/), starts `amem serve` on 127.0.0.1, warms every tenant, then 64 clients
each send searches back to back for the duration. Reports QPS, p50/p99 latency and errors (must be
0), the server's memory per note, and, in the same run, in-process `Memory.search` latency on the
same store and queries: the floor the HTTP service is compared with. Clients and server share the
machine's cores, so on a small machine the client's own CPU use lowers the QPS.

`--big-query-mb 1` adds one more client that sends nothing but 1 MB queries, back to back: the slow
request in the mix. Its answers are tallied apart (by status); the table's p99 is the other clients'.
`--server-root DIR` serves another checkout's engine (a before/after on the same bench).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):
    sys.path[0] = str(ROOT)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see bench/kernels.py: spinning BLAS threads

import httpx  # noqa: E402

from bench.common import RESULTS, table, write_json  # noqa: E402
from bench.synthetic import build_store, queries  # noqa: E402

MAX_REQUESTS = 2_000_000
"""Hard cap on requests, whatever the duration (the load must stop by itself)."""


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    store = args.store or RESULTS / "stores" / f"service-{args.notes}-t{args.tenants}"
    built = build_store(store, args.notes, args.tenants, rebuild=args.rebuild)
    keys = _write_keys(store.parent / f"{store.name}-keys.json", built["tenants"])
    port = args.port or _free_port()
    server, startup_s = _start_server(store, keys["path"], port, args.server_root)
    try:
        url = f"http://127.0.0.1:{port}"
        warm_s = _warm(url, keys["by_tenant"])
        big = int(args.big_query_mb * 2**20)
        load = asyncio.run(_load(url, keys["by_tenant"], args.clients, args.seconds, args.seed, big))
        rss = _rss_bytes(server.pid)
        # One client alone: the service's own per-request cost, without queueing behind 63 others.
        alone = asyncio.run(_load(url, keys["by_tenant"], 1, min(5.0, args.seconds), args.seed))
    finally:
        _stop(server)
    floor = _floor(store, built["tenants"], num=args.floor_queries, seed=args.seed)
    report = _report(args, built, load, floor, rss, startup_s, warm_s)
    report["service_one_client"] = alone
    _print(report)
    print(f"wrote {write_json('service', report)}")
    return 0 if load["errors"] == alone["errors"] == 0 else 1


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--notes", type=int, default=100_000)
    p.add_argument("--tenants", type=int, default=10)
    p.add_argument("--clients", type=int, default=64)
    p.add_argument("--seconds", type=float, default=30.0)
    p.add_argument("--quick", action="store_true", help="5 s of load instead of 30")
    p.add_argument("--floor-queries", type=int, default=500)
    p.add_argument("--store", type=Path, default=None, help="where the store is built / cached")
    p.add_argument("--rebuild", action="store_true")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--big-query-mb", type=float, default=0.0, help="one extra client sending queries this big"
    )
    p.add_argument("--server-root", type=Path, default=ROOT, help="PYTHONPATH of the served engine")
    args = p.parse_args(argv)
    if args.quick:
        args.seconds = 5.0
    return args


def _write_keys(path: Path, tenants: list[str]) -> dict[str, Any]:
    by_tenant = {t: secrets.token_urlsafe(24) for t in tenants}
    path.write_text(
        json.dumps({"admin_key": secrets.token_urlsafe(24), "keys": {k: t for t, k in by_tenant.items()}})
    )
    return {"path": path, "by_tenant": by_tenant}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_server(store: Path, keys: Path, port: int, root: Path) -> tuple[subprocess.Popen[bytes], float]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    cmd = [
        sys.executable,
        "-m",
        "engine.cli",
        "serve",
        "--store",
        str(store),
        "--keys",
        str(keys),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    started = time.perf_counter()
    server = subprocess.Popen(cmd, env=env, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = started + 120
    while time.perf_counter() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"amem serve exited: {server.stderr.read().decode() if server.stderr else ''}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return server, time.perf_counter() - started
        except httpx.TransportError:
            time.sleep(0.1)
    _stop(server)
    raise SystemExit("amem serve did not become healthy within 120 s")


def _stop(server: subprocess.Popen[bytes]) -> None:
    if server.poll() is None:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _warm(url: str, keys: dict[str, str]) -> float:
    """One search per tenant: the server opens a tenant (loads its snapshot) on first use."""
    started = time.perf_counter()
    for key in keys.values():
        r = httpx.post(
            f"{url}/v1/search",
            json={"query": "warm up"},
            headers={"Authorization": f"Bearer {key}"},
            timeout=120,
        )
        r.raise_for_status()
    return time.perf_counter() - started


@dataclass(slots=True)
class _Tally:
    deadline: float
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def is_running(self) -> bool:
        return time.perf_counter() < self.deadline and len(self.latencies) + len(self.errors) < MAX_REQUESTS


async def _load(
    url: str, keys: dict[str, str], clients: int, seconds: float, seed: int, big: int = 0
) -> dict[str, Any]:
    # aiohttp, not httpx: httpx's async pool spends more CPU per request than the server does, and
    # client and server share the cores (aiohttp comes with ray[default]).
    import aiohttp

    connector = aiohttp.TCPConnector(limit=clients + 1)
    async with aiohttp.ClientSession(
        url, connector=connector, timeout=aiohttp.ClientTimeout(total=120)
    ) as http:
        tally = _Tally(deadline=time.perf_counter() + seconds)
        slow = _Tally(deadline=tally.deadline)
        started = time.perf_counter()
        await asyncio.gather(
            *(_client(http, keys, tally, random.Random(seed * 1000 + i)) for i in range(clients)),
            *([_big_client(http, keys, slow, big)] if big else []),
        )
        elapsed = time.perf_counter() - started
    ok = tally.latencies
    statuses = {x: slow.errors.count(x) for x in sorted(set(slow.errors))}
    extra = {"big_query": {"bytes": big, **_percentiles(slow.latencies), "statuses": statuses}} if big else {}
    return {
        **extra,
        "requests": len(ok) + len(tally.errors),
        "errors": len(tally.errors),
        "error_samples": tally.errors[:5],
        "seconds": elapsed,
        "qps": len(ok) / elapsed,
        **_percentiles(ok),
    }


async def _client(http: Any, keys: dict[str, str], tally: _Tally, rng: random.Random) -> None:
    """One client: searches back to back, a random tenant and query each time."""
    import aiohttp

    pool, tenants = queries(2000, 0), list(keys)
    while tally.is_running():
        body = {"query": rng.choice(pool), "k": 10}
        headers = {"Authorization": f"Bearer {keys[rng.choice(tenants)]}"}
        start = time.perf_counter()
        try:
            async with http.post("/v1/search", json=body, headers=headers) as r:
                payload = await r.read()
                if r.status == 200:
                    tally.latencies.append(time.perf_counter() - start)
                else:
                    tally.errors.append(f"{r.status}: {payload[:200]!r}")
        except (aiohttp.ClientError, TimeoutError) as exc:  # counted and reported: the run must show 0
            tally.errors.append(f"{type(exc).__name__}: {exc}")


async def _big_client(http: Any, keys: dict[str, str], tally: _Tally, size: int) -> None:
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


def _percentiles(seconds: list[float]) -> dict[str, float]:
    if not seconds:
        return {"p50_ms": float("nan"), "p99_ms": float("nan")}
    ms = sorted(s * 1e3 for s in seconds)
    return {
        "p50_ms": statistics.median(ms),
        "p99_ms": ms[min(len(ms) - 1, int(0.99 * len(ms)))],
        "mean_ms": statistics.fmean(ms),
    }


def _floor(store: Path, tenants: list[str], num: int, seed: int) -> dict[str, Any]:
    """In-process Memory.search on the same store and query mix, one query at a time."""
    from engine import Config, Memory

    rng = random.Random(seed + 1)
    pool = queries(2000, 0)
    with Memory(store, Config.of(read_only=True)) as mem:
        for t in tenants:
            mem.search("warm up", tenant=t)
        times = []
        for _ in range(num):
            tenant, query = rng.choice(tenants), rng.choice(pool)
            start = time.perf_counter()
            mem.search(query, tenant=tenant, k=10)
            times.append(time.perf_counter() - start)
    return {"queries": num, "qps_one_thread": num / sum(times), **_percentiles(times)}


def _rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def _report(
    args: argparse.Namespace,
    built: dict[str, Any],
    load: dict[str, Any],
    floor: dict[str, Any],
    rss: int,
    startup_s: float,
    warm_s: float,
) -> dict[str, Any]:
    notes = built["notes"]
    return {
        "store": {**built, "path": str(built["path"])},
        "clients": args.clients,
        "duration_s": args.seconds,
        "service": load,
        "in_process": floor,
        "server": {
            "startup_s": startup_s,
            "warm_all_tenants_s": warm_s,
            "rss_mb": rss / 2**20,
            "rss_bytes_per_note": rss / max(notes, 1),
            "rss_mb_per_tenant": rss / 2**20 / len(built["tenants"]),
        },
        "note": "client and server share the machine's cores; QPS is bounded by both",
    }


def _print(r: dict[str, Any]) -> None:
    s, one, f = r["service"], r["service_one_client"], r["in_process"]
    rows = [
        {
            "path": f"HTTP, {r['clients']} clients",
            "qps": s["qps"],
            "p50_ms": s["p50_ms"],
            "p99_ms": s["p99_ms"],
            "requests": s["requests"],
            "errors": s["errors"],
        },
        {
            "path": "HTTP, 1 client",
            "qps": one["qps"],
            "p50_ms": one["p50_ms"],
            "p99_ms": one["p99_ms"],
            "requests": one["requests"],
            "errors": one["errors"],
        },
        {
            "path": "in-process, 1 thread",
            "qps": f["qps_one_thread"],
            "p50_ms": f["p50_ms"],
            "p99_ms": f["p99_ms"],
            "requests": f["queries"],
            "errors": 0,
        },
    ]
    print(
        f"\nstore: {r['store']['notes']:,} notes in {len(r['store']['tenants'])} tenants; "
        f"server RSS {r['server']['rss_mb']:.0f} MiB ({r['server']['rss_bytes_per_note']:.0f} B/note), "
        f"startup {r['server']['startup_s']:.1f} s, first search of every tenant {r['server']['warm_all_tenants_s']:.1f} s"  # noqa: E501
    )
    print(table(rows, ["path", "qps", "p50_ms", "p99_ms", "requests", "errors"]))
    for phase in (s, one):
        if phase["errors"]:
            print(f"ERRORS: {phase['error_samples']}")
    if "big_query" in s:
        b = s["big_query"]
        print(
            f"big-query client ({b['bytes'] / 2**20:g} MB queries): answers by status {b['statuses']}, "
            f"p50 {b['p50_ms']:.0f} ms, p99 {b['p99_ms']:.0f} ms"
        )


if __name__ == "__main__":
    raise SystemExit(main())
