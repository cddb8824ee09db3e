"""Crash safety of the whole store: SIGKILL an ingesting process at random points, reopen, resume.

A child (tests/storage/crash_child.py, or `amem ingest`) writes batches; the parent kills it mid-run (at a
random time, right after an acknowledgement, or just after a snapshot write began), then checks:
the store opens, every batch acknowledged before the kill is there exactly once (by source id), no
batch is half there, the vector index matches the notes, and the only problem reported is a torn
log tail. The next round feeds the same input again and resumes by source id.
"""

from __future__ import annotations

import json
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.synthetic import chat
from engine import Config, Memory
from engine.encode import Encoder
from engine.io.chatlog import read_chatlog

ROOT = Path(__file__).resolve().parents[2]
CHILD = ROOT / "tests" / "storage" / "crash_child.py"
TENANT = "crash"
SNAPSHOT_EVERY = 4  # a checkpoint every few batches, so kills land in snapshot writes too
ROUNDS = 20
ROUND_CAP_S = 8.0  # the longest a round waits for its kill point before killing anyway


class Child:
    """A running child whose stdout lines (JSON events) are collected by a reader thread."""

    def __init__(self, argv: list[str], json_lines: bool = True) -> None:
        self.json_lines = json_lines
        self.lines: list[str] = []
        env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
        self.proc = subprocess.Popen(
            argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            if self.json_lines and line.endswith("\n"):  # a line cut by the kill was never acknowledged
                event = json.loads(line)
                self.seen.append(event)
                self.events.put(event)
        self.events.put({"eof": True})

    def wait_for(self, key: str, count: int, deadline: float) -> bool:
        """Block until `count` more events carrying `key` arrived; False at EOF or the deadline."""
        while count > 0:
            try:
                event = self.events.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return False
            if "eof" in event:
                return False
            count -= key in event
        return True

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=60)
        self._reader.join(timeout=60)

    def acked(self) -> set[str]:
        return {s for e in self.seen if "ack" in e for s in e["sources"]}


def _batches(n: int, rng: random.Random) -> list[list[dict[str, Any]]]:
    items = chat(n, seed=7)
    out, i = [], 0
    while i < len(items):
        size = rng.randint(1, 24)
        out.append(items[i : i + size])
        i += size
    return out


def _kill_point(child: Child, rng: random.Random) -> str:
    """Let the child run to a randomly chosen point (kind returned for the failure message)."""
    deadline = time.monotonic() + ROUND_CAP_S
    kind = rng.choice(["anytime", "after-ack", "in-snapshot"])
    if kind == "anytime":  # may land in start-up or log replay, not only in writes
        time.sleep(rng.uniform(0.2, 2.5))
    elif kind == "after-ack":
        child.wait_for("ack", rng.randint(1, 8), deadline)
        time.sleep(rng.uniform(0.0, 0.05))
    else:
        child.wait_for("ready", 1, deadline)
        child.wait_for("snapshot", 1, deadline)
        time.sleep(rng.uniform(0.0, 0.03))
    return kind


def _check_store(
    store: Path,
    encoder: Encoder,
    acked: set[str],
    batches: list[list[dict[str, Any]]],
    read_only: bool,
    where: str,
) -> set[str]:
    """The store's invariants after a crash; returns the source ids it holds."""
    config = Config.of(snapshot_every=SNAPSHOT_EVERY, read_only=read_only)
    with Memory(store, config, encoder=encoder) as mem:
        notes = mem.notes(TENANT)
        stats = mem.stats()["tenants"].get(TENANT, {})
        counts = Counter(s for n in notes for s in n.source_ids)
        problems = stats.get("problems", [])
        if notes:
            assert stats["indexed"] == len(notes), where
            assert stats["sources"] == len(counts), where
            assert mem.search("guitar lessons", tenant=TENANT, k=5), where
    assert all(c == 1 for c in counts.values()), (
        f"{where}: duplicated {[s for s, c in counts.items() if c > 1]}"
    )
    assert acked <= set(counts), f"{where}: lost acknowledged {sorted(acked - set(counts))[:5]}"
    for b in batches:  # one ChangeSet per batch: all of it or none of it
        present = {it["source_id"] in counts for it in b}
        assert len(present) == 1, f"{where}: batch starting {b[0]['source_id']} is half there"
    assert all("torn tail" in p for p in problems), f"{where}: {problems}"
    return set(counts)


def test_sigkill_during_ingest_loses_nothing_acknowledged(tmp_path: Path, encoder: Encoder) -> None:
    rng = random.Random(20240601)
    batches = _batches(1500, rng)
    spec = tmp_path / "input.json"
    spec.write_text(json.dumps({"tenant": TENANT, "batches": batches}))
    store = tmp_path / "store"
    argv = [
        sys.executable,
        str(CHILD),
        str(store),
        str(spec),
        "--snapshot-every",
        str(SNAPSHOT_EVERY),
        "--announce-snapshots",
    ]
    acked: set[str] = set()
    kinds: Counter[str] = Counter()
    for rnd in range(ROUNDS):
        child = Child(argv)
        kind = _kill_point(child, rng)
        child.kill()
        kinds[kind] += 1
        acked |= child.acked()
        _check_store(store, encoder, acked, batches, read_only=rnd % 2 == 0, where=f"round {rnd} ({kind})")
    child = Child(argv)  # the last run goes to the end
    assert child.proc.wait(timeout=300) == 0
    child.kill()
    assert child.seen[-1] == {"done": True}
    stored = _check_store(store, encoder, acked, batches, read_only=False, where="final run")
    assert stored == {it["source_id"] for b in batches for it in b}
    assert len(kinds) == 3  # every kind of kill point was exercised


def _wait_for_growth(path: Path, size: int, deadline: float) -> None:
    while time.monotonic() < deadline and (path.stat().st_size if path.exists() else 0) <= size:
        time.sleep(0.01)


def test_sigkill_during_amem_ingest_then_rerun_stores_every_line_once(
    tmp_path: Path, encoder: Encoder
) -> None:
    rng = random.Random(99)
    log = tmp_path / "chat.jsonl"
    log.write_text(
        "".join(
            json.dumps({k: v for k, v in it.items() if k != "source_id"}) + "\n" for it in chat(600, seed=3)
        )
    )
    expected = [rec.interaction.source_id for rec in read_chatlog(log)]
    store = tmp_path / "store"
    argv = [
        sys.executable,
        "-m",
        "engine.cli",
        "ingest",
        str(log),
        "--store",
        str(store),
        "--tenant",
        TENANT,
        "--batch-size",
        "16",
    ]
    wal = store / "tenants" / TENANT / "wal.log"
    partial = []
    for _ in range(4):
        size = wal.stat().st_size if wal.exists() else 0
        child = Child(argv, json_lines=False)
        _wait_for_growth(wal, size, deadline=time.monotonic() + 60)  # it is writing: kill it mid-run
        time.sleep(rng.uniform(0.0, 0.3))
        child.kill()
        partial.append(
            len(_check_store(store, encoder, set(), [], read_only=True, where="amem ingest killed"))
        )
    child = Child(argv, json_lines=False)
    assert child.proc.wait(timeout=300) == 0
    child.kill()
    stored = _check_store(store, encoder, set(), [], read_only=False, where="amem ingest rerun")
    assert stored == set(expected) and len(expected) == 600
    assert json.loads("".join(child.lines))["records"] == 600
    assert partial == sorted(partial) and partial[0] > 0 and partial[-1] < 600, partial  # killed mid-ingest
