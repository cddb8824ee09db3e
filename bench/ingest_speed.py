"""Ingest rate of one growing tenant, this checkout against a baseline one, rounds interleaved.

    python -m bench.ingest_speed [--sizes 10000,30000] [--baseline /work/wt/ingest-base] [--rounds 2]

Each engine grows a tenant in a fresh persistent store with `Memory.add_many` (batches of 1,000,
bench/synthetic.py chat lines, embedded defaults), closing and reopening the store at each size as
bench/scale.py does (so later batches read neighbours from a snapshot's state file). Each run is its own
subprocess with PYTHONPATH at its checkout; runs alternate between the engines, so on a shared machine
both see the same contention. Prints notes/s per segment and the slowest batch of each.

    python -m bench.ingest_speed --onto /copy/of/scale-store --start 1200000 [--batches 6] --baseline ...

`--onto` measures a big tenant without growing one per run: each run adds `--batches` batches to the
tenant "big" of a store bench/scale.py wrote (work on a copy: the runs write to it), chat lines from
`--start` on (a new stretch per run, so none is skipped as known), and ends without a snapshot. The
first batch after an open reads cold pages; the rate counts the later ones.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NoReturn

HERE = Path(__file__).resolve()
BATCH = 1000


def grow(sizes: list[int], path: Path) -> list[dict[str, Any]]:
    from bench.synthetic import chat
    from engine import Memory

    items, done, rows = chat(max(sizes), seed=11), 0, []
    for size in sizes:
        mem = Memory(path)  # reopened per segment: earlier notes are read from the snapshot
        times = _timed_batches(mem, items[done:size])
        mem.close()
        rows.append({"size": size, "per_s": (size - done) / sum(times), "slowest_batch_s": max(times)})
        done = size
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def extend(store: Path, start: int, batches: int) -> NoReturn:
    from bench.synthetic import chat
    from engine import Memory

    times = _timed_batches(Memory(store), chat(start + batches * BATCH, seed=11)[start:])
    row = {"at": start, "per_s": BATCH * (batches - 1) / sum(times[1:]), "slowest_batch_s": max(times)}
    print(json.dumps([row]), flush=True)
    os._exit(0)  # no snapshot: the copy is only written to by these runs


def _timed_batches(mem: Any, items: list[dict[str, Any]]) -> list[float]:
    """Seconds each batch of BATCH items took to add to the tenant "big"."""
    times = []
    for i in range(0, len(items), BATCH):
        started = time.perf_counter()
        mem.add_many(items[i : i + BATCH], tenant="big")
        times.append(time.perf_counter() - started)
    return times


def run(root: Path, sizes: list[int], extra: list[str]) -> list[dict[str, Any]]:
    cmd = [sys.executable, str(HERE), "--worker", "--sizes", ",".join(map(str, sizes)), *extra]
    out = subprocess.run(
        cmd, env=dict(os.environ, PYTHONPATH=str(root)), check=True, stdout=subprocess.PIPE, text=True
    )
    rows: list[dict[str, Any]] = json.loads(out.stdout.strip().splitlines()[-1])
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",") if x], default=[10_000, 30_000])
    ap.add_argument("--baseline", type=Path, default=None, help="checkout of the engine to compare with")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--onto", type=Path, default=None, help="a copy of a big store to add batches to")
    ap.add_argument("--start", type=int, default=0, help="with --onto: first chat line of the first run")
    ap.add_argument("--batches", type=int, default=6, help="with --onto: batches of 1,000 per run")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker and args.onto:
        extend(args.onto, args.start, args.batches)
    if args.worker:
        with tempfile.TemporaryDirectory(prefix="amem-ingest-") as tmp:
            print(json.dumps(grow(args.sizes, Path(tmp) / "store")))
        return
    engines = [("this", HERE.parent.parent)] + ([("baseline", args.baseline)] if args.baseline else [])
    for r in range(args.rounds):
        for e, (name, root) in enumerate(engines if r % 2 == 0 else engines[::-1]):
            start = args.start + (2 * r + e) * args.batches * BATCH
            onto = ["--onto", str(args.onto), "--start", str(start), "--batches", str(args.batches)]
            for row in run(root, args.sizes, onto if args.onto else []):
                where = f"at {row['at']:>9,}" if "at" in row else f"to {row['size']:>7,}"
                print(f"round {r} {name:8s} {where}: {row['per_s']:6.1f} notes/s, "
                      f"slowest batch {row['slowest_batch_s']:.2f} s", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
