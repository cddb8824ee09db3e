"""`amem` CLI: ingest in one process, search / show / stats in others."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "sample_chat.jsonl"


def amem(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "engine.cli", *args], capture_output=True, text=True, cwd=ROOT, timeout=120
    )


def test_ingest_then_search_in_separate_processes(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    done = amem("ingest", str(SAMPLE), "--tenant", "demo", "--store", store)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["records"] == 14 and report["notes"] == 13  # one exact repeat is merged
    found = amem(
        "search", "Where does Maya live now?", "--tenant", "demo", "--store", store, "--json", "--k", "3"
    )
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)
    assert "Seattle" in hits[0]["content"]
    assert all("New York" not in h["content"] for h in hits)  # superseded
    shown = amem("show", hits[0]["id"], "--tenant", "demo", "--store", store, "--history")
    assert json.loads(shown.stdout)["note"]["content"] == hits[0]["content"]
    stats = json.loads(amem("stats", "--store", store).stdout)
    assert stats["tenants"]["demo"]["notes"] == 13 and stats["tenants"]["demo"]["superseded"] >= 1


def test_reingest_is_resumable(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    for _ in range(2):
        done = amem("ingest", str(SAMPLE), "--tenant", "demo", "--store", store)
        assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["notes"] == 13


def test_bad_line_fails_with_file_line_field_and_writes_nothing(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(
        '{"content": "fine", "timestamp": "2024-01-01T00:00:00Z"}\n{"content": "", "timestamp": 1}\n'
    )
    store = tmp_path / "store"
    done = amem("ingest", str(log), "--tenant", "t", "--store", str(store))
    assert done.returncode == 2
    assert "log.jsonl:2" in done.stderr and "content" in done.stderr
    assert not (store / "tenants" / "t").exists() or not any((store / "tenants" / "t").glob("snap-*"))
