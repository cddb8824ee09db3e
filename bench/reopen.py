"""Reopen to first search of a kept tenant, cold and warm page cache, for this engine and a baseline.

    python -m bench.reopen --store DIR [--tenant big] [--baseline /path/to/older/checkout] [--rounds 2]

DIR is a store kept by `python -m bench.scale --store DIR` (its tenant is under DIR/one). Each try is a
fresh process that opens the store and answers one query, timed from after `import engine` (the encoder
load is in). "Cold" first drops the page cache (`/proc/sys/vm/drop_caches`, needs root; without it the
column is left empty): the first open after a machine starts. "Warm" opens again at once. Engines
alternate within each round, so both see the same disk and cache.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from bench.common import machine, table, write_json
from bench.scale import reopen_time

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
    args = ap.parse_args()
    engines = [("this", HERE)] + ([("baseline", args.baseline)] if args.baseline else [])
    rows: list[dict[str, Any]] = []
    for round_ in range(1, args.rounds + 1):
        for name, root in engines:
            cold = reopen_time(args.store / "one", args.tenant, str(root)) if drop_page_cache() else None
            warm = reopen_time(args.store / "one", args.tenant, str(root))
            rows.append({"engine": name, "round": round_, "cold_s": cold, "warm_s": warm})
            print(rows[-1], flush=True)
    print(table(rows, ["engine", "round", "cold_s", "warm_s"]))
    print(write_json("reopen", {"machine": machine(), "store": str(args.store), "rows": rows}))


if __name__ == "__main__":
    main()
