"""What durability costs: ingest with the write-ahead log on vs off, and time to reopen a big store.

    python -m bench.durability [--quick] [--rebuild]

Ingest: bench/synthetic.py chat() into a fresh on-disk store, Config.of(wal=True) vs Config.of(wal=False)
(and wal=True with compact_log=False: log record format 1, every note in full, for the log bytes per note),
at batch 1 (one add per interaction: one fsync each) and batch 256 (one fsync per group). Only the
add loop is timed; the closing snapshot is timed apart.

Reopen: a store of `--notes` notes is built once with wal=False and closed (one snapshot), cached under
/tmp/durability_helper/. A copy of it is opened as a writer (`Memory(path)` + the first search, which
loads the tenant), as is a copy with `--log-records` single-interaction records left in the log by a
process that died without closing. Copies are fresh in the page cache: this is a warm reopen.
The reopen store's interactions carry a unique "Ref <i>." so near-duplicate folding keeps them apart.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import engine.storage.tenant_store
from bench.common import disk_bytes, table, write_json
from bench.synthetic import chat
from engine import Config, Memory
from engine.encode import Encoder, make_encoder

CACHE = Path("/tmp/durability_helper")
TENANT = "bench"
CACHE_VERSION = 2  # bump when the store format changes, to rebuild cached stores


def _items(n: int, seed: int = 0, unique: bool = False) -> list[dict[str, Any]]:
    out = chat(n, seed=seed)
    if unique:
        for i, it in enumerate(out):
            it["content"] = f"{it['content']} Ref {i}."
    return out


# --- ingest: log on vs off ------------------------------------------------------------------------------
def ingest_rate(
    items: list[dict[str, Any]], batch_size: int, wal: bool, encoder: Encoder, compact: bool = True
) -> dict[str, Any]:
    path = CACHE / "bench-ingest" / f"{'wal' if wal else 'nowal'}-b{batch_size}"
    shutil.rmtree(path, ignore_errors=True)
    mem = Memory(path, Config.of(wal=wal, compact_log=compact), encoder=encoder)
    started = time.perf_counter()
    for i in range(0, len(items), batch_size):
        mem.add_many(items[i : i + batch_size], tenant=TENANT)
    elapsed = time.perf_counter() - started
    log = path / "tenants" / TENANT / "wal.log"
    log_bytes = log.stat().st_size if log.exists() else 0
    started = time.perf_counter()
    mem.close()
    close_s = time.perf_counter() - started
    snaps = list((path / "tenants" / TENANT).glob("snap-*"))
    snap_bytes = disk_bytes(max(snaps)) if snaps else 0
    shutil.rmtree(path, ignore_errors=True)
    return {
        "batch": batch_size,
        "wal": wal,
        "log_format": (2 if compact else 1) if wal else None,
        "snapshot_bytes_per_item": snap_bytes / len(items),
        "interactions": len(items),
        "seconds": elapsed,
        "per_s": len(items) / elapsed,
        "log_bytes_per_item": log_bytes / len(items),
        "close_s": close_s,
    }


def ingest_table(
    n_grouped: int, n_single: int, encoder: Encoder
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rows, ratios = [], []
    for batch, n in ((1, n_single), (256, n_grouped)):
        items = _items(n, seed=1)
        on, off = (ingest_rate(items, batch, wal, encoder) for wal in (True, False))
        full = ingest_rate(items, batch, True, encoder, compact=False)  # log format 1, for the record
        rows += [on, full, off]
        ratios.append(
            {
                "batch": batch,
                "interactions": n,
                "wal_on_per_s": on["per_s"],
                "wal_off_per_s": off["per_s"],
                "on_over_off": on["per_s"] / off["per_s"],
                "ms_per_add_for_log": (on["seconds"] - off["seconds"]) / (n / batch) * 1e3,
            }
        )
    return rows, ratios


# --- reopen: snapshot only vs snapshot + log --------------------------------------------------------------
def base_store(n_notes: int, encoder: Encoder, rebuild: bool) -> Path:
    """A closed store of at least `n_notes` notes (one snapshot, no log), built once and cached."""
    path = CACHE / f"reopen-{n_notes}"
    params = {"version": CACHE_VERSION, "notes": n_notes, "encoder": encoder.name}
    marker = path / "bench-params.json"
    if not rebuild and marker.exists() and json.loads(marker.read_text()) == params:
        return path
    shutil.rmtree(path, ignore_errors=True)
    items = _items(n_notes * 6 // 5, seed=2, unique=True)  # a few still fold into near-duplicates
    started = time.perf_counter()
    with Memory(path, Config.of(wal=False), encoder=encoder) as mem:
        for i in range(0, len(items), 1024):
            mem.add_many(items[i : i + 1024], tenant=TENANT)
            if len(mem.notes(TENANT)) >= n_notes:
                break
    print(f"built {path} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    marker.write_text(json.dumps(params))
    return path


_APPEND_AND_DIE = """
import os, sys, json
from engine import Config, Memory
path, items = sys.argv[1], json.loads(open(sys.argv[2]).read())
mem = Memory(path, Config.of(wal=True, snapshot_every=10**9))
for item in items:
    mem.add_many([item], tenant=sys.argv[3])
os._exit(0)  # die without close: every record stays in the log
"""


def log_store(base: Path, n_records: int, rebuild: bool) -> Path:
    """`base` plus `n_records` one-interaction records left in its log (cached)."""
    path = base.with_name(f"{base.name}-log{n_records}")
    marker = path / "bench-params.json"
    params = {**json.loads((base / "bench-params.json").read_text()), "log_records": n_records}
    if not rebuild and marker.exists() and json.loads(marker.read_text()) == params:
        return path
    shutil.rmtree(path, ignore_errors=True)
    shutil.copytree(base, path)
    spec = CACHE / "log-items.json"
    spec.write_text(json.dumps(_items(n_records, seed=3, unique=True)))
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", _APPEND_AND_DIE, str(path), str(spec), TENANT],
        check=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    print(f"built {path} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    marker.write_text(json.dumps(params))
    return path


class _SnapshotTimer:
    """Times engine.storage.tenant_store's snapshot reads, so a reopen splits into snapshot load and log replay."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._real = engine.storage.tenant_store.read_snapshot
        engine.storage.tenant_store.read_snapshot = self._timed  # type: ignore[assignment]

    def _timed(self, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return self._real(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - started


def reopen(cached: Path, label: str, encoder: Encoder, timer: _SnapshotTimer) -> dict[str, Any]:
    path = CACHE / "reopen-scratch"
    shutil.rmtree(path, ignore_errors=True)
    shutil.copytree(cached, path)
    timer.seconds = 0.0
    started = time.perf_counter()
    mem = Memory(path, Config(), encoder=encoder)
    notes = len(mem.notes(TENANT))  # the first use of the tenant loads it
    load_s = time.perf_counter() - started
    hits = mem.search("guitar lessons in Lisbon", tenant=TENANT, k=10)
    open_s = time.perf_counter() - started
    log = path / "tenants" / TENANT / "wal.log"
    log_bytes = log.stat().st_size if log.exists() else 0
    started = time.perf_counter()
    mem.close()  # after a replay this writes the first snapshot
    close_s = time.perf_counter() - started
    row = {
        "store": label,
        "notes": notes,
        "store_mb": disk_bytes(cached) / 2**20,
        "log_mb": log_bytes / 2**20,
        "open_and_search_s": open_s,
        "snapshot_s": timer.seconds,
        "replay_s": load_s - timer.seconds,
        "search_s": open_s - load_s,
        "hits": len(hits),
        "close_s": close_s,
    }
    shutil.rmtree(path, ignore_errors=True)
    return row


def reopen_table(
    n_notes: int, n_log: int, encoder: Encoder, rebuild: bool, build_only: bool
) -> list[dict[str, Any]]:
    base = base_store(n_notes, encoder, rebuild)
    logged = log_store(base, n_log, rebuild)
    if build_only:
        return []
    timer = _SnapshotTimer()
    return [
        reopen(base, "snapshot only", encoder, timer),
        reopen(logged, f"snapshot + {n_log} log records", encoder, timer),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes: a smoke run in well under a minute")
    ap.add_argument(
        "--part",
        choices=["all", "ingest", "build", "reopen"],
        default="all",
        help="build: only build the cached reopen stores",
    )
    ap.add_argument("--rebuild", action="store_true", help="rebuild the cached reopen stores")
    args = ap.parse_args()
    n_grouped, n_single, n_notes, n_log = (
        (2_000, 200, 5_000, 500) if args.quick else (20_000, 2_000, 100_000, 10_000)
    )
    started = time.perf_counter()
    encoder = make_encoder(Config())
    out: dict[str, Any] = {"quick": args.quick, "encoder_load_s": time.perf_counter() - started}
    if args.part in ("all", "ingest"):
        out["ingest"], out["ratios"] = ingest_table(n_grouped, n_single, encoder)
        print(
            table(
                out["ingest"],
                [
                    "batch",
                    "wal",
                    "log_format",
                    "interactions",
                    "seconds",
                    "per_s",
                    "log_bytes_per_item",
                    "snapshot_bytes_per_item",
                    "close_s",
                ],
            )
        )
        print()
        print(
            table(
                out["ratios"],
                [
                    "batch",
                    "interactions",
                    "wal_on_per_s",
                    "wal_off_per_s",
                    "on_over_off",
                    "ms_per_add_for_log",
                ],
            )
        )
        print()
    if args.part in ("all", "build", "reopen"):
        out["reopen"] = reopen_table(n_notes, n_log, encoder, args.rebuild, build_only=args.part == "build")
    if out.get("reopen"):
        print(
            table(
                out["reopen"],
                [
                    "store",
                    "notes",
                    "store_mb",
                    "log_mb",
                    "open_and_search_s",
                    "snapshot_s",
                    "replay_s",
                    "search_s",
                    "hits",
                    "close_s",
                ],
            )
        )
        out["replay_ms_per_record"] = out["reopen"][1]["replay_s"] / n_log * 1e3
        print(
            f"\nreplay: {out['replay_ms_per_record']:.2f} ms per log record; "
            f"encoder load (not in the reopen times): {out['encoder_load_s']:.2f} s"
        )
    if args.part != "build":
        name = (
            "durability" + ("-quick" if args.quick else "") + ("" if args.part == "all" else f"-{args.part}")
        )
        write_json(name, out)


if __name__ == "__main__":
    main()
