"""Recall service under load: `amem serve` (a subprocess) on a 100k-note store, loopback only.

Run from the repo root: `python -m bench.service` (30 s, 64 clients) or `--quick` (5 s). It builds the
store once (synthetic interactions through Memory with the embedded defaults, two processes, cached
under bench/results/stores/), starts `amem serve` on 127.0.0.1 (with `--workers N`, waits until all N
processes answer), warms every tenant (one search each, then 3 s of unmeasured load), then 64 clients
each send searches back to back for the duration. Reports QPS, p50/p99 latency and errors (must be 0),
the server's memory per note (all its processes), and, in the same
run, in-process `Memory.search` latency on the same store and queries: the floor the HTTP service is
compared with. Clients and server share the machine's cores, so on a small machine the client's own CPU
use lowers the QPS.

`--big-query-mb 1` adds one more client that sends nothing but 1 MB queries, back to back: the slow
request in the mix. Its answers are tallied apart (by status); the table's p99 is the other clients'.
`--server-root DIR` serves another checkout's engine (a before/after on the same bench).
`--serve-args "--workers 2"` passes flags to `amem serve`; RSS then counts every process of the server.
`--rates 50,100` adds open-loop runs (searches arriving at that rate: the latency agents see at that load,
bench/load.py), each as long as the closed-loop one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):
    sys.path[0] = str(ROOT)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see bench/kernels.py: spinning BLAS threads

import httpx  # noqa: E402

from bench.common import RESULTS, table, write_json  # noqa: E402
from bench.load import closed_loop, open_loop, percentiles  # noqa: E402
from bench.synthetic import build_store, queries  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    store = args.store or RESULTS / "stores" / f"service-{args.notes}-t{args.tenants}"
    built = build_store(store, args.notes, args.tenants, rebuild=args.rebuild)
    keys = _write_keys(store.parent / f"{store.name}-keys.json", built["tenants"])
    port = args.port or _free_port()
    server, startup_s = _start_server(store, keys["path"], port, args.server_root, args.serve_args)
    try:
        url = f"http://127.0.0.1:{port}"
        _all_workers(url, args.serve_args)
        warm_s = _warm(url, keys["by_tenant"])
        runs = _measure(url, keys["by_tenant"], args)
        rss = _tree_rss_bytes(server.pid)
    finally:
        _stop(server)
    floor = _floor(store, built["tenants"], num=args.floor_queries, seed=args.seed)
    report = {**_report(args, built, runs.pop("service"), floor, rss, startup_s, warm_s), **runs}
    _print(report)
    print(f"wrote {write_json('service', report)}")
    errors = [report["service"], report["service_one_client"], *report["open_loop"]]
    return 0 if all(run["errors"] == 0 for run in errors) else 1


def _measure(url: str, keys: dict[str, str], args: argparse.Namespace) -> dict[str, Any]:
    # Unmeasured load first: with --workers, each process opens every tenant on its own first use.
    asyncio.run(closed_loop(url, keys, args.clients, args.warmup_s, args.seed + 1))
    big = int(args.big_query_mb * 2**20)
    service = asyncio.run(closed_loop(url, keys, args.clients, args.seconds, args.seed, big))
    paced = [asyncio.run(open_loop(url, keys, rate, args.seconds, args.seed)) for rate in args.rates]
    # One client alone: the service's own per-request cost, without queueing behind 63 others.
    alone = asyncio.run(closed_loop(url, keys, 1, min(5.0, args.seconds), args.seed))
    return {"service": service, "open_loop": paced, "service_one_client": alone}


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
    p.add_argument("--warmup-s", type=float, default=3.0, help="unmeasured load before the measured")
    p.add_argument(
        "--rates", default="", help="open-loop arrival rates to measure too, searches/s, e.g. 50,100,150"
    )
    p.add_argument("--serve-args", default="", help="more `amem serve` flags, e.g. '--workers 2'")
    args = p.parse_args(argv)
    if args.quick:
        args.seconds = 5.0
    args.rates = [float(x) for x in args.rates.split(",") if x.strip()]
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


def _start_server(
    store: Path, keys: Path, port: int, root: Path, extra: str
) -> tuple[subprocess.Popen[bytes], float]:
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
        *shlex.split(extra),
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


def _all_workers(url: str, serve_args: str, timeout_s: float = 180.0) -> None:
    """With `--workers N`, wait until all N processes answer (a reader joins the port once its tenants are
    open): a run measures all of them, not the writer alone at first."""
    flags = shlex.split(serve_args)
    wanted = int(flags[flags.index("--workers") + 1]) if "--workers" in flags else 1
    seen: set[str] = set()
    deadline = time.perf_counter() + timeout_s
    while len(seen) < wanted:
        if time.perf_counter() > deadline:
            raise SystemExit(f"only workers {sorted(seen)} of {wanted} answered within {timeout_s:g} s")
        seen.add(httpx.get(f"{url}/healthz", timeout=5).headers.get("x-amem-worker", "0"))  # a new connection
        time.sleep(0.05)


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
    return {"queries": num, "qps_one_thread": num / sum(times), **percentiles(times)}


def _tree_rss_bytes(pid: int) -> int:
    """RSS of the server and every process under it (workers, replicas), counted once each."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:  # gone meanwhile
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    tree, total = {pid}, 0
    for _ in range(8):  # a few levels: server -> worker -> its children
        tree |= {p for p, parent in parents.items() if parent in tree}
    for p in tree:
        try:
            lines = Path(f"/proc/{p}/status").read_text().splitlines()
        except OSError:
            continue
        total += next((int(x.split()[1]) * 1024 for x in lines if x.startswith("VmRSS:")), 0)
    return total


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
        *(
            {
                "path": f"HTTP, open loop {o['rate']:g}/s",
                "qps": o["qps"],
                "p50_ms": o["p50_ms"],
                "p99_ms": o["p99_ms"],
                "requests": o["requests"],
                "errors": o["errors"],
            }
            for o in r["open_loop"]
        ),
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
    for phase in (s, one, *r["open_loop"]):
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
