"""Scale: one tenant grown through the public API, and many small tenants, for this engine and a baseline.

    python -m bench.scale [--sizes 10000,100000,1000000] [--tenants 10000 --per-tenant 100]
                          [--baseline /work/main --baseline-sizes 10000] [--store DIR]
    python -m bench.scale --store DIR --remeasure --sizes 1000000 [--baseline DIR]  # search a kept tenant

One tenant is grown with `Memory.add_many` (batches of 1,000, the API's limit; chat lines from
bench/synthetic.py; embedded defaults) in a persistent store. At each size: ingest rate of the last
segment, and of its last five batches (adding to a tenant of about that size); RSS per note (growth
since the empty store over notes held: whole RSS, anonymous RSS without memory-mapped files, and the
marginal anonymous growth since the previous size, which leaves out the fixed costs that caches fill
early); single-query search p50/p99 (default, and with `as_of`); serial, 8-thread and batched
(`search_many`, 32 queries a call) QPS; the index tier and its recall@10 against exact search;
reopen-to-first-search (a fresh process opens the store and answers one query); the time of `stats()`
and of the first 50-note page in creation order (`page_ms`, what MCP `list_memories` reads); one full pass of
the garbage collector (`gc_full_ms`: the pause a search pays when a collection lands in it). The many-tenant shape
adds `per_tenant` notes to each of `tenants` tenants and measures RSS per tenant and the first search on
a tenant after reopen. Each engine runs in its own subprocess (`--worker`), the baseline with PYTHONPATH
pointing at its checkout, so both are measured by the same code in the same run.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve()
BATCH = 1000
QUERIES = 200
LAST_BATCHES = 5


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def anon_mb() -> float:
    """Anonymous RSS: the process's own memory, without memory-mapped files (versions, indexes on disk)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("RssAnon")) / 1024


def batch_qps(mem: Any, tenant: str, queries: list[str], size: int = 32) -> float | None:
    """`Memory.search_many` in batches of `size` (None for an engine without it)."""
    if not hasattr(mem, "search_many"):
        return None
    started = time.perf_counter()
    for i in range(0, len(queries), size):
        mem.search_many(queries[i : i + size], tenant=tenant, k=10)
    return len(queries) / (time.perf_counter() - started)


def concurrent_qps(mem: Any, tenant: str, queries: list[str], threads: int = 8) -> float:
    from concurrent.futures import ThreadPoolExecutor

    started = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda q: mem.search(q, tenant=tenant, k=10), queries))
    return len(queries) / (time.perf_counter() - started)


def ann_recall(mem: Any, tenant: str, queries: list[str], k: int = 10) -> tuple[str, float]:
    """The tenant's index tier and its recall@k against exact search over the same visible rows,
    tie-aware as bench/index_tiers.py: a hit scoring at least the exact k-th counts (synthetic chat repeats
    its lines, so several notes often tie for the last places)."""
    vecs = mem.encoder.encode_batch(queries)
    with mem._pool.use(tenant) as t:  # bench-only look inside: the public API has no raw-index search
        index, mask = t.state.index, t.state.mask()
        got = index.search(vecs, k, mask)
        allowed = np.flatnonzero(index.live & mask)
        kth = -np.partition(-(vecs @ index.vectors(allowed).T), k - 1, axis=1)[:, k - 1]
        hits = sum(sum(c >= bar - 1e-5 for _, c in g) for g, bar in zip(got, kth, strict=True))
        return index.tier, hits / (k * len(queries))


def held(mem: Any, tenant: str) -> int:
    """Notes in the tenant, without decoding them (an older engine's `stats` read every note)."""
    if hasattr(mem, "count"):
        return int(mem.count(tenant))
    with mem._pool.use(tenant) as t:
        return len(t.state)


def latencies(mem: Any, tenant: str, queries: list[str], as_of: Any = None) -> dict[str, float]:
    times = []
    for q in queries:
        started = time.perf_counter()
        mem.search(q, tenant=tenant, k=10, as_of=as_of)
        times.append(time.perf_counter() - started)
    ms = np.array(times) * 1000
    return {
        "p50_ms": float(np.percentile(ms, 50)),
        "p99_ms": float(np.percentile(ms, 99)),
        "qps": 1000 / ms.mean(),
    }


def admin_ms(mem: Any, tenant: str) -> dict[str, float]:
    """`stats()` and the first page of 50 notes in creation order (MCP `list_memories`), each timed warm.
    An engine without `Memory.page` sorts every note, as its MCP tool did."""
    mem.stats()  # the first call after opening waits for the snapshot's background checksums
    started = time.perf_counter()
    mem.stats()
    stats_ms = 1e3 * (time.perf_counter() - started)
    started = time.perf_counter()
    if hasattr(mem, "page"):
        mem.page(tenant, limit=50)
    else:
        sorted(mem.notes(tenant), key=lambda n: (n.created_at, n.id))[:50]
    return {"stats_ms": stats_ms, "page_ms": 1e3 * (time.perf_counter() - started)}


def gc_full_ms() -> float:
    """One full pass of Python's cyclic garbage collector over the process, in ms: the pause a search takes
    when the collector runs inside it (rarely, but it sets the p99 of a hundred searches)."""
    gc.collect()  # what is garbage now is not the pass's cost
    started = time.perf_counter()
    gc.collect()
    return 1e3 * (time.perf_counter() - started)


def query_texts(n: int) -> list[str]:
    from bench.synthetic import sentence

    rng = random.Random(99)
    return [" ".join(sentence(rng)[1].split()[1:5]) for _ in range(n)]


_REOPEN = """
import json, sys, time
import numpy as np
from bench.scale import query_texts
from engine import Memory
path, tenant, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
started = time.perf_counter()
mem = Memory(path)
mem.search("repaired a rusty bicycle", tenant=tenant, k=10)
out = {"reopen_s": time.perf_counter() - started}
times = []
for q in query_texts(n):
    t = time.perf_counter()
    mem.search(q, tenant=tenant, k=10)
    times.append(time.perf_counter() - t)
if times:
    out["then_p50_ms"], out["then_p99_ms"] = (float(x) for x in np.percentile(np.array(times) * 1e3, [50, 99]))
print(json.dumps(out))
"""


def reopen(path: Path, tenant: str, pythonpath: str, queries: int = 0) -> dict[str, float]:
    """A fresh process with PYTHONPATH's engine: reopen to first search (`reopen_s`, timed from after
    `import engine`: the encoder load is in, interpreter start-up is not), then `queries` searches at once
    (`then_p50_ms`, `then_p99_ms`)."""
    env = dict(os.environ, PYTHONPATH=pythonpath)
    # cwd "/": with `-c` the working folder comes first on sys.path, and the engine must be PYTHONPATH's
    cmd = [sys.executable, "-c", _REOPEN, str(path), tenant, str(queries)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd="/")
    if done.returncode:
        raise RuntimeError(done.stderr[-2000:])
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def grow(sizes: list[int], path: Path, pythonpath: str) -> list[dict[str, Any]]:
    from bench.synthetic import chat
    from engine import Memory

    items, queries = chat(max(sizes), seed=11), query_texts(QUERIES)
    mem = Memory(path)
    base, base_anon, done, rows, before = rss_mb(), anon_mb(), 0, [], (0, anon_mb())
    as_of = items[len(items) // 2]["timestamp"]
    for size in sizes:
        rates = grow_segment(mem, items, done, size)
        done, notes = size, held(mem, "big")
        row = {"shape": "one tenant", "size": size, "notes": notes, **rates}
        row["rss_kb_per_note"] = (rss_mb() - base) * 1024 / notes
        row["anon_kb_per_note"] = (anon_mb() - base_anon) * 1024 / notes
        row["marginal_anon_kb_per_note"] = (anon_mb() - before[1]) * 1024 / max(1, notes - before[0])
        before = (notes, anon_mb())
        row |= measure(mem, path, pythonpath, queries, as_of)
        mem = Memory(path)
        rows.append(row)
        print(json.dumps(row), flush=True)
    mem.close()
    return rows


def grow_segment(mem: Any, items: list[dict[str, Any]], done: int, size: int) -> dict[str, float]:
    """Add items[done:size] in batches. `ingest_per_s` is the segment's rate; `ingest_at_size_per_s` that of
    its last LAST_BATCHES batches, what adding to a tenant of about `size` notes costs: a first segment
    from an empty tenant averages batches with few neighbours to evolve (docs/scale.md, round 10)."""
    from tqdm import tqdm

    times = []
    for i in tqdm(range(done, size, BATCH), desc=f"grow to {size:,}", unit="batch"):
        started = time.perf_counter()
        mem.add_many(items[i : min(i + BATCH, size)], tenant="big")
        times.append((min(i + BATCH, size) - i, time.perf_counter() - started))
    last = times[-LAST_BATCHES:]
    return {
        "ingest_per_s": (size - done) / sum(t for _, t in times),
        "ingest_at_size_per_s": sum(n for n, _ in last) / sum(t for _, t in last),
    }


def measure(mem: Any, path: Path, pythonpath: str, queries: list[str], as_of: Any) -> dict[str, Any]:
    """The search figures of the grown tenant, then reopen-to-first-search (`mem` is closed after)."""
    row: dict[str, Any] = {}
    row["tier"], row["ann_recall_at_10"] = ann_recall(mem, "big", queries[:100])
    row["concurrent_qps"] = concurrent_qps(mem, "big", queries)
    row["batch_qps"] = batch_qps(mem, "big", queries)
    row.update({f"search_{k}": v for k, v in latencies(mem, "big", queries).items()})
    row.update({f"as_of_{k}": v for k, v in latencies(mem, "big", queries[:100], as_of).items()})
    row.update(admin_ms(mem, "big"))
    row["gc_full_ms"] = gc_full_ms()
    mem.close()  # the store lock allows one writer: reopen in a fresh process
    row["reopen_s"] = reopen(path, "big", pythonpath)["reopen_s"]
    return row


def remeasure(store: Path, size: int) -> list[dict[str, Any]]:
    """The search figures again on a tenant grown before with `--store` (no ingest): `size` is the size it
    was grown to, which fixes the chat and so the `as_of` point."""
    from bench.synthetic import chat
    from engine import Memory

    as_of = chat(size, seed=11)[size // 2]["timestamp"]
    path, pythonpath = store / "one", os.environ.get("PYTHONPATH", "")
    mem = Memory(path)
    base, base_anon = rss_mb(), anon_mb()  # the encoder is loaded, the tenant not yet opened
    mem.search("warm up", tenant="big", k=10)  # the first search maps the store's files in
    row = {"shape": "one tenant (reopened)", "size": size, "notes": (notes := held(mem, "big"))}
    row["rss_kb_per_note"] = (rss_mb() - base) * 1024 / notes  # the open tenant, after one search
    row["anon_kb_per_note"] = (anon_mb() - base_anon) * 1024 / notes
    row |= measure(mem, path, pythonpath, query_texts(QUERIES), as_of)
    print(json.dumps(row), flush=True)
    return [row]


def many(tenants: int, per_tenant: int, path: Path, pythonpath: str) -> dict[str, Any]:
    from tqdm import tqdm

    from bench.synthetic import chat
    from engine import Memory

    items = chat(tenants * per_tenant, seed=12)
    mem = Memory(path)
    base, started = rss_mb(), time.perf_counter()
    for t in tqdm(range(tenants), desc=f"{tenants:,} tenants", unit="tenant"):
        mem.add_many(items[t * per_tenant : (t + 1) * per_tenant], tenant=f"t{t:05d}")
    rate = tenants * per_tenant / (time.perf_counter() - started)
    row = {"shape": f"{tenants} x {per_tenant}", "size": tenants * per_tenant, "ingest_per_s": rate}
    # Per tenant stored, not per tenant resident: past max_open_tenants the closed ones cost memory too.
    row["rss_kb_per_tenant"] = (rss_mb() - base) * 1024 / tenants
    row["resident_tenants"] = len(mem.resident_tenants())
    mem.close()
    row["reopen_s"] = reopen(path, f"t{tenants // 2:05d}", pythonpath)["reopen_s"]
    print(json.dumps(row), flush=True)
    return row


def worker(args: argparse.Namespace) -> None:
    pythonpath = os.environ.get("PYTHONPATH", "")
    if args.remeasure:
        Path(args.out).write_text(json.dumps(remeasure(args.store, max(args.sizes))))
        return
    with tempfile.TemporaryDirectory(prefix="amem-scale-") as tmp:
        root = args.store or Path(tmp)  # --store keeps the grown stores, e.g. to profile a 1M tenant after
        rows = grow(args.sizes, root / "one", pythonpath) if args.sizes else []
        if args.tenants:
            rows.append(many(args.tenants, args.per_tenant, root / "many", pythonpath))
    Path(args.out).write_text(json.dumps(rows))


def run_engine(
    name: str,
    root: Path,
    sizes: list[int],
    tenants: int,
    per_tenant: int,
    store: Path | None = None,
    remeasure: bool = False,
) -> list[dict[str, Any]]:
    out = Path(tempfile.mkstemp(suffix=".json")[1])
    cmd = [sys.executable, str(HERE), "--worker", "--out", str(out), "--sizes", ",".join(map(str, sizes))]
    cmd += ["--tenants", str(tenants), "--per-tenant", str(per_tenant)]
    cmd += ["--store", str(store)] if store else []
    cmd += ["--remeasure"] if remeasure else []
    subprocess.run(cmd, env=dict(os.environ, PYTHONPATH=str(root)), check=True)
    rows = json.loads(out.read_text())
    out.unlink()
    return [dict(r, engine=name) for r in rows]


def plot(rows: list[dict[str, Any]]) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from bench.common import RESULTS

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for engine in sorted({r["engine"] for r in rows}):
        pts = [r for r in rows if r["engine"] == engine and r["shape"] == "one tenant"]
        x = [r["size"] for r in pts]
        for ax, key in zip(axes, ("ingest_per_s", "rss_kb_per_note", "search_p99_ms"), strict=True):
            ax.plot(x, [r[key] for r in pts], marker="o", label=engine)
            ax.set(xscale="log", xlabel="notes in the tenant", title=key)
    axes[0].legend()
    fig.tight_layout()
    out = RESULTS / "scale.png"
    fig.savefig(out, dpi=120)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ints = lambda s: [int(x) for x in s.split(",") if x]  # noqa: E731
    ap.add_argument("--sizes", type=ints, default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--tenants", type=int, default=10_000)
    ap.add_argument("--per-tenant", type=int, default=100)
    ap.add_argument("--baseline", type=Path, default=None, help="checkout of the engine to compare with")
    ap.add_argument("--baseline-sizes", type=ints, default=[10_000])
    ap.add_argument("--baseline-tenants", type=int, default=0)
    ap.add_argument("--store", type=Path, default=None, help="keep this engine's stores here (a new folder)")
    ap.add_argument("--remeasure", action="store_true", help="measure the tenant kept in --store again")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    from bench.common import machine, table, write_json

    if args.remeasure and not args.store:
        ap.error("--remeasure reads the tenant kept in --store")
    here = HERE.parent.parent
    rows = run_engine("this", here, args.sizes, args.tenants, args.per_tenant, args.store, args.remeasure)
    if args.baseline and args.remeasure:  # the same kept tenant, searched by the baseline's engine
        rows += run_engine("baseline", args.baseline, args.sizes, 0, args.per_tenant, args.store, True)
    elif args.baseline:
        rows += run_engine(
            "baseline", args.baseline, args.baseline_sizes, args.baseline_tenants, args.per_tenant
        )
    cols = ["engine", "shape", "size", "ingest_per_s", "ingest_at_size_per_s", "rss_kb_per_note"]
    cols += [
        "anon_kb_per_note",
        "marginal_anon_kb_per_note",
        "rss_kb_per_tenant",
        "search_p50_ms",
        "search_p99_ms",
        "as_of_p99_ms",
    ]
    cols += ["search_qps", "concurrent_qps", "batch_qps", "tier", "ann_recall_at_10", "reopen_s"]
    cols += ["stats_ms", "page_ms", "gc_full_ms"]
    print(table(rows, cols))
    if args.remeasure:  # the grown curve's files stay as they are
        print(write_json("scale-remeasure", {"machine": machine(), "rows": rows}))
        return
    write_json("scale", {"machine": machine(), "rows": rows})
    print(plot(rows))


if __name__ == "__main__":
    main()
