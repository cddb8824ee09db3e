"""Scores over a few slots of a tenant: what a BM25 list is, kept as (slot, score) pairs.

A lexical search scores at most `engine.state.lexical.SCORED` documents, however large the tenant, so
recall keeps those pairs (sorted by slot) instead of an array over every slot: reading a candidate's
score is a binary search, the best `n` a partial sort of the matches. Per-query work then follows the
matches, not the tenant's size. Ties rank the lower slot first, as a stable sort over slots would.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(slots=True, frozen=True)
class SparseScores:
    slots: np.ndarray
    """Ascending, unique (int64)."""
    values: np.ndarray
    """Score of each slot (float32)."""

    @classmethod
    def empty(cls) -> SparseScores:
        return cls(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32))

    @classmethod
    def of(cls, slots: np.ndarray, values: np.ndarray, mask: np.ndarray | None = None) -> SparseScores:
        """From unordered distinct slots; with `mask` (a bool array over slots) only the slots it allows."""
        if mask is not None and len(slots):
            keep = mask[slots]
            slots, values = slots[keep], values[keep]
        order = np.argsort(slots, kind="stable")
        return cls(slots[order].astype(np.int64, copy=False), values[order])

    def __len__(self) -> int:
        return len(self.slots)

    def max(self) -> float:
        """The best score, 0 when none (as the max of an all-slots array that is 0 elsewhere)."""
        return max(float(self.values.max()), 0.0) if len(self.values) else 0.0

    def at(self, slots: np.ndarray) -> np.ndarray:
        """Score of each given slot (0 where it has none)."""
        slots = np.asarray(slots, dtype=np.int64)
        if not len(self.slots):
            return np.zeros(len(slots), dtype=self.values.dtype)
        pos = np.minimum(np.searchsorted(self.slots, slots), len(self.slots) - 1)
        return np.where(self.slots[pos] == slots, self.values[pos], 0).astype(self.values.dtype, copy=False)

    def top(self, n: int) -> np.ndarray:
        """Slots of the best `n` positive scores, best first (ties: lower slot first)."""
        values = self.values
        if n <= 0 or not len(values):
            return np.zeros(0, dtype=np.int64)
        if len(values) > n:
            kth = np.partition(-values, n - 1)[n - 1]  # the n-th best score, negated
            pick = np.flatnonzero(-values <= kth)  # every slot scoring at least that, in slot order
        else:
            pick = np.arange(len(values))
        pick = pick[np.argsort(-values[pick], kind="stable")[:n]]
        return self.slots[pick[values[pick] > 0]]

    def plus(self, other: SparseScores, weight: float) -> SparseScores:
        """self + weight x other, slot by slot."""
        slots = np.concatenate([self.slots, other.slots])
        slots.sort()
        slots = slots[np.concatenate([[True], slots[1:] != slots[:-1]])] if len(slots) else slots
        return SparseScores(slots, self.at(slots) + weight * other.at(slots))

    def scaled(self, factor: float) -> SparseScores:
        return SparseScores(self.slots, self.values * factor)
