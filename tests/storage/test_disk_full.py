"""A full disk: on a real 2 MB tmpfs when this process may mount one (root), and by an injected ENOSPC
everywhere. Nothing half-written is left behind, errors read as amem's own, and everything that was
acknowledged is there when the store is opened again."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from bench.synthetic import chat
from engine import Config, Memory
from engine.errors import StoreError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MB tmpfs (skipped where mounting is not allowed)."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _leftovers(store: Path) -> list[Path]:
    return [p for p in store.rglob("*") if p.name.endswith(".tmp") or ".tmp-" in p.name]


def _fill(store: Path, config: Config) -> tuple[dict[str, str], BaseException]:
    """Add small batches until the disk is full; returns every acknowledged source -> id, and the error."""
    acked: dict[str, str] = {}
    mem = Memory(store, config)
    items = chat(4000, seed=3)
    try:
        for i in range(0, len(items), 10):
            batch = items[i : i + 10]
            ids = mem.add_many(batch)
            acked.update({b["source_id"]: x for b, x in zip(batch, ids, strict=True)})
    except StoreError as exc:
        error: BaseException = exc
    else:
        raise AssertionError("the disk never filled")
    with contextlib.suppress(StoreError):
        mem.close()  # the closing snapshot fails too: it must leave nothing behind
    return acked, error


def _check_reopens(store: Path, acked: dict[str, str], writable: bool = True) -> None:
    for read_only in (True, False) if writable else (True,):
        with Memory(store, Config.of(read_only=read_only)) as mem:
            found = {s: n.id for n in mem.notes() for s in n.source_ids}
            assert {s: found.get(s) for s in acked} == acked


def test_full_tmpfs_loses_nothing_acknowledged_and_leaves_no_tmp(small_disk: Path) -> None:
    store = small_disk / "store"
    acked, error = _fill(store, Config.of(snapshot_every=20))
    assert "No space left on device" in str(error) and acked
    assert _leftovers(store) == []
    _check_reopens(store, acked, writable=False)  # on the still-full disk
    subprocess.run(["mount", "-o", "remount,size=16m", str(small_disk)], check=True)
    _check_reopens(store, acked)  # with room again, the writer's closing snapshot succeeds


def test_amem_ingest_on_a_full_disk_says_amem_error_with_the_logs_message(
    small_disk: Path, tmp_path: Path
) -> None:
    log = tmp_path / "chat.jsonl"
    rows = [{"id": x.pop("source_id"), **x} for x in chat(3000, seed=4)]
    log.write_text("".join(json.dumps(x) + "\n" for x in rows))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    store = small_disk / "store"
    cmd = [
        sys.executable,
        "-m",
        "engine.cli",
        "ingest",
        str(log),
        "--store",
        str(store),
        "--batch-size",
        "50",
    ]
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 2, run.stderr[-2000:]
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("amem: error: ") and "No space left on device" in last
    assert "wal.log" in last and "Traceback" not in run.stderr
    assert _leftovers(store) == []
    with Memory(store, Config.of(read_only=True)) as mem:
        assert len(mem.notes()) > 0  # what the log acknowledged before the disk filled


def test_a_vector_index_file_that_cannot_be_written_fails_the_snapshot_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import faiss

    store = tmp_path / "store"
    items = chat(30, seed=6)
    with Memory(store) as mem:
        ids = mem.add_many(items)

        def full(*args: object) -> None:  # how FAISS reports a failed fwrite
            raise RuntimeError("Error in faiss::FileIOWriter: write failed (No space left on device)")

        monkeypatch.setattr(faiss, "write_index", full)
        with pytest.raises(StoreError, match="cannot write a snapshot"):
            mem.checkpoint()
        assert _leftovers(store) == []
        monkeypatch.undo()
    _check_reopens(store, {x["source_id"]: i for x, i in zip(items, ids, strict=True)})


def test_injected_enospc_in_a_snapshot_leaves_no_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "store"
    items = chat(30, seed=5)
    with Memory(store) as mem:
        ids = mem.add_many(items)

        def full(*args: object, **kwargs: object) -> None:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        monkeypatch.setattr(pq.ParquetWriter, "write_table", full)
        with pytest.raises(StoreError, match="cannot write a snapshot: No space left on device"):
            mem.checkpoint()
        assert _leftovers(store) == []
        monkeypatch.undo()
    _check_reopens(store, {x["source_id"]: i for x, i in zip(items, ids, strict=True)})
    assert _leftovers(store) == []
