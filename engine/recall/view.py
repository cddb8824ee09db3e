"""What the query-side levers need to know about a tenant, computed once per state change.

The participants (distinct speakers), the notes in time order (for session neighbours) and, per slot, the
speaker, content length, whether the content says when and its stance (for the boosts). Taken from the note table's
columns and rebuilt after each write batch (array work only: no note is decoded).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import numpy as np

from engine.state.tenant_state import TenantMemory


@dataclass(slots=True, frozen=True)
class TenantView:
    participants: tuple[str, ...]
    times: np.ndarray
    """Note timestamps (POSIX seconds) in time order."""
    order: np.ndarray
    """Slots in time order."""
    position: np.ndarray
    """Slot -> index into `order` (-1: no note)."""
    speaker: np.ndarray
    """Slot -> index into `participants` (-1: none)."""
    chars: np.ndarray
    """Slot -> content length."""
    timely: np.ndarray
    """Slot -> the content carries a time expression."""
    stance: np.ndarray
    """Slot -> asserted (0) or a hedged stance's code (engine.annotate.facts.stance)."""
    fixed: np.ndarray
    """Slot -> 1: a question or a narrated event (engine.annotate.facts.decision.is_fixed); 0 or -1 (not known)."""

    tables: dict[tuple[float, int], np.ndarray] = field(default_factory=dict, compare=False, repr=False)
    """(gap_s, window) -> every slot's neighbours, made on the first search that asks: one lookup per query
    instead of a dozen array steps over the candidates (~0.1-0.4 ms of a search). Up to TABLE_MAX slots; a
    bigger tenant computes per query, as a table would add ~0.1 s at 1M to each first search after a write."""

    def neighbours(self, slots: np.ndarray, gap_s: float, window: int = 1) -> np.ndarray:
        """(len(slots), 2 * window): the slots 1..window before and after each in time (columns -1, +1,
        -2, +2, ...), -1 where none, or where a step between consecutive turns exceeds gap_s."""
        slots = np.asarray(slots, dtype=np.int64)
        inside = (slots >= 0) & (slots < len(self.position))
        if len(self.position) > TABLE_MAX:
            at = np.where(inside, self.position[np.where(inside, slots, 0)], -1)
            return _neighbours_at(self, at, gap_s, window)
        table = self.tables.get((gap_s, window))
        if table is None:  # two threads may both build it: the same table, either one is kept
            table = self.tables[(gap_s, window)] = _neighbours_at(self, self.position, gap_s, window)
        out = np.full((len(slots), 2 * window), -1, dtype=np.int64)
        out[inside] = table[slots[inside]]
        return out


TABLE_MAX = 1 << 18


def _neighbours_at(view: TenantView, at: np.ndarray, gap_s: float, window: int) -> np.ndarray:
    """The neighbours of the notes at time-order positions `at` (-1: no note), every step at once: a
    step's neighbour counts only when every turn between holds (the chain is unbroken)."""
    order, times = view.order, view.times
    if not len(order):
        return np.full((len(at), 2 * window), -1, dtype=np.int64)
    steps = np.array([s * d for d in range(1, window + 1) for s in (-1, 1)], dtype=np.int64)
    near = at[:, None] + steps
    prev = near - np.sign(steps)  # the turn one step closer
    ok = (at[:, None] >= 0) & (near >= 0) & (near < len(order))
    np.clip(near, 0, len(order) - 1, out=near)
    np.clip(prev, 0, len(order) - 1, out=prev)
    ok &= np.abs(times[near] - times[prev]) <= gap_s
    if window > 1:  # columns -1, +1, -2, +2, ...: each direction's steps are cumulative
        ok = np.logical_and.accumulate(ok.reshape(len(at), window, 2), axis=1).reshape(len(at), 2 * window)
    return np.where(ok, order[near], -1)


_CACHE: weakref.WeakKeyDictionary[TenantMemory, tuple[tuple[int, ...], TenantView]] = (
    weakref.WeakKeyDictionary()
)


def view_of(tm: TenantMemory) -> TenantView:
    key = (len(tm.notes), tm.index.num_slots, tm.notes.generation)
    cached = _CACHE.get(tm)
    if cached is not None and cached[0] == key:
        return cached[1]
    view = _build(tm)
    _CACHE[tm] = (key, view)
    return view


def _build(tm: TenantMemory) -> TenantView:
    """From the note table's columns: no note is decoded (O(notes) array work, a sort of nearly sorted times)."""
    table, n = tm.notes, tm.index.num_slots
    live = np.flatnonzero(tm.index.live[:n])
    order = live[np.argsort(table.timestamp[live], kind="stable")]
    position = np.full(n, -1, dtype=np.int64)
    position[order] = np.arange(len(order))
    speaker, chars = table.speaker[:n].astype(np.int64), table.chars[:n].astype(np.float64)
    return TenantView(
        tuple(table.speakers),
        table.timestamp[order],
        order,
        position,
        speaker,
        chars,
        table.timely[:n],
        table.stance[:n],
        table.fixed[:n],
    )
