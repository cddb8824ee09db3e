"""Single-process bulk ingestion of chat logs: validate, then batch per tenant, with a progress bar."""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from engine.config import Config
from engine.cost import CostMeter
from engine.io.chatlog import ChatRecord, read_chatlog, validate_chatlog
from engine.memory import Memory
from engine.storage.fsutil import atomic_write_bytes
from engine.write.validate import check_size


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
    """Ingest every file into `store`; with on_error='fail' a bad line anywhere rejects the run before any
    write. Every tenant the files name is opened (and so locked) before the first write, so a tenant held
    by another writer stops the run before anything is written, not half way."""
    config = config or Config()
    files = [Path(f) for f in files]
    if on_error == "fail":
        for f in files:
            problems = validate_chatlog(f, fmt=fmt)  # type: ignore[arg-type]
            if problems:
                raise problems[0]
    total, tenants = _plan(files, fmt, tenant, config)
    started = time.perf_counter()
    with (
        Memory(store, config) as mem,
        tqdm(total=total, unit="msg", disable=not progress, smoothing=0.1) as bar,
    ):
        mem.open_tenants(sorted(tenants))
        run = IngestRun()
        counts = ingest_records(mem, _records(files, fmt, on_error, rejects), tenant, batch_size, bar, run)
        save_cost(store, mem.cost)
        notes = sum(mem.count(t) for t in counts)
    elapsed = time.perf_counter() - started
    return {
        "records": sum(counts.values()),
        "skipped_duplicate_ids": run.duplicates,
        "tenants": dict(counts),
        "notes": notes,
        "seconds": round(elapsed, 3),
        "records_per_s": round(sum(counts.values()) / max(elapsed, 1e-9), 1),
        "cost": mem.cost.report(max(notes, 1)),
        "llm_fallback_rate": round(mem.cost.fallback_rate(), 4),
        "llm_fallback_reasons": mem.cost.fallback_reasons(),
    }


def _plan(files: Sequence[Path], fmt: str, default_tenant: str, config: Config) -> tuple[int, set[str]]:
    """Records and tenants of the run, from a pass that writes nothing; a record past
    max_content_bytes stops the run here, naming its file:line, rather than after others were written."""
    total, tenants = 0, set()
    for f in files:
        for rec in read_chatlog(f, fmt=fmt, on_error="skip"):  # type: ignore[arg-type]
            check_size(rec.interaction.content, config.write.max_content_bytes, "content", rec.where)
            tenants.add(rec.tenant or default_tenant)
            total += 1
    return total, tenants


@dataclass(slots=True)
class IngestRun:
    duplicates: int = 0
    """Records whose id an earlier record of this run already had: they add nothing (first one wins)."""
    seen: dict[str, set[str]] = field(default_factory=dict)


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
    mem: Memory,
    records: Iterable[ChatRecord],
    default_tenant: str,
    batch_size: int,
    bar: tqdm | None = None,
    run: IngestRun | None = None,
) -> dict[str, int]:
    """Group records per tenant into batches of `batch_size` and add them; returns records per tenant."""
    pending: dict[str, list[Any]] = defaultdict(list)
    counts: dict[str, int] = defaultdict(int)
    run = run if run is not None else IngestRun()

    def flush(name: str) -> None:
        batch = pending.pop(name, [])
        if batch:
            mem.add_interactions(batch, tenant=name)
            counts[name] += len(batch)
            if bar is not None:
                bar.update(len(batch))

    for rec in records:
        name = rec.tenant or default_tenant
        seen = run.seen.setdefault(name, set())
        if rec.interaction.source_id in seen:
            run.duplicates += 1
            if bar is not None:
                bar.update(1)
            continue
        seen.add(rec.interaction.source_id or "")
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
    path.parent.mkdir(parents=True, exist_ok=True)  # an empty run has made no tenant (nor the store)
    atomic_write_bytes(path, json.dumps(total.report(), indent=1).encode())


def read_cost(store: Path, num_notes: int) -> dict[str, Any]:
    path = Path(store) / "cost.json"
    meter = CostMeter.from_report(json.loads(path.read_text())) if path.exists() else CostMeter()
    return meter.report(num_notes)
