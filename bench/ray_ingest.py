"""Sharded ingest throughput: 1, 2 and 4 shard actors on one synthetic multi-tenant chat log.

Run from the repo root: `python -m bench.ray_ingest` (or `--quick`). Starts a local Ray cluster with
as many CPUs as the machine has, ingests the same log into a fresh store per shard count (embedded
annotator: the work is CPU-bound, so shards scale with cores, not with an LLM server's capacity),
and adds single-process `engine.io.ingest` as the baseline. Times are end to end, including starting
the actors and Ray Data's read. Prints a table and writes bench/results/ray_ingest.json.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):
    sys.path[0] = str(ROOT)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see bench/kernels.py: spinning BLAS threads

import ray  # noqa: E402

from bench.common import bar_plot, table, write_json  # noqa: E402
from bench.synthetic import write_log  # noqa: E402
from engine import Config  # noqa: E402
from engine.io.ingest import ingest_files  # noqa: E402
from ray_jobs.cluster import worker_env  # noqa: E402
from ray_jobs.ingest import run_ingest  # noqa: E402

SHARDS = (1, 2, 4)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--records", type=int, default=6000)
    p.add_argument("--tenants", type=int, default=32)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--quick", action="store_true", help="1,500 records")
    args = p.parse_args(argv)
    records = 1500 if args.quick else args.records
    cpus = os.cpu_count() or 1
    rows = _run_all(records, args.tenants, args.batch, cpus)
    base = next(r["records_per_s"] for r in rows if r["shards"] == 1)
    for r in rows:
        r["vs_1_shard"] = r["records_per_s"] / base
    caveat = (
        f"{cpus} CPU cores: shards are processes, so past {cpus} shards they only share the same cores; "
        "end-to-end times include starting the actors and Ray Data (several seconds), which weighs "
        "most on small logs"
    )
    print(table(rows, ["mode", "shards", "records", "notes", "seconds", "records_per_s", "vs_1_shard"]))
    print(f"note: {caveat}")
    out = write_json(
        "ray_ingest",
        {
            "records": records,
            "tenants": args.tenants,
            "batch": args.batch,
            "cpus": cpus,
            "rows": rows,
            "caveat": caveat,
        },
    )
    bar_plot(
        "ray_ingest",
        {r["mode"]: {"records/s": r["records_per_s"]} for r in rows},
        "records / s",
        f"amem ingest, {records:,} records, {args.tenants} tenants, {cpus} cores",
    )
    print(f"wrote {out}")
    return 0


def _run_all(records: int, tenants: int, batch: int, cpus: int) -> list[dict[str, Any]]:
    """Single process, then each shard count, on one log; every run into a fresh store."""
    work = Path(tempfile.mkdtemp(prefix="amem-ray-bench-"))
    try:
        log = write_log(work / "log.jsonl", records, tenants)
        rows = [_single(log, work / "single", batch)]
        ray.init(num_cpus=cpus, include_dashboard=False, runtime_env=worker_env(), log_to_driver=False)
        try:
            rows += [_sharded(log, work / f"shards-{n}", n, batch) for n in SHARDS]
        finally:
            ray.shutdown()
        return rows
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _single(log: Path, store: Path, batch: int) -> dict[str, Any]:
    started = time.perf_counter()
    report = ingest_files([log], store, config=Config(), batch_size=batch, progress=False)
    elapsed = time.perf_counter() - started
    return {
        "mode": "single process",
        "shards": None,
        "records": report["records"],
        "notes": report["notes"],
        "seconds": elapsed,
        "records_per_s": report["records"] / elapsed,
    }


def _sharded(log: Path, store: Path, shards: int, batch: int) -> dict[str, Any]:
    started = time.perf_counter()
    report = run_ingest(
        [str(log)], str(store), config=Config(), num_shards=shards, max_batch=batch, progress=False
    )
    elapsed = time.perf_counter() - started
    return {
        "mode": f"ray, {shards} shard{'s' if shards > 1 else ''}",
        "shards": shards,
        "records": report["records"],
        "notes": report["notes"],
        "seconds": elapsed,
        "records_per_s": report["records"] / elapsed,
    }


if __name__ == "__main__":
    raise SystemExit(main())
