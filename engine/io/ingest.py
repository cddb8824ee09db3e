"""Single-process bulk ingestion of chat logs: validate, then batch per tenant, with a progress bar."""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

from engine.config import Config
from engine.cost import CostMeter
from engine.io.chatlog import ChatRecord, count_records, read_chatlog, validate_chatlog
from engine.memory import Memory
from engine.storage.fsutil import atomic_write_bytes


def ingest_files(
    files: Sequence[Path],
    store: Path,
    tenant: str = "default",
    config: Config | None = None,
    fmt: str = "auto",
    on_error: str = "fail",
    rejects: Path | None = None,
    batch_size: int = 256,
    progress: bool = True,
) -> dict[str, Any]:
    """Ingest every file into `store`; with on_error='fail' a bad line anywhere rejects the run before any write."""
    config = config or Config()
    files = [Path(f) for f in files]
    if on_error == "fail":
        for f in files:
            problems = validate_chatlog(f, fmt=fmt)  # type: ignore[arg-type]
            if problems:
                raise problems[0]
    total = sum(int(count_records(f, fmt=fmt)) for f in files)  # type: ignore[arg-type, misc]
    started = time.perf_counter()
    with (
        Memory(store, config) as mem,
        tqdm(total=total, unit="msg", disable=not progress, smoothing=0.1) as bar,
    ):
        counts = ingest_records(mem, _records(files, fmt, on_error, rejects), tenant, batch_size, bar)
        save_cost(store, mem.cost)
        notes = sum(len(mem.notes(t)) for t in counts)
    elapsed = time.perf_counter() - started
    return {
        "records": sum(counts.values()),
        "tenants": dict(counts),
        "notes": notes,
        "seconds": round(elapsed, 3),
        "records_per_s": round(sum(counts.values()) / max(elapsed, 1e-9), 1),
        "cost": mem.cost.report(max(notes, 1)),
        "llm_fallback_rate": round(mem.cost.fallback_rate(), 4),
        "llm_fallback_reasons": mem.cost.fallback_reasons(),
    }


def fallback_problem(report: dict[str, Any], max_rate: float) -> str | None:
    """Why an ingest report fails the fallback limit (share of LLM items that fell back), or None.

    A run whose LLM answers mostly fell back to the embedded annotator did not do what was asked, even
    though every line was stored: the caller exits non-zero with the reasons.
    """
    rate = report.get("llm_fallback_rate") or 0.0
    if rate <= max_rate:
        return None
    reasons = report.get("llm_fallback_reasons") or {}
    listed = ", ".join(f"{why} x{n}" for why, n in sorted(reasons.items(), key=lambda kv: -kv[1]))
    return (
        f"{rate:.0%} of LLM items fell back to the embedded annotator (limit --max-fallback-rate "
        f"{max_rate:.0%}); reasons: {listed or 'none recorded'}"
    )


def _records(files: Sequence[Path], fmt: str, on_error: str, rejects: Path | None) -> Iterator[ChatRecord]:
    for f in files:
        yield from read_chatlog(f, fmt=fmt, on_error=on_error, rejects=rejects)  # type: ignore[arg-type]


def ingest_records(
    mem: Memory, records: Iterable[ChatRecord], default_tenant: str, batch_size: int, bar: tqdm | None = None
) -> dict[str, int]:
    """Group records per tenant into batches of `batch_size` and add them; returns records per tenant."""
    pending: dict[str, list[Any]] = defaultdict(list)
    counts: dict[str, int] = defaultdict(int)

    def flush(name: str) -> None:
        batch = pending.pop(name, [])
        if batch:
            mem.add_interactions(batch, tenant=name)
            counts[name] += len(batch)
            if bar is not None:
                bar.update(len(batch))

    for rec in records:
        name = rec.tenant or default_tenant
        pending[name].append(rec.interaction)
        if len(pending[name]) >= batch_size:
            flush(name)
    for name in list(pending):
        flush(name)
    return counts


def save_cost(store: Path, cost: CostMeter) -> None:
    """Accumulate this run's LLM cost into store/cost.json (what `amem stats` prints)."""
    path = Path(store) / "cost.json"
    total = CostMeter.from_report(json.loads(path.read_text())) if path.exists() else CostMeter()
    total.merge(cost)
    atomic_write_bytes(path, json.dumps(total.report(), indent=1).encode())


def read_cost(store: Path, num_notes: int) -> dict[str, Any]:
    path = Path(store) / "cost.json"
    meter = CostMeter.from_report(json.loads(path.read_text())) if path.exists() else CostMeter()
    return meter.report(num_notes)
