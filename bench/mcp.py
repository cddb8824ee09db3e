"""MCP tool-call round trip: `search_memory` over stdio against `amem mcp` on a 10k-note tenant.

Run from the repo root: `python -m bench.mcp` (10k notes, 500 calls) or `--notes 1000 --calls 100` for
a quick look. It builds the tenant with Memory.add_many from bench/synthetic.py's chat in a temporary
store (embedded defaults), launches `amem mcp` as a child process with the official MCP client over
stdio (exactly what a desktop client does), warms it, then times `search_memory` calls one after
another: what an agent waits for per recall. The same queries through in-process `Memory.search` on
the same store give the floor, so the difference is what MCP (JSON-RPC over pipes, schema
validation, result models) adds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):
    sys.path[0] = str(ROOT)

import anyio  # noqa: E402
from tqdm import tqdm  # noqa: E402

from bench.common import table, write_json  # noqa: E402
from bench.synthetic import chat, queries  # noqa: E402

TENANT = "bench"


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    with tempfile.TemporaryDirectory(prefix="amem-mcp-bench-") as tmp:
        store = Path(tmp) / "store"
        build_s = _build(store, args.notes, args.batch)
        asked = queries(args.calls + args.warmup, seed=args.seed)
        mcp = anyio.run(_round_trips, store, asked, args.warmup, args.k)
        floor = _floor(store, asked[args.warmup :], args.k)
    report = {
        "notes": args.notes,
        "k": args.k,
        "calls": args.calls,
        "build_s": round(build_s, 1),
        "mcp_stdio": mcp,
        "memory_search_in_process": floor,
        "overhead_p50_ms": round(mcp["p50_ms"] - floor["p50_ms"], 2),
    }
    rows = [{"path": "search_memory over MCP stdio", **mcp}, {"path": "Memory.search in process", **floor}]
    print(table(rows, ["path", "calls", "p50_ms", "p99_ms", "mean_ms", "max_ms"]))
    print(f"MCP adds {report['overhead_p50_ms']} ms at p50 ({args.notes:,} notes, k={args.k})")
    print(f"wrote {write_json('mcp', report)}")
    return 0


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--notes", type=int, default=10_000)
    p.add_argument("--calls", type=int, default=500)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--batch", type=int, default=500)
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def _build(store: Path, notes: int, batch: int) -> float:
    from engine import Config, Memory

    items = chat(notes)
    started = time.perf_counter()
    with Memory(store, Config()) as mem, tqdm(total=notes, unit="note", desc="building tenant") as bar:
        for i in range(0, notes, batch):
            mem.add_many(items[i : i + batch], tenant=TENANT)
            bar.update(min(batch, notes - i))
    return time.perf_counter() - started


async def _round_trips(store: Path, asked: list[str], warmup: int, k: int) -> dict[str, Any]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    amem = Path(sys.executable).parent / "amem"
    params = StdioServerParameters(
        command=str(amem),
        args=["mcp", "--store", str(store), "--tenant", TENANT],
        env={"PYTHONPATH": str(ROOT), "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY", "PASSIVE")},
    )
    times: list[float] = []
    started = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        ready_s = time.perf_counter() - started
        for i, query in enumerate(tqdm(asked, desc="search_memory over stdio")):
            t0 = time.perf_counter()
            result = await session.call_tool("search_memory", {"query": query, "k": k})
            elapsed = time.perf_counter() - t0
            if result.is_error or len(result.structured_content["hits"]) == 0:  # type: ignore[index]
                raise RuntimeError(f"search_memory failed for {query!r}: {result.content}")
            if i >= warmup:
                times.append(elapsed)
    return {**_stats(times), "startup_to_ready_s": round(ready_s, 2)}


def _floor(store: Path, asked: list[str], k: int) -> dict[str, Any]:
    from engine import Config, Memory

    times = []
    with Memory(store, Config.of(read_only=True)) as mem:
        mem.search(asked[0], tenant=TENANT, k=k)  # open the tenant outside the timing
        for query in asked:
            t0 = time.perf_counter()
            mem.search(query, tenant=TENANT, k=k)
            times.append(time.perf_counter() - t0)
    return _stats(times)


def _stats(seconds: list[float]) -> dict[str, Any]:
    ms = sorted(s * 1000 for s in seconds)
    return {
        "calls": len(ms),
        "p50_ms": round(statistics.median(ms), 2),
        "p99_ms": round(ms[min(len(ms) - 1, int(0.99 * len(ms)))], 2),
        "mean_ms": round(statistics.fmean(ms), 2),
        "max_ms": round(ms[-1], 2),
    }


if __name__ == "__main__":
    raise SystemExit(main())
