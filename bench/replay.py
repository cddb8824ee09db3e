"""Crash replay: how long a tenant takes to open when its newest notes are only in the log.

    python -m bench.replay [--base 40000] [--extra 20000] [--baseline /path/to/older/checkout] [--rounds 2]

Builds (once, cached under bench/results/stores/) a store whose tenant holds `--base` notes in a snapshot
and `--extra` more, in batches of 1,000, only in its log: the writer process ends with `os._exit` after
the last batch, as a killed one would. Each try is a fresh process that opens the store read-only (the
kept store is never changed) and answers one query, timed from after `import engine`; then it prints a
digest of every note and of the top 10 of four queries, so engines can be checked to agree. Engines
alternate within each round. The ingest time of the extra notes is printed beside, for the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.common import RESULTS, machine, table, write_json

HERE = Path(__file__).resolve().parents[1]
TENANT = "t"
_BUILD = """
import json, os, sys, time
from bench.synthetic import chat
from engine import Memory
store, base, extra = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lines = chat(base + extra, seed=7)
mem = Memory(store)
for i in range(0, base, 1000):
    mem.add_many(lines[i:i + 1000], tenant="t")
mem.close()
mem = Memory(store)
started = time.perf_counter()
for i in range(base, base + extra, 1000):
    mem.add_many(lines[i:i + 1000], tenant="t")
print(json.dumps({"extra_ingest_s": time.perf_counter() - started}), flush=True)
os._exit(0)  # no close: the extra notes stay in the log only
"""
_OPEN = """
import hashlib, json, sys, time
from engine import Config, Memory
mem = Memory(sys.argv[1], Config.of(read_only=True))
started = time.perf_counter()
mem.search("where did Elif go", tenant="t", k=3)
took = time.perf_counter() - started
notes = sorted(mem.notes("t"), key=lambda n: n.id)
hits = [[h.note.id for h in mem.search(q, tenant="t", k=10)] for q in ("Elif Bogota", "a new job", "my sister")]
digest = lambda x: hashlib.sha256(repr(x).encode()).hexdigest()[:12]
print(json.dumps({"open_s": took, "notes": len(notes), "notes_digest": digest(notes), "hits_digest": digest(hits)}))
"""


def build(store: Path, base: int, extra: int) -> dict[str, Any]:
    done = store.with_name(store.name + ".json")
    if done.exists():
        return json.loads(done.read_text())
    out = _child(_BUILD, HERE, [str(store), str(base), str(extra)])
    done.write_text(json.dumps(out))
    return out


def _child(code: str, root: Path, argv: list[str]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    run = subprocess.run(
        [sys.executable, "-c", code, *argv], cwd="/", env=env, capture_output=True, text=True, check=True
    )
    return json.loads(run.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", type=int, default=40_000)
    ap.add_argument("--extra", type=int, default=20_000)
    ap.add_argument("--baseline", type=Path, default=None, help="checkout of the engine to compare with")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    store = RESULTS / "stores" / f"replay-{args.base}-{args.extra}"
    built = build(store, args.base, args.extra)
    engines = [("this", HERE)] + ([("baseline", args.baseline)] if args.baseline else [])
    rows = []
    for round_ in range(1, args.rounds + 1):
        for name, root in engines:
            row = {"engine": name, "round": round_} | _child(_OPEN, root, [str(store)])
            row["of_ingest"] = row["open_s"] / built["extra_ingest_s"]
            rows.append(row)
            print(row, flush=True)
    print(f"ingest of the {args.extra:,} logged notes: {built['extra_ingest_s']:.1f} s")
    print(table(rows, ["engine", "round", "open_s", "of_ingest", "notes", "notes_digest", "hits_digest"]))
    print(write_json("replay", {"machine": machine(), "built": built, "rows": rows}))


if __name__ == "__main__":
    main()
