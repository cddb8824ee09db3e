"""Which slots a search may return, cached per state change.

`TenantMemory.mask` reads whole-tenant columns (three array passes over every slot); a tenant that is
not written between searches gets the same answer for the same `as_of`, so the masks of the last few
(as_of, include_superseded) pairs are kept until the state changes (the note table's generation moves,
or the index is replaced or grows). The arrays are read-only: callers share them.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from datetime import datetime

import numpy as np

from engine.state.tenant_state import TenantMemory

KEPT = 8
"""(as_of, include_superseded) masks kept per tenant state."""

_Key = tuple[object, ...]
_CACHE: weakref.WeakKeyDictionary[TenantMemory, tuple[tuple[int, ...], dict[_Key, np.ndarray]]] = (
    weakref.WeakKeyDictionary()
)
_LOCK = threading.Lock()


def visible(tm: TenantMemory, as_of: datetime | None = None, include_superseded: bool = False) -> np.ndarray:
    """`tm.mask(as_of, include_superseded)`, computed once per state change."""
    key = (None if as_of is None else as_of.timestamp(), include_superseded)
    return _cached(tm, key, lambda: tm.mask(as_of, include_superseded))


def retired_too(tm: TenantMemory) -> np.ndarray | None:
    """Every live slot when some of them are retired (valid now: no), else None; once per state change."""

    def wide() -> np.ndarray:
        live = visible(tm, None, True)
        return live if bool((live & ~visible(tm)).any()) else np.zeros(0, dtype=bool)

    mask = _cached(tm, ("retired_too",), wide)
    return mask if mask.size else None


def _cached(tm: TenantMemory, key: _Key, compute: Callable[[], np.ndarray]) -> np.ndarray:
    """The array kept under `key` for the tenant's current state, computed (outside the lock) if absent."""
    state = (id(tm.index), tm.index.num_slots, len(tm.notes), tm.notes.generation)
    with _LOCK:
        cached = _CACHE.get(tm)
        if cached is None or cached[0] != state:
            cached = _CACHE[tm] = (state, {})
        mask = cached[1].get(key)
    if mask is None:
        mask = compute()
        mask.setflags(write=False)
        with _LOCK:
            masks = cached[1]
            if len(masks) >= KEPT:
                masks.pop(next(iter(masks)))
            masks[key] = mask
    return mask
