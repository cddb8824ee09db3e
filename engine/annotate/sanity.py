"""Semantic checks on stage answers, before anything is applied.

A grammar makes an answer well-formed, not sensible: a 135M model under a JSON schema happily returns a
timestamp as a note's context, keywords that are not in the text, or an evolution that rewrites a
neighbour about Maya's job with the keywords of someone's hike. Each check returns the short reason it
is counted under (or None when the answer passes), so a rejected item falls back and is counted.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence

from engine.annotate.facts.memo import memo
from engine.annotate.schemas import NeighbourUpdate
from engine.model.note import Note
from engine.text import stem, terms, tokens

_DATEISH = re.compile(r"\d{1,4}(?:[-/:.T+Z]\d{0,4})+Z?|\d{4}")
_MIN_SENTENCE_WORDS = 3
_COPY_RATIO = 0.9
_NEAR_RATIO = 0.8


@memo(4096)
def _stems(text: str) -> frozenset[str]:
    """Cached: the write path checks every update against its neighbour's words, and neighbours repeat."""
    return frozenset(terms(text))


def grounded(term: str, vocabulary: frozenset[str]) -> bool:
    """A keyword is drawn from (or near) a text when one of its words, stemmed, is in it or close to one."""
    return _in(term, vocabulary) or any(_near(w, vocabulary) for w in _term_stems(term) if len(w) > 3)


def _in(term: str, vocabulary: frozenset[str]) -> bool:
    return any(w in vocabulary for w in _term_stems(term))


@memo(1 << 14)
def _term_stems(term: str) -> tuple[str, ...]:
    return tuple(stem(t) for t in tokens(term))


def _near(word: str, vocabulary: frozenset[str]) -> bool:
    # difflib's ratio is at most 2*min/(len sum): words whose lengths rule the cutoff out are skipped.
    ok = [v for v in vocabulary if 2 * min(len(v), len(word)) >= _NEAR_RATIO * (len(v) + len(word))]
    return bool(difflib.get_close_matches(word, ok, n=1, cutoff=_NEAR_RATIO))


def _mostly_grounded(keywords: Sequence[str], vocabulary: frozenset[str]) -> bool:
    """At least half the keywords grounded; the exact test first, the fuzzy one only if it falls short."""
    exact = sum(_in(k, vocabulary) for k in keywords)
    if 2 * exact >= len(keywords):
        return True
    return 2 * sum(grounded(k, vocabulary) for k in keywords) >= len(keywords)


def ground_keywords(keywords: Sequence[str], text: str) -> list[str]:
    """The keywords drawn from or near `text` (order kept); the rest are dropped."""
    vocabulary = _stems(text)
    return [k for k in keywords if grounded(k, vocabulary)]


def context_problem(context: str, source: str) -> str | None:
    """Why `context` is not a one-sentence description of `source`: a timestamp, too short, or a copy."""
    words = [w for w in _DATEISH.sub(" ", context).split() if any(c.isalpha() for c in w)]
    if len(words) < _MIN_SENTENCE_WORDS:
        return "timestamp_context" if _DATEISH.search(context) else "not_a_sentence"
    a, b = " ".join(context.lower().split()), " ".join(source.lower().split())
    if a == b or (len(b) >= 40 and _near_copy(a, b)):
        return "copied_context"
    return None


def _near_copy(a: str, b: str) -> bool:
    """difflib ratio >= _COPY_RATIO, its cheap upper bounds tried first (the full ratio is quadratic)."""
    if 2 * min(len(a), len(b)) < _COPY_RATIO * (len(a) + len(b)):
        return False  # real_quick_ratio's bound, before the matcher indexes `b` (most evolved contexts)
    matcher = difflib.SequenceMatcher(None, a, b)
    return (
        matcher.real_quick_ratio() >= _COPY_RATIO
        and matcher.quick_ratio() >= _COPY_RATIO
        and matcher.ratio() >= _COPY_RATIO
    )


def tags_problem(tags: Iterable[str]) -> str | None:
    real = [t for t in tags if any(c.isalpha() for c in t)]
    return None if real else "empty_tags"


def off_subject(neighbour: Note, update: NeighbourUpdate) -> str | None:
    """Why an evolution update would replace the neighbour's own subject (None when it keeps it).

    New keywords must keep at least one of the neighbour's own, and at least half of them must come from
    the neighbour (its content, keywords or context); a new context must be a sentence that shares a word
    with the neighbour. A new note's words may be added, never swapped in for the neighbour's.
    """
    old = _stems(" ".join(neighbour.keywords))  # parts cached apart: the content never changes
    own = _stems(neighbour.content) | _stems(neighbour.context) | old
    keywords = update.keywords
    if keywords is not None and (
        (old and not any(_stems(k) & old for k in keywords)) or not _mostly_grounded(keywords, own)
    ):
        return "off_subject_keywords"
    if update.context is not None:
        problem = context_problem(update.context, neighbour.content)
        if problem:
            return problem
        if not _stems(update.context) & own:
            return "off_subject_context"
    return None
