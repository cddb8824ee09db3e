"""The write batch's collector pause: off inside, as before after, whatever happens in the body."""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Iterator

import pytest

from engine.gc_pause import gc_paused


class Node:
    """An object in a reference cycle with itself: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_the_collector_is_off_inside_and_on_again_after() -> None:
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_an_exception_in_the_body_still_enables_it_again() -> None:
    with pytest.raises(ValueError), gc_paused():
        raise ValueError("the batch failed")
    assert gc.isenabled()


def test_nested_pauses_enable_it_only_when_the_outermost_ends() -> None:
    with gc_paused():
        with pytest.raises(KeyError), gc_paused():
            raise KeyError("inner")
        assert not gc.isenabled()
        with gc_paused():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_the_caller_disabled_stays_disabled() -> None:
    gc.disable()
    with gc_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_overlapping_pauses_in_threads_end_with_it_enabled() -> None:
    inside, release = threading.Barrier(3), threading.Event()

    def batch() -> None:
        with gc_paused():
            inside.wait()
            release.wait()

    threads = [threading.Thread(target=batch) for _ in range(2)]
    for t in threads:
        t.start()
    inside.wait()
    assert not gc.isenabled()
    release.set()
    for t in threads:
        t.join()
    assert gc.isenabled()


def test_a_cycle_dropped_in_the_batch_is_collected_when_it_ends() -> None:
    with gc_paused():
        dropped = weakref.ref(Node())
        kept = [[] for _ in range(10_000)]  # far past the collector's threshold: nothing collects it inside
        assert dropped() is not None and kept
    assert dropped() is None


def test_writers_that_never_leave_a_gap_still_get_full_collections(monkeypatch: pytest.MonkeyPatch) -> None:
    import engine.gc_pause as pause

    monkeypatch.setattr(pause, "FULL_AFTER", 0.0)  # every leaving batch is overdue
    with gc_paused():  # another tenant's batch, inside the whole time
        with gc_paused():
            dropped = weakref.ref(Node())
        assert dropped() is None  # collected by the batch that left, though the pause goes on
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_short_overlap_leaves_full_collections_to_the_last_batch() -> None:
    with gc_paused():
        with gc_paused():
            dropped = weakref.ref(Node())
        assert dropped() is not None  # within FULL_AFTER: nothing collects while the other batch runs
    assert dropped() is None
