"""The memo cache: the function's answers, bounded, and (its point) nothing the garbage collector walks."""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable

from engine.annotate.facts.memo import memo


def counted(maxsize: int) -> tuple[list[str], Callable[[str], str]]:
    calls: list[str] = []

    @memo(maxsize)
    def shout(text: str) -> str:
        calls.append(text)
        return text.upper()

    return calls, shout


def test_a_reading_is_computed_once_while_it_is_kept() -> None:
    calls, shout = counted(100)
    assert [shout("a"), shout("b"), shout("a")] == ["A", "B", "A"]
    assert calls == ["a", "b"]


def test_it_keeps_at_most_maxsize_and_a_hit_in_the_old_half_survives_the_next_turn() -> None:
    calls, shout = counted(4)  # two generations of two
    for text in ("a", "b", "c"):  # "c" turns them: old {a, b}, young {c}
        shout(text)
    shout("a")  # found in the old half and copied back: young {c, a}
    shout("d")  # turns again: old {c, a}, young {d}; "b" is gone
    calls.clear()
    for text in ("a", "c", "d", "b"):
        shout(text)
    assert calls == ["b"]


def test_several_arguments_make_one_key() -> None:
    @memo(16)
    def join(a: str, b: int) -> str:
        return f"{a}{b}"

    assert [join("x", 1), join("x", 2), join("x", 1)] == ["x1", "x2", "x1"]


def _fill(cached: Callable[[str], bool]) -> int:
    """Fill the cache with 5,000 keys; the id of the last (kept alive by the cache alone)."""
    for i in range(5000):
        key = f"text {i}"
        cached(key)
    key_id = id(key)
    del key
    gc.collect()
    return key_id


def _walked(key_id: int) -> bool:
    """Whether a tracked object hands that key to the collector when it is traversed."""
    return any(id(r) == key_id for o in gc.get_objects() for r in gc.get_referents(o))


def test_a_cache_of_strings_is_not_walked_by_the_collector() -> None:
    def is_long(text: str) -> bool:
        return len(text) > 3

    lru = functools.lru_cache(maxsize=10_000)(is_long)
    assert _walked(_fill(lru))  # the lru wrapper hands the collector every key, on every pass
    lru.cache_clear()
    assert not _walked(_fill(memo(10_000)(is_long)))
