"""Do two statements address the same attribute? Decision step 3 (engine.annotate.facts.decision).

A shared possessed noun ('my manager'), a shared head noun or verb with the masked statements close in
embedding space, the old value named again next to a change cue, a value replaced in close statements,
very close wording, or, for the speaker's own short statements with a change cue, a sentence encoder's
closeness. The cosines come from the caller, which holds the encoders (`similarity` computes one).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

import engine.annotate.facts.cues as cues
import engine.annotate.facts.occasions as occasions
from engine.annotate.facts.memo import memo

__all__ = [
    "HIGH",
    "LOW",
    "SENTENCE",
    "Similarity",
    "close_sentences",
    "masked_parts",
    "resolve",
    "same_attribute",
    "says",
    "similarity",
]

masked = cues.masked
Similarity = float | Callable[[], float | None] | None
"""The masked-statement cosine, or a function computing it: asked for only when no guard has decided, so
the encoder runs for the pairs that reach the attribute test (most pairs of a chat stop at a guard)."""

HIGH = 0.50
"""Masked-statement cosine (WordLlama) at which two statements address the same attribute on their own."""
LOW = 0.30
"""Cosine at which a shared content word (a head noun or verb) makes the attribute the same."""
FLOOR = 0.15
"""Cosine at which a shared content word and an explicit change cue ('these days', 'instead') agree."""
MID = 0.40
"""Cosine at which statements whose value was replaced (a number by a number, a name by a name) agree."""
SENTENCE = 0.50
"""MiniLM (all-MiniLM-L6-v2) masked-statement cosine at which statements sharing no word address one
attribute, given an explicit change cue and an old statement of the speaker's own. Chosen by 5-fold
cross-validation, grouped by attribute, on bench/fact_pairs_train.jsonl and the bench's filler chit-chat
(docs/facts.md, v5): 0.50 in four folds of five."""
SENTENCE_WORDS = 20
"""The sentence step reads statements up to this long: a long turn's closeness is more often chit-chat."""
_CLAUSE = re.compile(r"(?<=[.!?;:])\s+|,\s+|\s+(?:and|but|so|because|since)\s+")


def resolve(similarity: Similarity) -> float | None:
    return similarity() if callable(similarity) else similarity


def same_attribute(old_text: str, new_text: str, similarity: float | None) -> str | None:
    """The attribute both address: a shared head word, the old value named with a change, or close wording."""
    old_words, new_words = cues.content_stems(old_text), cues.content_stems(new_text)
    old_values, new_values = cues.values(old_text), cues.values(new_text)
    value_words = {w for v in old_values | new_values for w in v.split()}
    shared = sorted(
        old_words[s] for s in old_words.keys() & new_words.keys() if old_words[s] not in value_words
    )
    sim = -1.0 if similarity is None else similarity
    owned = sorted(old_words.get(s, s) for s in cues.possessed(old_text) & cues.possessed(new_text))
    if owned:
        return f"my {owned[0]}"
    strong = cues.first_match(cues.REPLACEMENT, new_text) or cues.first_match(cues.CHANGE, new_text)
    if shared and (sim >= LOW or strong and sim >= FLOOR):
        return ", ".join(shared[:3])
    if strong in cues.REPLACING and (
        slot := sorted(occasions.time_slots(old_text) & occasions.time_slots(new_text))
    ):
        return f"the same time slot '{slot[0]}'"  # 'my Saturdays at the shelter instead' / '... on Saturdays'
    if sim >= MID and _value_replaced(old_values, new_values):
        return f"a value replaced in similar statements ({sim:.2f})"
    named = sorted(v for v in old_values if not v[:1].isdigit() and says(new_text, v))
    if named and (cues.first_match(cues.ENDING, new_text) or cues.first_match(cues.CHANGE, new_text)):
        return f"old value '{named[0]}' named"
    if sim >= HIGH:
        return f"similar statements ({sim:.2f})"
    return None


def close_sentences(old_text: str, new_text: str, sentence: Similarity) -> str | None:
    """No shared word, but the new statement says something changed and a sentence encoder finds the two
    close: 'I'm with Geico' / 'switched car insurance to Progressive'. Only for the speaker's own short
    statements: a change cue alone is common in chat ('now'), and a habit ('these days') is no change."""
    new_masked = masked(new_text)
    cue = next((c for p in _CUES if (c := cues.first_match(p, new_masked))), None)
    if cue is None or cue in _HABITUAL or sentence is None or not cues.speaker_owned(old_text):
        return None
    if max(len(old_text.split()), len(new_text.split())) > SENTENCE_WORDS:
        return None
    close = resolve(sentence)
    return f"close sentences ({close:.2f}) with a change cue '{cue}'" if close and close >= SENTENCE else None


_CUES = (cues.CHANGE, cues.ENDING, cues.RETURN)
_HABITUAL = frozenset(("these days", "nowadays"))


def says(text: str, value: str) -> bool:
    """The text names the value, wherever it stands ('Acme pays me' names 'acme')."""
    return bool(_value_pattern(value).search(text))


@memo(cues.CACHE)
def _value_pattern(value: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w.,]){re.escape(value)}(?![\w]|[.,]\d)", re.I)


def _value_replaced(old_values: frozenset[str], new_values: frozenset[str]) -> bool:
    """A number gave way to a number, or a name to a name: the same slot with another filler."""
    old_num, new_num = {v for v in old_values if v[:1].isdigit()}, {v for v in new_values if v[:1].isdigit()}
    if old_num - new_num and new_num - old_num:
        return True
    old_names, new_names = old_values - old_num, new_values - new_num
    return bool(old_names - new_names and new_names - old_names)


def similarity(encode: Callable[[list[str]], np.ndarray], old_text: str, new_text: str) -> float:
    """Cosine of the masked statements: the whole new one or its closest clause, whichever is closer."""
    vecs = encode([masked(old_text), *masked_parts(new_text)])
    return float((vecs[1:] @ vecs[0]).max())


@memo(cues.CACHE)
def masked_parts(new_text: str) -> tuple[str, ...]:
    """The masked new statement and its masked clauses (of two words or more), each once."""
    parts = [new_text] + [c for c in _CLAUSE.split(new_text) if len(c.split()) > 1]
    return tuple(masked(p) for p in dict.fromkeys(parts))
