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
import os
from pathlib import Path
from typing import Any

from bench.common import machine, table, write_json
from bench.scale import reopen

HERE = Path(__file__).resolve().parents[1]


def drop_page_cache() -> bool:
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return True
    except OSError:
        return False


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
                    {"engine": name, "round": round_, "cache": cache}
                    | reopen(path, args.tenant, str(root), n)
                )
                print(rows[-1], flush=True)
    print(table(rows, ["engine", "round", "cache", "reopen_s", "then_p50_ms", "then_p99_ms"]))
    print(write_json("reopen", {"machine": machine(), "store": str(args.store), "rows": rows}))


if __name__ == "__main__":
    main()
