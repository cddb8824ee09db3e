"""Many small tenants: what one costs in RAM, what a FAISS object adds, and what the open-tenant bound buys.

python -m bench.tenants [--tenants 2000] [--notes 20]

`search_ms` is a search on a random tenant after the bulk fill. `cold_p50_ms` / `cold_p99_ms`: the
first search on a tenant that is not open (read from the store: snapshot checked, indexes opened). The
agent loop is one interaction added to a random tenant and a search on it at once, as an agent's turn
does. Its latencies are printed with and without the write batch's lexical commit
(`TenantMemory.settle`; without it, the search commits).
"""

from __future__ import annotations

import argparse
import gc
import shutil
import tempfile
import time
from pathlib import Path

import faiss
import numpy as np

import engine.state.tenant_state as tenant_state
from bench.common import table, write_json
from bench.synthetic import chat
from engine import Config, Memory
from engine.encode import WordLlamaEncoder


def rss_mb() -> float:
    return int(Path("/proc/self/statm").read_text().split()[1]) * 4096 / 2**20


def faiss_object_bytes(count: int = 20_000, dim: int = 256) -> float:
    gc.collect()
    before = rss_mb()
    keep = [faiss.IndexFlatIP(dim) for _ in range(count)]
    cost = (rss_mb() - before) * 2**20 / count
    del keep
    return cost


def fill(mem: Memory, tenants: int, notes: int) -> float:
    by: dict[str, list[dict[str, object]]] = {}
    for it in chat(tenants * notes, tenants=tenants):
        by.setdefault(str(it.pop("tenant")), []).append(it)
    started = time.perf_counter()
    for name, items in by.items():
        mem.add_many(items, tenant=name)
    return time.perf_counter() - started


def search_ms(mem: Memory, tenants: int, count: int = 500) -> float:
    rng = np.random.default_rng(0)
    names = [f"tenant-{i:04d}" for i in rng.integers(0, tenants, count)]
    started = time.perf_counter()
    for name in names:
        mem.search("guitar class in Lisbon", tenant=name, k=5)
    return (time.perf_counter() - started) / count * 1e3


def cold_search(mem: Memory, tenants: int, count: int = 200) -> dict[str, float]:
    """First searches on tenants not open, in a warm process (p50 / p99 ms); none when all are open."""
    resident = set(mem.resident_tenants())
    names = [n for n in (f"tenant-{i:04d}" for i in range(tenants)) if n not in resident][:count]
    times = []
    for name in names:
        started = time.perf_counter()
        mem.search("guitar class in Lisbon", tenant=name, k=5)
        times.append(time.perf_counter() - started)
    if not times:
        return {}
    ms = np.array(times) * 1e3
    return {"cold_p50_ms": float(np.percentile(ms, 50)), "cold_p99_ms": float(np.percentile(ms, 99))}


def agent_loop(mem: Memory, tenants: int, count: int = 300) -> dict[str, float]:
    rng = np.random.default_rng(1)
    lines = [str(it["content"]) for it in chat(count, seed=5)]
    adds, searches = [], []
    for line, i in zip(lines, rng.integers(0, tenants, count), strict=True):
        started = time.perf_counter()
        mem.add(line, tenant=f"tenant-{i:04d}")
        adds.append(time.perf_counter() - started)
        started = time.perf_counter()
        mem.search(line, tenant=f"tenant-{i:04d}", k=5)
        searches.append(time.perf_counter() - started)
    a, q = np.array(adds) * 1e3, np.array(searches) * 1e3
    return {
        "loop_add_p50_ms": float(np.percentile(a, 50)),
        "loop_search_p50_ms": float(np.percentile(q, 50)),
        "loop_search_p99_ms": float(np.percentile(q, 99)),
    }


def run(
    label: str, tenants: int, notes: int, path: Path | None, max_open: int, encoder: WordLlamaEncoder
) -> dict[str, object]:
    gc.collect()
    before = rss_mb()
    mem = Memory(path, Config.of(max_open_tenants=max_open, wal=False), encoder=encoder)
    ingest_s = fill(mem, tenants, notes)
    gc.collect()
    grown = rss_mb() - before
    stored = sum(len(mem.notes(f"tenant-{i:04d}")) for i in range(tenants))
    row = {
        "setup": label,
        "tenants": tenants,
        "notes": stored,
        "resident_tenants": len(mem.resident_tenants()),
        "rss_mb": grown,
        "kb_per_tenant": grown * 1024 / tenants,
        "ingest_s": ingest_s,
        "search_ms": search_ms(mem, tenants),
    }
    row |= cold_search(mem, tenants)
    row |= agent_loop(mem, tenants)
    settle, tenant_state.SETTLE_MAX = tenant_state.SETTLE_MAX, -1  # the same loop, the commit left to reads
    row |= {f"{k}_unsettled": v for k, v in agent_loop(mem, tenants).items()}
    tenant_state.SETTLE_MAX = settle
    mem.close()
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tenants", type=int, default=2000)
    ap.add_argument("--notes", type=int, default=20)
    args = ap.parse_args()
    faiss_b = faiss_object_bytes()
    encoder = WordLlamaEncoder()  # loaded before any measurement: its weights are not a tenant's cost
    tmp = Path(tempfile.mkdtemp(prefix="amem-tenants-"))
    try:
        rows = [
            run("in RAM, all resident", args.tenants, args.notes, None, 1024, encoder),
            run("store, max_open_tenants=128", args.tenants, args.notes, tmp / "store", 128, encoder),
        ]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(
        table(
            rows,
            [
                "setup",
                "tenants",
                "notes",
                "resident_tenants",
                "rss_mb",
                "kb_per_tenant",
                "ingest_s",
                "search_ms",
                "cold_p50_ms",
                "cold_p99_ms",
                "loop_add_p50_ms",
                "loop_search_p50_ms",
                "loop_search_p99_ms",
                "loop_add_p50_ms_unsettled",
                "loop_search_p50_ms_unsettled",
                "loop_search_p99_ms_unsettled",
            ],
        )
    )
    print(
        f"\nan empty FAISS IndexFlatIP(256) costs {faiss_b:.0f} bytes; a 20-note tenant's vectors alone "
        f"{args.notes * 256 * 4 / 1024:.0f} KB"
    )
    write_json("tenants", {"rows": rows, "faiss_object_bytes": faiss_b})


if __name__ == "__main__":
    main()
