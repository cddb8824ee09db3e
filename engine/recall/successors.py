"""A retired fact's match passes to the note that replaced it.

A question often shares its words with the old statement and none with the update ("Where does Quinn work
out?": "I work out at Gold's on 5th" / "got a membership at Equinox now"). Once the old note is retired it
is hidden, and the update, which the question does not match, lost to chit-chat of the same speaker: the
largest share of the fact benchmark's misses after the decision itself (docs/facts.md, "ranking").

So a search of what is true now ranks the retired notes too (the tenant's live slots), and each retired
note's place goes to its current successor: the `superseded_by` chain followed to a visible note, at
`successor_weight` x the retired note's score, unless the successor scored higher by itself. The hit says
what it replaced (`via`). A note invalidated without a successor, or whose successor was deleted, drops out.
Searches with `as_of` or `include_superseded` are unchanged: there, what was true is visible itself.
"""

from __future__ import annotations

import numpy as np

from engine.model.note import Hit, Note
from engine.state.tenant_state import TenantMemory

CHAIN_MAX = 16
"""Successors followed from one retired note (a fact updated more often reads as dropped)."""


def hand_over(
    tm: TenantMemory, slots: np.ndarray, scores: np.ndarray, mask: np.ndarray, weight: float, k: int
) -> list[Hit]:
    """Hits from a ranking over visible and retired slots (best first): retired ones replaced by their
    successors, each note once at its best score, at most k."""
    best: dict[int, tuple[float, str | None]] = {}
    for raw, score in zip(slots.tolist(), scores.tolist(), strict=True):
        slot, via = raw, None
        if not mask[raw]:
            old = tm.notes.at(raw)
            found = _current(tm, old, mask)
            if found is None:
                continue
            slot, score, via = found, score * weight, f"replaces {old.id}, retired, which matched the query"
        if slot not in best or score > best[slot][0]:
            best[slot] = (score, via)
    ranked = sorted(best.items(), key=lambda item: -item[1][0])[:k]  # stable: ties keep the ranking's order
    return [Hit(note=tm.notes.at(slot), score=score, via=via) for slot, (score, via) in ranked]


def _current(tm: TenantMemory, note: Note, mask: np.ndarray) -> int | None:
    """Slot of the visible note at the end of `note`'s successor chain, or None."""
    for _ in range(CHAIN_MAX):
        if note.superseded_by is None:
            return None
        slot = tm.index.slot_of.get(note.superseded_by)
        if slot is None:
            return None
        if mask[slot]:
            return int(slot)
        note = tm.notes.at(slot)
    return None
