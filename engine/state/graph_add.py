"""New rows joining a tenant's HNSW graph on a worker thread, readable while they join.

FAISS cannot search an HNSW graph while it inserts into it (an insert may move the rows' storage), and a
write batch's insert takes 0.3-0.8 s past 250k notes: a query that waited for it stalled that long. So the
insert runs on a worker thread, under a lock, in chunks of ADD_CHUNK rows while queries come (a waiting
query goes before the next chunk), and a query reads the graph between chunks plus, exactly, the rows not
in it yet (engine/state/vector_index.py). The graph is FAISS's; only this scheduling around it is ours.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager, nullcontext

import faiss
import numpy as np

ADD_CHUNK = 32
"""Rows the graph takes at a time while queries come: the longest a query waits for the insert."""
QUERIED_S = 2.0
"""A query this recent makes an insert go in chunks. Without one it goes whole: FAISS spreads one insert
over the cores, and 1,000 rows added 32 at a time took 1.8x as long (290k notes, 2 cores)."""

_ADDER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="amem-hnsw-add")
"""One thread for every tenant's inserts: two graph inserts at once would share two cores."""


class GraphAdd:
    """The last background insert into one index's graph."""

    def __init__(self, dim: int) -> None:
        self.future: Future[None] | None = None
        self.first = 0
        """Slot of the insert's first row: its rows are slots first, first + 1, ..."""
        self.rows = np.zeros((0, dim), dtype=np.float32)
        self.last_query = -np.inf
        """time.monotonic() of the last query (a write's own search is none)."""
        self._lock = threading.Lock()
        self._readers = _Waiting()

    @property
    def running(self) -> bool:
        return self.future is not None and not self.future.done()

    def start(self, store: faiss.Index, first: int, rows: np.ndarray) -> None:
        self.first, self.rows = first, rows
        self.future = _ADDER.submit(self._run, store, rows)

    def wait(self) -> bool:
        """Wait for the insert; True if one was pending. A failed insert raises here every time."""
        if self.future is None:
            return False
        self.future.result()
        self.future, self.rows = None, self.rows[:0]
        return True

    def reading(self) -> AbstractContextManager[None]:
        """Hold the graph still for a read while an insert runs (searches need no lock otherwise)."""
        return self._locked() if self.running else nullcontext()

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with self._readers, self._lock:
            yield

    def _run(self, store: faiss.Index, block: np.ndarray) -> None:
        start = 0
        while start < len(block):
            queried = time.monotonic() - self.last_query < QUERIED_S
            size = ADD_CHUNK if queried else len(block) - start
            self._add_chunk(store, block[start : start + size])
            start += size

    def _add_chunk(self, store: faiss.Index, rows: np.ndarray) -> None:
        self._readers.clear()  # a released lock is mostly re-taken by its releaser: reads go first
        with self._lock:
            store.add(rows)


def exact_topk(
    rows: np.ndarray, slots: np.ndarray, queries: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Exact (scores, slots) of a few rows, padded to k with (-inf, -1)."""
    scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
    out = np.full((len(queries), k), -1, dtype=np.int64)
    sims = queries @ rows.T
    top = np.argsort(-sims, axis=1, kind="stable")[:, :k]
    scores[:, : top.shape[1]] = np.take_along_axis(sims, top, axis=1)
    out[:, : top.shape[1]] = slots[top]
    return scores, out


class _Waiting:
    """Counts the threads inside `with`, from before they wait for a lock; `clear` waits until none."""

    def __init__(self) -> None:
        self._count, self._lock = 0, threading.Lock()

    def __enter__(self) -> None:
        with self._lock:
            self._count += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._count -= 1

    def clear(self, most_s: float = 0.05) -> None:
        """Wait (at most `most_s`: a steady stream of reads must not starve the insert) until none is in."""
        until = time.monotonic() + most_s
        while self._count and time.monotonic() < until:
            time.sleep(0.0002)
