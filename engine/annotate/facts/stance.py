"""How a statement stands to what it mentions: asserted by the speaker about themselves, or hedged.

Hedged: hypothetical ('someday I want an EV'), negated ('I almost sold the bike'), or about another party
('my daughter is learning Mandarin'). Such a statement is weaker evidence for a plain question about the
speaker ("What car does Kendra drive?") than the asserted fact ("I drive a 2015 Camry"), unless the
question asks about plans, about what did not happen, or about that party (`asks_about`). The note table
keeps one code per note (`stance`); recall (engine.recall.boosts) turns it into a small penalty.
"""

from __future__ import annotations

import functools
import re

import engine.annotate.facts.cues as cues
from engine.annotate.facts.memo import memo

__all__ = ["ASSERTED", "HYPOTHETICAL", "NEGATED", "asks_about", "stance"]

ASSERTED, HYPOTHETICAL, NEGATED, OTHER_PARTY = 0, 1, 2, 3
"""Codes; another party's statement is OTHER_PARTY + 1 + the index of its relation word in RELATIONS (or
OTHER_PARTY for a pronoun or a named owner: 'she', "Sarah's new number")."""
RELATIONS: tuple[str, ...] = tuple(sorted(cues.RELATION_WORDS))

_PLANS = re.compile(
    r"\b(?:plans?|planning|future|goals?|hopes?|hoping|wish|dreams?|wants?|would|might|could|intends?|"
    r"going to|aspir\w*|considering|thinking|if|next|someday|upcoming)\b",
    re.I,
)
_NEGATION = re.compile(r"\b(?:not|never|no|nor|almost|nearly)\b|n't\b", re.I)


@memo(cues.CACHE)
def stance(text: str) -> int:
    """ASSERTED, HYPOTHETICAL, NEGATED or another party's code (see OTHER_PARTY)."""
    text = cues.normalise(text)
    if cues.first_match(cues.HYPOTHETICAL, text):
        return HYPOTHETICAL
    if cues.first_match(cues.NEGATED_PAST, text):
        return NEGATED
    party = cues.third_party(text)
    if party is None:
        return ASSERTED
    relation = party.removeprefix("my ")
    relation = relation if relation in RELATIONS else relation.removesuffix("s")  # 'my parents'
    return OTHER_PARTY + 1 + RELATIONS.index(relation) if relation in RELATIONS else OTHER_PARTY


@functools.lru_cache(maxsize=1024)
def asks_about(query: str) -> frozenset[int]:
    """The hedged stances a question asks about itself: plans, what did not happen, a related party."""
    out = {HYPOTHETICAL} if _PLANS.search(query) else set()
    if _NEGATION.search(query):
        out.add(NEGATED)
    words = set(re.findall(r"[a-z-]+", query.lower()))
    out.update(OTHER_PARTY + 1 + i for i, r in enumerate(RELATIONS) if r in words or f"{r}s" in words)
    return frozenset(out)
