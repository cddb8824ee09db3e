"""Question analysis: which participants a query names, whether it asks about time, and whether it asks
what holds now (a present-tense question: 'What does Suki do for a living?').

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

from engine.text import TIME_EXPRESSION, has_time_expression

__all__ = ["TIME_EXPRESSION", "QueryInfo", "analyse", "has_time_expression", "mentions"]

_TEMPORAL_Q = re.compile(
    r"\b(when|how long|how many (years|months|weeks|days)|what (year|month|date|day|time)|"
    r"which (year|month|day|week)|since when|how old)\b",
    re.IGNORECASE,
)


@dataclass(slots=True, frozen=True)
class QueryInfo:
    text: str
    lexical: str
    """The query for the lexical index (named participants removed when strip_names)."""
    content: str = ""
    """The query without the participants it names ("" if nothing else is left): what pseudo-relevance
    feedback picks its seeds by, since a name alone ties every turn of that speaker."""
    speakers: frozenset[str] = field(default_factory=frozenset)
    """Participants (as spelt in the notes' speaker field) the query names."""
    temporal: bool = False
    standing: bool = False
    """A present-tense question about what holds ('What does Suki do for a living?', 'Where is Ana's office?'),
    not about what happened or when: a narrated event or a question is weaker evidence for it."""


def analyse(query: str, participants: Iterable[str], strip_names: bool = False) -> QueryInfo:
    named = frozenset(p for p in participants if p and _name_pattern(p).search(query))
    content = query
    for name in named:
        content = _name_pattern(name).sub(" ", content)
    if not content.strip(" ?.!,'"):
        content = ""
    lexical = content if strip_names and named and content else query  # only names: keep them
    temporal = bool(_TEMPORAL_Q.search(query))
    standing = not temporal and bool(_PRESENT_Q.search(query)) and not _PAST_Q.search(query)
    return QueryInfo(query, lexical, content, named, temporal, standing)


_PRESENT_Q = re.compile(r"\b(?:does|do|is|are)\b|\w'?s\s+(?:\w+\s+){0,3}\w+\?", re.IGNORECASE)
_PAST_Q = re.compile(
    r"\b(?:did|was|were|had|has|have|used to|ever|ago|last|yesterday|before)\b", re.IGNORECASE
)


@functools.lru_cache(maxsize=1024)
def _name_pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"\b{re.escape(name)}(['’]s)?\b", re.IGNORECASE)


def mentions(text: str, names: frozenset[str]) -> bool:
    return any(_name_pattern(name).search(text) for name in names)
