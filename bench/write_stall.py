"""Searches beside a write: how long a tenant's searches wait while a batch is written and snapshotted.

    python -m bench.write_stall [--notes 50000] [--store DIR --tenant T] [--baseline /path/to/checkout]
                                [--baseline-store DIR] [--rounds 2] [--batch 1000]

Builds (once, cached under bench/results/stores/) a store whose tenant holds `--notes` chat lines, or
uses `--store`/`--tenant` (a kept bench/scale.py tenant, say). Each try is a fresh process: it opens the
store, warms up with 50 searches, then one thread searches in a loop while the main thread adds `--batch`
new chat lines with `snapshot_every=1`, so the write ends with a full snapshot, as a growing tenant's
does. Reported: the write's wall time, the searches answered inside it, and the p50 / p99 / longest
search that overlapped it. Engines alternate within each round on the same store (each try adds its
batch: the tenant grows by `--batch` a try), or, with `--baseline-store` (a copy of the store, for an
engine that writes another snapshot format), each on its own. The baseline runs with PYTHONPATH at its
checkout. `disk_gb`: the tenant folder's bytes after the try (a file linked twice counted once).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.common import RESULTS, disk_bytes, table, write_json

HERE = Path(__file__).resolve().parents[1]
_BUILD = """
import sys
from bench.synthetic import chat
from engine import Memory
store, notes = sys.argv[1], int(sys.argv[2])
lines = chat(notes, seed=21)
with Memory(store) as mem:
    for i in range(0, notes, 1000):
        mem.add_many(lines[i:i + 1000], tenant="t")
"""
_TRY = """
import json, sys, threading, time
from bench.synthetic import chat, queries
from engine import Config, Memory
store, tenant, batch, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
with Memory(store, Config.of(snapshot_every=1)) as mem:
    mem.search("warm up", tenant=tenant, k=1)  # opens the tenant
    n = mem.stats()["tenants"][tenant]["notes"]
    qs = queries(200_000, seed=seed)
    for q in qs[:50]:
        mem.search(q, tenant=tenant)
    timed, done = [], threading.Event()
    def loop():
        i = 0
        while not done.is_set():
            s = time.perf_counter()
            mem.search(qs[i % len(qs)], tenant=tenant)
            timed.append((s, time.perf_counter() - s))
            i += 1
    searcher = threading.Thread(target=loop)
    searcher.start()
    time.sleep(1.0)
    w0 = time.perf_counter()
    mem.add_many(chat(n + batch, seed=seed)[n:], tenant=tenant)
    w1 = time.perf_counter()
    time.sleep(1.0)
    done.set()
    searcher.join()
overlap = sorted(t for s, t in timed if s <= w1 and s + t >= w0)
print(json.dumps({
    "notes": n, "write_s": w1 - w0, "answered": sum(1 for s, t in timed if w0 <= s and s + t <= w1),
    "p50_ms": 1e3 * overlap[len(overlap) // 2], "p99_ms": 1e3 * overlap[int(len(overlap) * 0.99)],
    "longest_ms": 1e3 * overlap[-1],
}))
"""


def _child(code: str, root: Path, argv: list[str]) -> dict[str, Any]:
    """Run `code` on the engine at `root` (cwd "/": the current folder would come first on sys.path)."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    run = subprocess.run(
        [sys.executable, "-c", code, *argv], cwd="/", env=env, capture_output=True, text=True
    )
    if run.returncode:
        raise SystemExit(f"{root}: the try failed:\n{run.stderr[-3000:]}")
    lines = run.stdout.strip().splitlines()
    return json.loads(lines[-1]) if lines else {}


def build(notes: int) -> Path:
    store = RESULTS / "stores" / f"write-stall-{notes}"
    store = store.resolve()
    if not (store / "tenants" / "t").is_dir():
        print(f"building a {notes:,}-note tenant in {store} (once)", flush=True)
        _child(_BUILD, HERE, [str(store), str(notes)])
    return store


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--notes", type=int, default=50_000)
    ap.add_argument("--store", type=Path, default=None, help="a kept store instead of building one")
    ap.add_argument("--tenant", default="t")
    ap.add_argument("--baseline", type=Path, default=None, help="checkout of the engine to compare with")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--baseline-store", type=Path, default=None, help="the baseline's own copy of --store")
    args = ap.parse_args()
    store = args.store.resolve() if args.store else build(args.notes)
    stores = {"this": store, "baseline": (args.baseline_store or store).resolve()}
    engines = {"this": HERE, **({"baseline": args.baseline.resolve()} if args.baseline else {})}
    rows = []
    for rnd in range(args.rounds):
        for name, root in engines.items():
            seed = 1000 + 10 * rnd + len(rows)
            argv = [str(stores[name]), args.tenant, str(args.batch), str(seed)]
            rows.append({"engine": name, "round": rnd, **_child(_TRY, root, argv)})
            rows[-1]["disk_gb"] = disk_bytes(stores[name] / "tenants" / args.tenant) / 1e9
            print(table(rows[-1:], list(rows[-1])), flush=True)
    columns = ["engine", "round", "notes", "write_s", "answered", "p50_ms", "p99_ms", "longest_ms", "disk_gb"]
    print(table(rows, columns))
    out = write_json("write_stall", {"store": str(store), "batch": args.batch, "rows": rows})
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
