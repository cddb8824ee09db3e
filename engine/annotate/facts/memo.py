"""Bounded memo caches for pure readings of text that the garbage collector does not walk.

The fact cues read each note and its candidates many times per write batch, so their readings are
memoised (up to 65,536 texts per cache, a dozen caches). `functools.lru_cache` keeps its entries in a
linked list that the collector visits entry by entry on every full pass, and a key holding a tracked object
(a compiled pattern) stays tracked for good: in a process that had written 30k notes the caches were ~170 ms
of a 345 ms full pass, a pause that lands in whatever runs next, a search included. Here an entry is a
dict slot, and a dict of strings, numbers and booleans is not tracked at all (one holding tracked values is
one container). Eviction is by generation instead of recency: when the young dict is full it becomes the
old one and the old one is dropped; a hit in the old one is copied back. Hand-written: no library memoiser
offers this (cachetools keeps a linked list per entry as well).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["memo"]

F = TypeVar("F", bound=Callable[..., Any])
_MISSING = object()


def memo(maxsize: int) -> Callable[[F], F]:
    """Memoise a pure function of hashable positional arguments, keeping up to `maxsize` results."""
    half = max(1, maxsize // 2)

    def decorate(fn: F) -> F:
        young: dict[Any, Any] = {}
        old: dict[Any, Any] = {}

        @functools.wraps(fn)
        def cached(*args: Any) -> Any:
            nonlocal young, old
            key = args[0] if len(args) == 1 else args
            value = young.get(key, _MISSING)
            if value is _MISSING:
                value = old.get(key, _MISSING)
                if value is _MISSING:
                    value = fn(*args)
                if len(young) >= half:  # two threads turning at once at worst drop a reading
                    young, old = {}, young
                young[key] = value
            return value

        return cached  # type: ignore[return-value]

    return decorate
