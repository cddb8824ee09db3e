"""When a statement holds: on one occasion ('Maya repaired a bicycle last week'), or in a recurring slot
('on Saturdays'). engine.annotate.facts.decision reads both: a one-off event is history, never retired; a
weekly slot filled 'instead' is one attribute.
"""

from __future__ import annotations

import re

from engine.annotate.facts.cues import CACHE, first_match
from engine.annotate.facts.memo import memo

__all__ = ["one_off_event", "time_slots"]


def _rx(*alternatives: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(alternatives) + r")\b", re.I)


_ONE_OFF_TIME = _rx(
    r"yesterday",
    r"last night",
    r"the other day",
    r"earlier today",
    r"this (?:morning|afternoon|evening)",
    r"(?:last|this past) (?:week|weekend|month|year|spring|summer|fall|autumn|winter|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)",
    r"on (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)",
    r"in (?:january|february|march|april|may|june|july|august|september|october|november|december)",
    r"over the (?:holidays|weekend|break)",
    r"(?:after|before) (?:work|school|class|lunch|dinner|breakfast)",
    r"(?:a|an|one|two|three|\d+) (?:days?|weeks?|months?|years?) ago",
)
"""Time phrases that place an event on one occasion ('last week', 'on Sunday', 'after work')."""
_SIMPLE_PAST = re.compile(
    r"(?<!\ba )(?<!\ban )(?<!\bthe )(?<!\bmy )(?<!\bour )(?<!\bis )(?<!\bam )(?<!\bare )(?<!'m )"
    r"\b(?:[a-z]{2,}ed|went|saw|sold|bought|found|lost|made|took|got|had|ate|met|ran|came|gave|brought|"
    r"caught|built|drove|flew|wrote|left|won|paid|sent|spent|told|threw|wore|rode|sang|swam|broke|fell|"
    r"forgot|began|drew|grew|hid|kept|led|rang|sat|sold|stole|stood|taught|thought|tore|woke)\b",
    re.I,
)
_STANDING = re.compile(
    r"\b(?:am|is|are|have|has|do|does|usually|always|every|currently|now|these days|still)\b|'m\b|'re\b|'ve\b",
    re.I,
)


@memo(CACHE)
def one_off_event(text: str) -> str | None:
    """The time phrase of a narrated one-off event ('Maya repaired a bicycle in Lisbon last week'): a
    simple-past verb placed on one occasion, with nothing in the present. What happened once stays true,
    so a later statement cannot retire it; its time phrase is returned, None when the text is no such event."""
    when = first_match(_ONE_OFF_TIME, text)
    if when is None or _STANDING.search(text) or not _SIMPLE_PAST.search(text):
        return None
    return when


_DAYS = frozenset("monday tuesday wednesday thursday friday saturday sunday weekend".split())


@memo(CACHE)
def time_slots(text: str) -> frozenset[str]:
    """Recurring calendar slots ('on Saturdays', 'my Sundays' -> 'saturday', 'sunday'): with a replacement
    cue, the same slot filled differently is the same attribute (what one does then)."""
    words = (w.rstrip("s") for w in re.findall(r"[a-z]+", text.lower()))
    return frozenset(w for w in words if w in _DAYS)
