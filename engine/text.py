"""Text utilities shared by the annotators, the indexes and recall: tokens, stems, keywords, time words."""

from __future__ import annotations

import functools
import re

_TOKEN = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?")

STOPWORDS = frozenset(
    """a about above after again against all also am an and any are aren't as at be because been before being
    below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during
    each few for from further get got had hadn't has hasn't have haven't having he he'd he'll he's her here
    here's hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself
    just let's like me more most much my myself no nor not now of off on once only or other ought our ours
    ourselves out over own really same shan't she she'd she'll she's should shouldn't so some such than that
    that's the their theirs them themselves then there there's these they they'd they'll they're they've this
    those through to too under until up us very was wasn't we we'd we'll we're we've were weren't what what's
    when when's where where's which while who who's whom why why's will with won't would wouldn't yeah yes
    yet you you'd you'll you're you've your yours yourself yourselves oh hey hi hello thanks thank wow okay ok
    lol gonna wanna im ive dont thats its one two lot lots thing things stuff way ways something anything
    everything going go went gone make made know knew think thought see saw say said tell told sure great good
    nice awesome cool amazing glad totally definitely always often sometimes still even ever every back well
    want wanted look looks looking feel feels felt time times day days today yesterday tomorrow did done""".split()
)


_POSSESSIVE = re.compile(r"'s(?= |$)")
"""A token's trailing 's, in tokens joined by spaces (a token holds no space, and only its suffix a quote)."""


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens; possessive 's is dropped so "Caroline's" matches "Caroline".

    The tokens are joined and lowered, and their 's dropped, in one pass over one string, not one per
    token: the lexical index and the write path's checks tokenize every new and changed note."""
    found = _TOKEN.findall(text)
    if not found:
        return []
    return _POSSESSIVE.sub("", " ".join(found).lower().replace("’", "'")).split(" ")


@functools.lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A light suffix stripper: enough to match plurals and simple verb forms, cheap enough for BM25."""
    for suffix, keep in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            return word[: -len(suffix)] + keep
    return word


def terms(text: str) -> list[str]:
    """Index terms: stemmed tokens without stopwords."""
    return [stem(t) for t in tokens(text) if t not in STOPWORDS]


def keywords(text: str, limit: int) -> list[str]:
    """Salient words of one text, best first.

    Score = frequency + a bonus for capitalised words inside a sentence (names, places, titles) + a small
    bonus for long words; stopwords and numbers-only tokens are skipped. Deterministic: ties keep text order.
    """
    raw = _TOKEN.findall(text)
    scores: dict[str, float] = {}
    first_seen: dict[str, int] = {}
    for pos, word in enumerate(raw):
        low = word.lower().replace("’", "'").removesuffix("'s")
        if low in STOPWORDS or len(low) < 3 or low.isdigit():
            continue
        first_seen.setdefault(low, pos)
        proper = word[0].isupper() and pos > 0 and not _starts_sentence(text, word)
        scores[low] = scores.get(low, 0.0) + 1.0 + (1.5 if proper else 0.0) + min(len(low), 10) / 20
    ranked = sorted(scores, key=lambda w: (-scores[w], first_seen[w]))
    return ranked[:limit]


def _starts_sentence(text: str, word: str) -> bool:
    idx = text.find(word)
    before = text[:idx].rstrip()
    return not before or before[-1] in ".!?\n"


def jaccard(a: str, b: str) -> float:
    sa, sb = set(tokens(a)), set(tokens(b))
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
_DAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
TIME_EXPRESSION = re.compile(
    rf"\b(yesterday|today|tonight|tomorrow|ago|recently|lately|since|"
    rf"(last|next|this|past|coming|previous) (week|weekend|month|year|night|summer|winter|spring|fall|"
    rf"autumn|{_DAYS})|{_DAYS}|{_MONTHS}|(19|20)\d\d|\d+ (years?|months?|weeks?|days?))\b",
    re.IGNORECASE,
)
"""A turn that says when something happened: relative ("last week", "two days ago") or absolute."""


def has_time_expression(text: str) -> bool:
    return TIME_EXPRESSION.search(text) is not None
