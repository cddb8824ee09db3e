"""Edges of `amem ingest`: empty input, duplicate and mixed-type ids, a locked tenant among many."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine import Config, Memory
from engine.errors import StoreLocked, TooLarge
from engine.io.ingest import ingest_files

ROOT = Path(__file__).resolve().parents[2]


def _jsonl(path: Path, *rows: dict[str, object]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _row(i: int, **extra: object) -> dict[str, object]:
    return {"content": f"Maya tells story number {i} about hiking.", "timestamp": 1_700_000_000 + i, **extra}


@pytest.mark.parametrize("text", ["", "\n\n  \n"])
def test_empty_input_into_a_new_store_is_zero_records(tmp_path: Path, text: str) -> None:
    log = tmp_path / "empty.jsonl"
    log.write_text(text)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "engine.cli", "ingest", str(log), "--store", str(tmp_path / "new")]
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["records"] == 0
    assert "0 records ingested" in run.stderr


def test_duplicate_ids_are_counted_and_int_and_str_ids_differ(tmp_path: Path) -> None:
    log = _jsonl(
        tmp_path / "c.jsonl",
        _row(1, id=7),
        _row(2, id="7"),
        _row(3, id="a"),
        _row(4, id="a"),  # dropped: its id was seen (first one wins), and counted
        _row(5, id=7),  # dropped too
    )
    report = ingest_files([log], tmp_path / "s", progress=False)
    assert report["skipped_duplicate_ids"] == 2 and report["records"] == 3
    with Memory(tmp_path / "s", Config.of(read_only=True)) as mem:
        texts = sorted(n.content for n in mem.notes())
    assert [t.split()[4] for t in texts] == ["1", "2", "3"]


def test_a_locked_tenant_stops_a_multi_tenant_ingest_before_any_write(tmp_path: Path) -> None:
    store = tmp_path / "s"
    rows = [_row(i, tenant="alpha") for i in range(300)] + [_row(1000, tenant="beta")]
    log = _jsonl(tmp_path / "c.jsonl", *rows)
    # A writer holding only tenant "beta" (as a Ray shard does: no store lock, the tenant's own).
    holder = Memory(store, Config.of(store_lock=False))
    holder.add("Beta's own note.", tenant="beta")
    try:
        with pytest.raises(StoreLocked, match="beta"):
            ingest_files([log], store, batch_size=50, progress=False, config=Config.of(store_lock=False))
    finally:
        holder.close()
    with Memory(store, Config.of(read_only=True)) as mem:
        assert mem.notes("alpha") == []  # nothing of alpha was written before the lock stopped the run


def test_content_past_the_limit_stops_the_run_naming_the_line(tmp_path: Path) -> None:
    log = _jsonl(tmp_path / "c.jsonl", _row(1), {"content": "x" * 5000, "timestamp": 1})
    with pytest.raises(TooLarge, match=r"c.jsonl:2"):
        ingest_files([log], tmp_path / "s", progress=False, config=Config.of(max_content_bytes=4096))
    assert not (tmp_path / "s" / "tenants").exists()
