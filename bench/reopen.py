"""Reopen to first search of a kept tenant, cold and warm page cache, for this engine and a baseline.

    python -m bench.reopen --store DIR [--tenant big] [--baseline /path/to/older/checkout] [--rounds 2]
                           [--queries 300]

DIR is a store kept by `python -m bench.scale --store DIR` (its tenant is under DIR/one). Each try is a
fresh process that opens the store and answers one query, timed from after `import engine` (the encoder
load is in), then answers `--queries` more at once: their p50 / p99 is search while the files are still
coming in from disk (and the background checksums run). "Cold" first drops the page cache
(`/proc/sys/vm/drop_caches`, needs root; without it only warm tries run): the first open after a
machine starts. "Warm" opens again at once. Engines alternate within each round, so both see the same
disk and cache.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.common import machine, table, write_json

HERE = Path(__file__).resolve().parents[1]


def drop_page_cache() -> bool:
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


_CHILD = """
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


def reopen(path: Path, tenant: str, root: Path, queries: int) -> dict[str, float]:
    """A fresh process with `root`'s engine: reopen to first search, then `queries` searches at once."""
    env = dict(os.environ, PYTHONPATH=str(root))
    # cwd "/": with `-c` the working folder comes first on sys.path, and the engine must be PYTHONPATH's
    cmd = [sys.executable, "-c", _CHILD, str(path), tenant, str(queries)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd="/")
    if done.returncode:
        raise RuntimeError(done.stderr[-2000:])
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", type=Path, required=True, help="a folder kept by bench.scale --store")
    ap.add_argument("--tenant", default="big")
    ap.add_argument("--baseline", type=Path, default=None, help="checkout of the engine to compare with")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--queries", type=int, default=300, help="searches right after the first one")
    args = ap.parse_args()
    engines = [("this", HERE)] + ([("baseline", args.baseline)] if args.baseline else [])
    rows: list[dict[str, Any]] = []
    path, n = args.store / "one", args.queries
    for round_ in range(1, args.rounds + 1):
        for name, root in engines:
            for cache in ("cold", "warm"):
                if cache == "cold" and not drop_page_cache():
                    continue
                rows.append(
                    {"engine": name, "round": round_, "cache": cache} | reopen(path, args.tenant, root, n)
                )
                print(rows[-1], flush=True)
    print(table(rows, ["engine", "round", "cache", "reopen_s", "then_p50_ms", "then_p99_ms"]))
    print(write_json("reopen", {"machine": machine(), "store": str(args.store), "rows": rows}))


if __name__ == "__main__":
    main()
