"""Search answers before a snapshot's notes and versions files are checked; every other call waits.

Those two files (most of a big snapshot's bytes) are hashed in the background
(engine/storage/checksums.py) because search reads neither. A damaged one is found by the first call
that is not a search, or by the writer's close, and the tenant moves to the older snapshot and the log
before that call goes on.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.encode import Encoder
from engine.storage import checksums
from tests.storage.damaged import (
    ALL,
    BATCHES,
    NEWEST,
    TENANT,
    batches_present,
    flip,
    folder,
    open_store,
    own_segment,
    problems,
)


@pytest.fixture
def held_versions_check(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """The background hash of the versions segments waits until the returned event is set."""
    release, real = threading.Event(), checksums.sha256_or_none

    def slow(path: Path) -> str | None:
        if path.name.startswith("versions-"):
            release.wait(60)
        return real(path)

    monkeypatch.setattr(checksums, "sha256_or_none", slow)
    monkeypatch.setattr(checksums, "_INLINE", 0)  # this small store's files take a big one's path
    yield release
    release.set()


def _search_in_thread(mem: object, query: str, refresh: bool = False) -> list[object]:
    """`refresh`: catch up with the writer first, as a `--workers` reader does before each read."""
    out: list[object] = []

    def search() -> None:
        if refresh:
            mem.refresh(TENANT)  # type: ignore[attr-defined]
        out.extend(mem.search(query, tenant=TENANT, k=3))  # type: ignore[attr-defined]

    worker = threading.Thread(target=search)
    worker.start()
    worker.join(30)
    assert not worker.is_alive(), "search waited for the background checksums"
    return out


def test_search_answers_while_the_versions_file_is_still_being_checked(
    victim: Path, encoder: Encoder, held_versions_check: threading.Event
) -> None:
    line = BATCHES[1][0]["content"]  # batch 1 is in the newest snapshot
    with open_store(victim, encoder, read_only=True) as mem:
        hits = _search_in_thread(mem, line)
        assert hits and hits[0].note.content == line  # type: ignore[attr-defined]
        held_versions_check.set()
        assert problems(mem) == [] and batches_present(mem) == ALL


def test_a_reader_catches_up_with_the_writer_without_waiting_for_the_checks(
    victim: Path, encoder: Encoder, held_versions_check: threading.Event
) -> None:
    line = BATCHES[2][0]["content"]  # batch 2 is only in the log
    with open_store(victim, encoder, read_only=True) as mem:
        hits = _search_in_thread(mem, line, refresh=True)
        assert hits and hits[0].note.content == line  # type: ignore[attr-defined]
        held_versions_check.set()


def test_the_first_call_that_is_not_a_search_finds_the_damage_and_falls_back(
    victim: Path, encoder: Encoder, held_versions_check: threading.Event
) -> None:
    segment = own_segment(folder(victim) / NEWEST)
    flip(segment, 0.9, 2)
    line = BATCHES[2][0]["content"]  # batch 2 is only in the log
    with open_store(victim, encoder, read_only=True) as mem:
        hits = _search_in_thread(mem, line)  # the newest snapshot and the log, which are whole
        assert hits and hits[0].note.content == line  # type: ignore[attr-defined]
        held_versions_check.set()
        assert batches_present(mem) == ALL  # snap-1 and the log now
        [problem] = problems(mem)
    assert f"{NEWEST}/{segment.name}: checksum mismatch" in problem and "falling back" in problem


def test_a_writer_that_only_searched_heals_the_damage_when_it_closes(victim: Path, encoder: Encoder) -> None:
    flip(folder(victim) / NEWEST / "notes.parquet")
    with open_store(victim, encoder) as mem:
        assert mem.search(BATCHES[0][0]["content"], tenant=TENANT, k=1)
    with open_store(victim, encoder) as mem:  # the close checked, fell back and wrote a whole snapshot
        assert batches_present(mem) == ALL and problems(mem) == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="nice is per thread on Linux only")
def test_the_background_checks_run_at_the_lowest_priority_and_leave_the_callers_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[int] = []
    real = checksums.sha256_or_none

    def priority_then_hash(path: Path) -> str | None:
        seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
        return real(path)

    monkeypatch.setattr(checksums, "sha256_or_none", priority_then_hash)
    monkeypatch.setattr(checksums, "_INLINE", 0)
    big = tmp_path / "versions.arrow"
    big.write_bytes(b"x" * 1000)
    before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    assert checksums.Pending({big: real(big) or ""}).error() is None
    assert seen == [19]
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == before
