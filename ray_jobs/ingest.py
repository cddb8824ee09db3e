"""`amem ingest --ray`: many chat-log files -> Ray Data -> per-tenant deliveries -> N shard actors.

    check files (one Ray task each: count, validate)  ->  Ray Data: one read task per file, rows in
    file order  ->  driver groups each block by tenant and routes the tenant to shard blake2b(tenant) % N
    ->  shard actor batches per tenant (max_batch, max_wait_ms) and calls Memory.add_interactions

Every tenant lives on exactly one shard, so each tenant folder keeps its single writer (the store's
lock) and its own Parquet snapshots, written when the shard closes. A shard that is killed is
restarted by Ray (max_restarts) and sent again what it had not acknowledged (ray_jobs/router.py).

Global LLM limit: a static split. Each shard gets llm_max_in_flight // N requests and
llm_max_tokens_in_flight // N tokens in flight, so the shards together never exceed the configured
limits and no request pays a round trip to a shared semaphore. The cost: a shard whose tenants are
done leaves its share idle (the skew of tenants over shards shows in the report's per-shard counts).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any, cast

import pyarrow as pa
import ray
from tqdm import tqdm

from engine.config import Config
from engine.cost import CostMeter
from engine.errors import ConfigError, InputError
from engine.io.ingest import save_cost
from engine.model.tenant_name import validate_tenant
from engine.storage.lock import StoreLock
from engine.storage.pool import STORE_LOCK
from ray_jobs.cluster import ray_session
from ray_jobs.reader import FileCheck, check_file, file_rows
from ray_jobs.router import Router, get
from ray_jobs.shard import ShardWorker

BLOCK_ROWS = 1024
"""Rows per block the driver groups by tenant; one delivery is at most this many rows of one tenant."""


def run_ingest(
    files: Sequence[str],
    store: str,
    default_tenant: str = "default",
    config: Config | None = None,
    num_shards: int = 2,
    fmt: str = "auto",
    on_error: str = "fail",
    *,
    max_batch: int = 256,
    max_wait_ms: float = 200.0,
    max_restarts: int = 3,
    progress: bool = True,
    job_name: str | None = None,
) -> dict[str, Any]:
    """Ingest `files` into `store` with `num_shards` shard actors; returns the run's report.

    Uses the running Ray cluster if there is one, else starts a local one and stops it at the end. With
    on_error='fail' a bad record anywhere rejects the run before any write.
    """
    config = config or Config()
    validate_tenant(default_tenant)
    if on_error not in ("fail", "skip"):
        raise InputError(f"on_error must be 'fail' or 'skip', got {on_error!r}", field="on_error")
    # The driver holds the store's writer lock; its shards write disjoint tenants under it.
    shard_config = split_llm_limits(config, num_shards).with_(store_lock=False)
    started = time.perf_counter()
    Path(store).mkdir(parents=True, exist_ok=True)
    with StoreLock(Path(store) / STORE_LOCK), ray_session():
        checks = _check_files([str(Path(f)) for f in files], fmt, on_error)
        actors = _start_shards(
            store, shard_config, num_shards, max_batch, max_wait_ms, max_restarts, job_name
        )
        total = sum(c.num_records - c.num_rejected for c in checks)
        with tqdm(total=total, unit="msg", disable=not progress, smoothing=0.1) as bar:
            router = Router(actors, max_ready_rows=4 * max_batch, bar=bar)
            notes = _drive(router, [c.path for c in checks], fmt, default_tenant, Path(store))
    return _report(router, checks, notes, time.perf_counter() - started, shard_config)


def split_llm_limits(config: Config, num_shards: int) -> Config:
    """The config each shard runs with: its share of the global requests / tokens in flight."""
    if num_shards < 1:
        raise ConfigError(f"num_shards must be >= 1, got {num_shards}")
    if config.llm.annotator == "embedded":
        return config
    if config.llm.annotator == "vllm" and num_shards > 1:
        raise ConfigError(
            "annotator='vllm' loads the model in-process: one per shard would not fit; "
            "serve it (vllm serve) and use annotator='llm', or use one shard"
        )
    if num_shards > config.llm.max_in_flight:
        raise ConfigError(
            f"{num_shards} shards cannot share llm_max_in_flight={config.llm.max_in_flight}: "
            "every shard needs at least one request in flight"
        )
    return config.with_(
        llm_max_in_flight=config.llm.max_in_flight // num_shards,
        llm_max_tokens_in_flight=config.llm.max_tokens_in_flight // num_shards,
    )


def _check_files(files: list[str], fmt: str, on_error: str) -> list[FileCheck]:
    checks: list[FileCheck] = get([ray.remote(check_file).remote(f, fmt) for f in files])
    if on_error == "fail":
        for check in checks:
            if check.problems:
                raise check.problems[0]
    return checks


def _start_shards(
    store: str,
    config: Config,
    num_shards: int,
    max_batch: int,
    max_wait_ms: float,
    max_restarts: int,
    job_name: str | None,
) -> list[Any]:
    # num_cpus=0: the actors sleep between batches, and Ray Data's read tasks need the CPUs too; a
    # shard reserving a whole CPU would leave the reads unscheduled on a small machine.
    # max_concurrency: status calls must be answered while submit calls and the worker run.
    actor_cls = ray.remote(ShardWorker)
    Path(store).mkdir(parents=True, exist_ok=True)
    return [
        actor_cls.options(
            name=f"{job_name}-shard-{i}" if job_name else None,
            num_cpus=0,
            max_restarts=max_restarts,
            max_task_retries=0,
            max_concurrency=4,
        ).remote(i, store, config, max_batch, max_wait_ms)
        for i in range(num_shards)
    ]


def _drive(router: Router, files: list[str], fmt: str, default_tenant: str, store: Path) -> dict[str, int]:
    """Route every row, wait for every ack, close the shards; notes per tenant."""
    try:
        _route(router, files, fmt, default_tenant)
        router.finish()
    except BaseException:
        # What was acknowledged is in the write-ahead logs; a re-run resumes from there.
        _kill([s.actor for s in router.shards])
        raise
    return _close_shards(router, store)


def _route(router: Router, files: list[str], fmt: str, default_tenant: str) -> None:
    """Rows in file order (preserve_order) so each tenant's batches match single-process ingest."""
    ctx = ray.data.DataContext.get_current()
    ctx.execution_options.preserve_order = True
    ctx.enable_progress_bars = False  # the driver's tqdm bar is the one to read
    if not files:
        return
    dataset = ray.data.from_items([{"path": f} for f in files], override_num_blocks=len(files))
    rows = dataset.flat_map(partial(_rows_of, fmt=fmt, default_tenant=default_tenant))
    for block in rows.iter_batches(batch_size=BLOCK_ROWS, batch_format="pyarrow"):
        groups: dict[str, list[dict[str, Any]]] = {}
        for row in cast(pa.Table, block).to_pylist():
            groups.setdefault(row["tenant"], []).append(row)
        for tenant, group in groups.items():
            router.send(tenant, group)


def _rows_of(item: dict[str, Any], fmt: str, default_tenant: str) -> Iterator[dict[str, Any]]:
    return file_rows(item["path"], fmt, default_tenant)


def _close_shards(router: Router, store: Path) -> dict[str, int]:
    """Snapshot and stop every shard; add their LLM cost to store/cost.json; notes per tenant."""
    try:
        closed = get([s.actor.close.remote(sorted(s.tenants)) for s in router.shards])
    finally:
        _kill([s.actor for s in router.shards])
    cost = CostMeter()
    for shard in closed:
        cost.merge(CostMeter.from_report(shard["cost"]))
    save_cost(store, cost)
    return {name: n for shard in closed for name, n in shard["notes"].items()}


def _kill(actors: list[Any]) -> None:
    for actor in actors:
        ray.kill(actor, no_restart=True)


def _report(
    router: Router, checks: list[FileCheck], notes: dict[str, int], elapsed: float, shard_config: Config
) -> dict[str, Any]:
    records = sum(router.records_per_tenant.values())
    return {
        "records": records,
        "rejected": sum(c.num_rejected for c in checks),
        "tenants": dict(sorted(router.records_per_tenant.items())),
        "notes": sum(notes.values()),
        "seconds": round(elapsed, 3),
        "records_per_s": round(records / max(elapsed, 1e-9), 1),
        "shards": [
            {"shard": i, "tenants": len(s.tenants), "records": s.num_records}
            for i, s in enumerate(router.shards)
        ],
        "restarts": router.num_restarts,
        "llm_max_in_flight_per_shard": None
        if shard_config.llm.annotator == "embedded"
        else shard_config.llm.max_in_flight,
    }
