"""engine/lock.py: one writer per store, across processes and within one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import engine.storage.lock
from engine.errors import StoreError, StoreLocked
from engine.storage.lock import StoreLock, holder_pid

# The directory that holds the `engine` package this test imported, for the child processes.
PACKAGE_ROOT = str(Path(engine.storage.lock.__file__).parents[2])

CHILD = """
import sys
from pathlib import Path
from engine.errors import StoreLocked
from engine.storage.lock import StoreLock

mode, path = sys.argv[1], Path(sys.argv[2])
if mode == "try":
    try:
        StoreLock(path).acquire()
    except StoreLocked as exc:
        print("LOCKED", exc)
        sys.exit(3)
    print("ACQUIRED")
else:
    lock = StoreLock(path).acquire()
    print("HELD", flush=True)
    sys.stdin.read()  # hold until the parent closes our stdin or kills us
"""


def _child(mode: str, path: Path, **kwargs: object) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([PACKAGE_ROOT, os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, mode, str(path)],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **kwargs,
    )  # type: ignore[call-overload]


def test_a_second_writer_process_gets_store_locked_naming_path_and_pid(tmp_path: Path) -> None:
    path = tmp_path / "LOCK"
    with StoreLock(path):
        child = _child("try", path)
        out, err = child.communicate(timeout=60)
    assert child.returncode == 3, (out, err)
    assert "LOCKED" in out and str(path) in out and f"process {os.getpid()}" in out


def test_a_lock_held_by_another_process_is_refused_then_freed_when_it_dies(tmp_path: Path) -> None:
    path = tmp_path / "LOCK"
    child = _child("hold", path, stdin=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "HELD"
        with pytest.raises(StoreLocked, match=f"process {child.pid}"):
            StoreLock(path).acquire()
        assert holder_pid(path) == child.pid
    finally:
        child.send_signal(signal.SIGKILL)  # a crash, not a clean release
        child.communicate(timeout=60)
    with StoreLock(path) as lock:
        assert lock.is_held and holder_pid(path) == os.getpid()


def test_a_second_lock_in_the_same_process_is_refused(tmp_path: Path) -> None:
    first, second = StoreLock(tmp_path / "LOCK"), StoreLock(tmp_path / "LOCK")
    first.acquire()
    with pytest.raises(StoreLocked, match=str(tmp_path / "LOCK")):
        second.acquire()
    first.release()
    second.acquire()
    assert second.is_held and not first.is_held
    second.release()


def test_acquiring_twice_through_one_object_is_refused(tmp_path: Path) -> None:
    lock = StoreLock(tmp_path / "LOCK").acquire()
    with pytest.raises(StoreLocked, match="already holds"):
        lock.acquire()
    lock.release()


def test_release_is_idempotent_and_the_lock_file_stays(tmp_path: Path) -> None:
    lock = StoreLock(tmp_path / "LOCK")
    lock.release()
    lock.acquire()
    lock.release()
    lock.release()
    assert (tmp_path / "LOCK").exists()  # never unlinked: see the module docstring
    assert not lock.is_held


def test_the_context_manager_releases_on_error(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError), StoreLock(tmp_path / "LOCK"):
        raise RuntimeError("boom")
    StoreLock(tmp_path / "LOCK").acquire().release()


def test_a_missing_directory_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="cannot open the lock file"):
        StoreLock(tmp_path / "nope" / "LOCK").acquire()


def test_holder_pid_of_a_missing_or_blank_file_is_none(tmp_path: Path) -> None:
    assert holder_pid(tmp_path / "LOCK") is None
    (tmp_path / "LOCK").write_text("")
    assert holder_pid(tmp_path / "LOCK") is None
