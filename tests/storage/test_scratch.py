"""Working files (history spills, the lexical working copy) live in the tenant's scratch folder, one
folder per open tenant, and what a dead process left there is cleared by the next open.

They used to go to the system's temp folder: a process killed there left them for good, and on a tmpfs
/tmp they sat in RAM. The template store was written by a child that died without closing
(tests/storage/conftest.py), so its scratch folder holds that child's working folder.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import pytest

from bench.synthetic import chat
from engine.encode import Encoder
from engine.state import history
from engine.storage import scratch
from tests.storage.damaged import BATCHES, TENANT, folder, open_store

QUERY = BATCHES[2][0]["content"]


@pytest.fixture
def system_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty folder standing in for the system's temp folder."""
    temp = tmp_path / "system-temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    return temp


def _entries(path: Path) -> set[str]:
    return {p.name for p in path.iterdir()} if path.is_dir() else set()


def _kinds(work: Path) -> set[str]:
    return {name.split("-")[1] for name in _entries(work) if name.startswith("amem-")}


def test_an_open_clears_what_a_dead_process_left_and_works_in_its_own_folder(
    victim: Path, encoder: Encoder, system_temp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = folder(victim) / "scratch"
    (dead,) = _entries(root)
    assert _kinds(root / dead) == {"lexical"}  # the dead child's working copy
    monkeypatch.setattr(history, "SEAL_EVERY", 8)  # the batch below spills versions
    mem = open_store(victim, encoder)
    try:
        assert mem.search(QUERY, tenant=TENANT, k=1)
        mem.add_many(chat(20, seed=11), tenant=TENANT)
        (mine,) = _entries(root)
        assert mine != dead and mine.startswith(f"{os.getpid()}-")
        assert _kinds(root / mine) == {"lexical", "history"}
        assert any(mem.history(n.id, tenant=TENANT) for n in mem.notes(TENANT))  # read from the spills
    finally:
        mem.close()
    assert _entries(root) == set() and _entries(system_temp) == set()


def test_a_reader_works_in_a_folder_of_its_own_and_leaves_the_writers_alone(
    victim: Path, encoder: Encoder, system_temp: Path
) -> None:
    root = folder(victim) / "scratch"
    writer = open_store(victim, encoder)
    try:
        before = [h.note.id for h in writer.search(QUERY, tenant=TENANT, k=3)]
        (writers,) = _entries(root)
        reader = open_store(victim, encoder, read_only=True)
        try:
            assert [h.note.id for h in reader.search(QUERY, tenant=TENANT, k=3)] == before
            assert len(_entries(root)) == 2 and _kinds(root / writers) == {"lexical"}
        finally:
            reader.close()
        assert _entries(root) == {writers}
        assert [h.note.id for h in writer.search(QUERY, tenant=TENANT, k=3)] == before
    finally:
        writer.close()
    assert _entries(system_temp) == set()


def test_a_reader_that_cannot_write_in_the_store_works_in_the_system_temp(
    victim: Path, encoder: Encoder, system_temp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = tempfile.mkdtemp

    def refused(suffix: str | None = None, prefix: str | None = None, dir: str | None = None) -> str:
        if dir is not None and Path(dir).is_relative_to(victim):
            raise PermissionError(13, "Permission denied", dir)
        return real(suffix, prefix, dir)

    monkeypatch.setattr(tempfile, "mkdtemp", refused)
    reader = open_store(victim, encoder, read_only=True)
    try:
        assert reader.search(QUERY, tenant=TENANT, k=1)
        assert _kinds(system_temp) == {"lexical"}
    finally:
        reader.close()


def test_a_folder_not_locked_yet_is_left_alone_until_it_is_old(tmp_path: Path) -> None:
    young, old, live = (tmp_path / name for name in ("young", "old", "live"))
    for path in (young, old, live):
        path.mkdir()
    past = time.time() - scratch.UNLOCKED_GRACE_S - 5
    os.utime(old, (past, past))
    held = scratch.StoreLock(live / "LOCK").acquire()
    try:
        assert scratch.clear_abandoned(tmp_path) == [old]
        assert _entries(tmp_path) == {"young", "live"}
    finally:
        held.release()
    assert scratch.clear_abandoned(tmp_path) == [live]
