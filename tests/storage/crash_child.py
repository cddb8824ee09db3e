"""Child process for tests/storage/test_crash.py and tests/storage/test_corruption.py: ingest batches into a store.

    python tests/storage/crash_child.py STORE INPUT.json [--snapshot-every N] [--announce-snapshots]
                                [--checkpoint-after I [I ...]] [--exit-without-close]

INPUT.json is {"tenant": name, "batches": [[item, ...], ...]}, items as `Memory.add_many` takes them.
Every batch is fed on every run: stored source ids are skipped by the engine, which is how a run
resumes after a crash. One JSON line per event goes to stdout, flushed at once:

    {"ready": true}                     the store is open (and the tenant loaded)
    {"ack": i, "sources": [...]}        batch i was acknowledged: printed only after add_many returned
    {"snapshot": seq}                   a snapshot write is about to start (with --announce-snapshots)
    {"done": true}                      every batch is in and the store is closed

--exit-without-close ends with os._exit(0) after the last batch: a process that dies without close
(no final checkpoint), used to build stores whose newest state is only in the log.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import engine.storage.tenant_store  # noqa: E402
from engine import Config, Memory  # noqa: E402


def emit(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def announce_snapshots() -> None:
    real = engine.storage.tenant_store.write_snapshot

    def announced(folder: Path, tm: Any, seq: int, *args: Any) -> Any:
        emit({"snapshot": seq})
        return real(folder, tm, seq, *args)

    engine.storage.tenant_store.write_snapshot = announced  # type: ignore[assignment]


def run(args: argparse.Namespace) -> None:
    spec = json.loads(Path(args.input).read_text())
    tenant, batches = spec["tenant"], spec["batches"]
    mem = Memory(args.store, Config.of(snapshot_every=args.snapshot_every))
    mem.notes(tenant)  # open the tenant now: snapshot load + log replay
    emit({"ready": True})
    for i, batch in enumerate(batches):
        mem.add_many(batch, tenant=tenant)
        emit({"ack": i, "sources": [item["source_id"] for item in batch]})
        if i in args.checkpoint_after:
            mem.checkpoint()
    if args.exit_without_close:
        os._exit(0)
    mem.close()
    emit({"done": True})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("store")
    ap.add_argument("input")
    ap.add_argument("--snapshot-every", type=int, default=50_000)
    ap.add_argument("--announce-snapshots", action="store_true")
    ap.add_argument("--checkpoint-after", type=int, nargs="*", default=[])
    ap.add_argument("--exit-without-close", action="store_true")
    args = ap.parse_args()
    if args.announce_snapshots:
        announce_snapshots()
    run(args)


if __name__ == "__main__":
    main()
