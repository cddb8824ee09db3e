"""Question analysis: which participants a query names, and whether it asks about time.

Used by the query-side levers (engine.recall.boosts): a query naming a person favours that person's
turns; a "when / how long" question favours turns carrying time expressions. The participants are the
tenant's speakers; their names are also taken out of the lexical query when `strip_names` is on,
because every turn of a two-person chat carries them (speaker field, "Hey Caroline!", reply context)
and short greetings would otherwise win on the name alone.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

_TEMPORAL_Q = re.compile(
    r"\b(when|how long|how many (years|months|weeks|days)|what (year|month|date|day|time)|"
    r"which (year|month|day|week)|since when|how old)\b",
    re.IGNORECASE,
)
_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
_DAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
TIME_EXPRESSION = re.compile(
    rf"\b(yesterday|today|tonight|tomorrow|ago|recently|lately|since|"
    rf"(last|next|this|past|coming|previous) (week|weekend|month|year|night|summer|winter|spring|fall|"
    rf"autumn|{_DAYS})|{_DAYS}|{_MONTHS}|(19|20)\d\d|\d+ (years?|months?|weeks?|days?))\b",
    re.IGNORECASE,
)
"""A turn that says when something happened: relative ("last week", "two days ago") or absolute."""


@dataclass(slots=True, frozen=True)
class QueryInfo:
    text: str
    lexical: str
    """The query for the lexical index (named participants removed when strip_names)."""
    speakers: frozenset[str] = field(default_factory=frozenset)
    """Participants (as spelt in the notes' speaker field) the query names."""
    temporal: bool = False


def analyse(query: str, participants: Iterable[str], strip_names: bool = False) -> QueryInfo:
    named = frozenset(p for p in participants if p and _name_pattern(p).search(query))
    lexical = query
    if strip_names and named:
        for name in named:
            lexical = _name_pattern(name).sub(" ", lexical)
        if not lexical.strip(" ?.!,'"):
            lexical = query  # the query was only names: keep them
    return QueryInfo(query, lexical, named, bool(_TEMPORAL_Q.search(query)))


@functools.lru_cache(maxsize=1 << 16)
def has_time_expression(text: str) -> bool:
    return TIME_EXPRESSION.search(text) is not None


@functools.lru_cache(maxsize=1024)
def _name_pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"\b{re.escape(name)}(['’]s)?\b", re.IGNORECASE)


def mentions(text: str, names: frozenset[str]) -> bool:
    return any(_name_pattern(name).search(text) for name in names)
