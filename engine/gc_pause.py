"""Python's cyclic garbage collector paused for the length of a write batch (or a log record replayed).

A batch allocates hundreds of thousands of short-lived container objects (decoded neighbours, their
lists, candidates, log records). Each allocation past the collector's threshold starts a collection, and
often enough one of them is a full pass over every tracked object in the process: at ~110k notes that
was 0.6-1.5 s per batch, a cost that grows with the tenant while the batch's own work does not. The
batch's garbage is almost all freed by reference counting; the few cycles wait for the end of the batch.
Replaying the log applies the same batches again: unpaused, collections were a quarter of a 500k-note
tenant's replay.

On leaving, the youngest generation (what the batch allocated and kept) is collected at once: a cost
bounded by the batch, and it leaves the older generations' counters as one ordinary collection would.
Nested and concurrent batches (threads writing different tenants) share one pause: the collector is
enabled again when the last one leaves, and only if it was enabled before the first one entered. Writers
that overlap without a gap would keep it off for good, so a batch that leaves while others are still
inside runs a full collection itself once the pause has lasted FULL_AFTER seconds.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
"""Batches inside a pause now."""
_resume = False
"""Whether the collector was enabled when the outermost pause began."""
_since = 0.0
"""When the current pause began, or its last full collection ran (time.monotonic)."""
FULL_AFTER = 30.0
"""Seconds of unbroken pause after which a leaving batch collects in full (cycles left by the others)."""


@contextmanager
def gc_paused() -> Iterator[None]:
    """Run the body with the cyclic collector off; exceptions leave it as they found it."""
    global _depth, _resume, _since
    with _lock:
        if _depth == 0:
            _resume, _since = gc.isenabled(), time.monotonic()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            last = _depth == 0 and _resume
            overdue = _depth > 0 and _resume and time.monotonic() - _since >= FULL_AFTER
            if last:
                gc.enable()
            if overdue:
                _since = time.monotonic()
        if last:
            gc.collect(generation=0)
        elif overdue:
            gc.collect()
