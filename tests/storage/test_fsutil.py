"""engine/fsutil.py: a file is its old version or its new one, never half of each."""

from __future__ import annotations

import errno
import io
import os
from pathlib import Path
from typing import Any

import pytest

from engine.errors import StoreError
from engine.storage.fsutil import (
    atomic_write,
    atomic_write_bytes,
    copy_range,
    fsync_dir,
    fsync_file,
    remove_stale_temps,
    temp_path_for,
    write_all,
)


def test_atomic_write_replaces_and_leaves_nothing_behind(tmp_path: Path) -> None:
    target = tmp_path / "manifest.json"
    atomic_write_bytes(target, b"one")
    atomic_write_bytes(target, b"two")
    assert target.read_bytes() == b"two"
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.json"]


def test_a_failing_body_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "f"
    atomic_write_bytes(target, b"old")
    with pytest.raises(RuntimeError), atomic_write(target) as out:
        out.write(b"half of the new")
        raise RuntimeError("crash in the middle")
    assert target.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["f"]


def test_a_full_disk_is_a_store_error_and_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "f"
    atomic_write_bytes(target, b"old")

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(StoreError, match="No space left"):
        atomic_write_bytes(target, b"new")
    monkeypatch.undo()
    assert target.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["f"]


def test_a_missing_directory_is_a_store_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="atomic write failed"):
        atomic_write_bytes(tmp_path / "no" / "f", b"x")
    with pytest.raises(StoreError):
        fsync_dir(tmp_path / "no")
    with pytest.raises(StoreError):
        fsync_file(tmp_path / "no")


def test_stale_temps_are_removed_and_nothing_else(tmp_path: Path) -> None:
    stale = temp_path_for(tmp_path / "meta.json")
    stale.write_bytes(b"left by a crash")
    keep = [tmp_path / "meta.json", tmp_path / "notes.tmp", tmp_path / ".hidden"]
    for path in keep:
        path.write_bytes(b"x")
    assert remove_stale_temps(tmp_path) == [stale]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in keep)


def test_write_all_survives_short_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_write = os.write

    def short(fd: int, data: Any) -> int:
        return real_write(fd, bytes(data[:3]))

    fd = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT)
    monkeypatch.setattr(os, "write", short)
    write_all(fd, b"0123456789")
    monkeypatch.undo()
    os.close(fd)
    assert (tmp_path / "f").read_bytes() == b"0123456789"


def test_copy_range(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(bytes(range(256)) * 10)
    out = io.BytesIO()
    copy_range(tmp_path / "f", 5, 2000, out, chunk=7)
    assert out.getvalue() == (bytes(range(256)) * 10)[5:2000]
    with pytest.raises(StoreError, match="shrank"):
        copy_range(tmp_path / "f", 0, 5000, io.BytesIO())
