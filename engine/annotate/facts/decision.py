"""Does a newer statement retire the fact an older one stated? One pure, documented decision.

`decide(old, new, similarity)` answers with a `Decision` whose `reason` is recorded on the retired
version ("superseded: same attribute 'manager', change cue 'since'"). The steps, in order:

1. Guards, each a reason to keep the old fact: the same statement; a question (new or old); an old
   statement that narrates a past event; a new one that is a negated past ("never did quit", "almost sold"),
   hypothetical ("if I got the job I'd move", "someday"), additive ("also", "too", "another", "on top of"),
   continuity ("still", an old name said to stay: "the Volvo stays"), or about a third party ("my brother
   moved", "dad sold his Octavia") the old statement was not about (a party named there counts: 'my
   boyfriend Marco' / 'Marco and I broke up').
2. The attribute-frame lexicon (engine.annotate.facts.rules), when it reads both facts: a changed value
   supersedes (it resolves subjects itself: 'the meeting' is anyone's to move); the same value, or amounts
   of two different things, is kept. Otherwise another speaker's statement is kept.
3. Same attribute (statements up to MAX_WORDS words): a shared possessed noun ('my manager'); a shared
   head noun or verb with the masked statements (numbers and names -> placeholders) at least moderately
   close in embedding space (`similarity`, computed by the caller from `masked()` texts); the old value
   named again next to a change cue; a name or number replaced in close statements; or very close wording.
   With none of these, a sentence encoder's cosine (`sentence`, MiniLM on the masked statements) of at
   least SENTENCE, for short statements, an old one of the speaker's own ('I', 'my', 'we') and a new one
   with an explicit change cue ('I bank with Chase' / 'moved all my accounts over to a credit union').
4. A change: an ending cue naming the old thing ("sold the Outback", "no longer", "quit"); the old
   statement's attribute word renewed ("a new dentist"); or, unless every
   old value is said again (a restatement), a change cue ("now", "these days", "since the reorg",
   "switched", "instead") or a value replaced (an old name or number gone, a new one in its place).
5. The pair judge (engine.annotate.facts.pair_judge: MiniLM read as a cross-encoder, adapters trained on
   statement pairs written blind), for what step 3 or 4 kept: it retires the old fact when its probability
   reaches JUDGE, the old statement is the speaker's own and the new one does not name every old value
   (step 4's restatement). Every guard and the lexicon have run before, so it never overrules them; it
   finds the updates no cue announces ('we rent downtown' / 'finally closed on the house in Ballard').

The decision leans towards keeping: a missed supersession leaves two notes current, a wrong one hides a
true fact from default search.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import engine.annotate.facts.cues as cues
import engine.annotate.facts.occasions as occasions
from engine.annotate.facts.rules import frame_attribute, frame_distinct
from engine.annotate.facts.rules import supersedes as frame_supersedes

__all__ = [
    "HIGH",
    "LOW",
    "Decision",
    "Similarity",
    "Statement",
    "confirm",
    "decide",
    "is_fixed",
    "masked",
    "similarity",
]

MAX_WORDS = 25
"""Beyond this the general path stays out: a long chat turn touches many topics, so a shared word or a
close embedding is coincidence more often than one attribute (the frame lexicon still reads such turns)."""
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
JUDGE = 0.98
"""Pair-judge probability (engine.annotate.facts.pair_judge) at which it retires a fact the rules kept.
Chosen on pairs the judge was not trained on (`python -m bench.pair_judge_train --validate
bench/fact_pairs_health.jsonl`, docs/facts.md): 0.98 found 22 of 190 updates there beyond the rules'
75 and retired 3 of 1,132 true facts beyond their 17; 0.95 found 12 more than 0.98 and retired 8 more."""
SENTENCE_WORDS = 20
"""The sentence step reads statements up to this long: a long turn's closeness is more often chit-chat."""

masked = cues.masked
Similarity = float | Callable[[], float | None] | None
"""The masked-statement cosine, or a function computing it: asked for only when no guard has decided, so
the encoder runs for the pairs that reach the attribute test (most pairs of a chat stop at a guard)."""
_CLAUSE = re.compile(r"(?<=[.!?;:])\s+|,\s+|\s+(?:and|but|so|because|since)\s+")


@dataclass(frozen=True, slots=True)
class Statement:
    text: str
    speaker: str | None = None
    fixed: bool | None = None
    """As the old statement: whether `is_fixed(text)` holds, where the caller knows it already (the note
    table keeps it per note, so a stored neighbour is not read again in every batch it is offered to);
    None: read it here."""


@dataclass(frozen=True, slots=True)
class Decision:
    """The answer for one (old, new) pair: retire the old fact or keep it, and why (shown to people)."""

    supersedes: bool
    reason: str
    attribute: str = ""
    """The attribute both statements address ('manager', 'similar statements (0.62)'), '' when none."""

    @classmethod
    def keep(cls, why: str) -> Decision:
        return cls(False, f"kept: {why}")


def decide(
    old: Statement,
    new: Statement,
    similarity: Similarity = None,
    sentence: Similarity = None,
    judge: Similarity = None,
) -> Decision:
    """Whether `new` (said later) retires the fact `old` states; `similarity` = cosine of the masked texts
    (WordLlama), `sentence` = the same under a sentence encoder (MiniLM; None: step 3's last test is off),
    `judge` = the pair judge's probability that `new` retires `old` (None: step 5 is off)."""
    old_text, new_text = cues.normalise(old.text), cues.normalise(new.text)
    guard = _guard(old, new, old_text, new_text)
    if guard is not None:
        return guard
    frame = frame_supersedes(old_text, old.speaker, new_text, new.speaker)
    if frame is not None:  # the lexicon resolves speakers itself: 'the meeting' is anyone's to move
        return Decision(True, f"superseded: same attribute (frame) {frame}", attribute=frame.split(":")[0])
    if _other_speaker(old.speaker, new.speaker):
        return Decision.keep(f"other speaker '{new.speaker}'")
    ended = cues.first_match(cues.ENDING, masked(new_text))
    if not ended and (known := frame_attribute(old_text, old.speaker, new_text, new.speaker)):
        return Decision.keep(f"same attribute (frame) '{known}', same value")
    if distinct := frame_distinct(old_text, old.speaker, new_text, new.speaker):
        return Decision.keep(f"different attributes (frame) {distinct}")
    if len(old_text.split()) > MAX_WORDS or len(new_text.split()) > MAX_WORDS:
        return Decision.keep(f"longer than {MAX_WORDS} words and not read by the lexicon")
    sim = _resolve(similarity)
    attribute = _same_attribute(old_text, new_text, sim) or _close_sentences(old_text, new_text, sentence)
    if attribute is None:
        return _judged(judge, old_text, new_text) or Decision.keep("no shared attribute")
    change = _change(old_text, new_text)
    if change is None:
        return _judged(judge, old_text, new_text) or Decision.keep(
            f"same attribute '{attribute}', no change signal"
        )
    return Decision(True, f"superseded: same attribute '{attribute}', {change}", attribute=attribute)


def _judged(judge: Similarity, old_text: str, new_text: str) -> Decision | None:
    """Step 5: what the rules kept for want of a shared attribute or a change signal, the learned pair
    judge may retire, when it is nearly sure and the old fact is the speaker's own ('I', 'my', 'we'), unless
    the new statement names every value of the old one (step 4's restatement: 'kept us at 950')."""
    if judge is None or not cues.speaker_owned(old_text) or _restated(old_text, new_text):
        return None
    p = _resolve(judge)
    if p is None or p < JUDGE:
        return None
    return Decision(True, f"superseded: the pair judge reads a change ({p:.2f})", attribute="pair judge")


def _restated(old_text: str, new_text: str) -> bool:
    old_values = cues.values(old_text)
    return bool(old_values) and all(_says(new_text, v) for v in old_values)


def confirm(old: Statement, new: Statement, similarity: Similarity, claim: str) -> Decision:
    """Vet another judge's supersession (the LLM's evolve answer, reason `claim`) with the same guards:
    it stands only when no guard fires and the two statements share an attribute."""
    old_text, new_text = cues.normalise(old.text), cues.normalise(new.text)
    guard = _guard(old, new, old_text, new_text)
    if guard is None and _other_speaker(old.speaker, new.speaker):
        guard = Decision.keep(f"other speaker '{new.speaker}'")
    if guard is not None:
        return Decision.keep(f"{guard.reason.removeprefix('kept: ')} (overruled: {claim})")
    frame = frame_supersedes(old_text, old.speaker, new_text, new.speaker)
    attribute = frame.split(":")[0] if frame else _same_attribute(old_text, new_text, _resolve(similarity))
    if attribute is None:
        return Decision.keep(f"no shared attribute (overruled: {claim})")
    return Decision(True, f"superseded: same attribute '{attribute}', {claim}", attribute=attribute)


def _guard(old: Statement, new: Statement, old_text: str, new_text: str) -> Decision | None:
    """Reasons in the text to keep the old fact (the speaker check comes after the lexicon's own)."""
    if old_text.strip().lower() == new_text.strip().lower():
        return Decision.keep("same statement")
    if cues.is_question(new_text):
        return Decision.keep("new statement is a question")
    if old.fixed:
        return _KEPT_FIXED
    if old.fixed is None and (why := _fixed(old_text)):
        return Decision.keep(why)
    if cue := _guard_cue(new_text):
        return Decision.keep(cue)
    if value := cues.kept_value(old_text, new_text):
        return Decision.keep(f"continuity: '{value}' stays")
    party, old_party = cues.third_party(new_text), cues.third_party(old_text)
    if party is not None and party not in old_text.lower() and not _names_party(old_text, new_text):
        return Decision.keep(f"third person '{party}'")  # 'Jordan moved out, my cousin took his room'
    if old_party is not None and old_party not in new_text.lower() and not _names_party(old_text, new_text):
        return Decision.keep(f"old statement about '{old_party}'")
    return None


FIXED = "old statement is a question or a narrated event"
"""The reason when the caller said the old statement is fixed (`Statement.fixed`)."""
_KEPT_FIXED = Decision.keep(FIXED)  # one object for the most common answer of a write batch


def is_fixed(text: str) -> bool:
    """A statement no later one retires (a question, a narrated past or one-off event): the guard that
    reads the old statement alone, for the note table to keep per note."""
    return _fixed(cues.normalise(text)) is not None


@functools.lru_cache(maxsize=cues.CACHE)
def _fixed(old_text: str) -> str | None:
    """Why the (normalised) old statement is never retired, or None."""
    if cues.is_question(old_text):
        return "old statement is a question"
    if cues.is_past_event(old_text):
        return "old statement is a past event"
    if (when := occasions.one_off_event(old_text)) and not cues.first_match(cues.CHANGE, masked(old_text)):
        return f"old statement is a one-off event ('{when}')"  # 'moved ... in May' is a change
    return None


@functools.lru_cache(maxsize=cues.CACHE)
def _guard_cue(new_text: str) -> str | None:
    """The first guard cue of the new statement ("additive cue 'also'"): cached, as it depends on it alone."""
    for name, pattern in (
        ("negated past", cues.NEGATED_PAST),
        ("hypothetical", cues.HYPOTHETICAL),
        ("additive", cues.ADDITIVE),
        ("continuity", cues.STILL),
    ):
        if cue := cues.first_match(pattern, new_text):
            return f"{name} cue '{cue}'"
    return None


def _names_party(old_text: str, new_text: str) -> bool:
    """The new statement names the party the old one was about ('my boyfriend Marco' / 'Marco and I')."""
    return any(_says(new_text, name) for name in cues.party_names(old_text))


def _resolve(similarity: Similarity) -> float | None:
    return similarity() if callable(similarity) else similarity


def _other_speaker(a: str | None, b: str | None) -> bool:
    return bool(a and b and a.strip().lower() != b.strip().lower())


def _same_attribute(old_text: str, new_text: str, similarity: float | None) -> str | None:
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
    named = sorted(v for v in old_values if not v[:1].isdigit() and _says(new_text, v))
    if named and (cues.first_match(cues.ENDING, new_text) or cues.first_match(cues.CHANGE, new_text)):
        return f"old value '{named[0]}' named"
    if sim >= HIGH:
        return f"similar statements ({sim:.2f})"
    return None


def _close_sentences(old_text: str, new_text: str, sentence: Similarity) -> str | None:
    """No shared word, but the new statement says something changed and a sentence encoder finds the two
    close: 'I'm with Geico' / 'switched car insurance to Progressive'. Only for the speaker's own short
    statements: a change cue alone is common in chat ('now'), and a habit ('these days') is no change."""
    new_masked = masked(new_text)
    cue = next((c for p in _CUES if (c := cues.first_match(p, new_masked))), None)
    if cue is None or cue in _HABITUAL or sentence is None or not cues.speaker_owned(old_text):
        return None
    if max(len(old_text.split()), len(new_text.split())) > SENTENCE_WORDS:
        return None
    close = _resolve(sentence)
    return f"close sentences ({close:.2f}) with a change cue '{cue}'" if close and close >= SENTENCE else None


_CUES = (cues.CHANGE, cues.ENDING, cues.RETURN)
_HABITUAL = frozenset(("these days", "nowadays"))


def _ends_old_thing(old_text: str, new_text: str, cue: str) -> bool:
    """The words after an ending cue name something of the old statement: 'shelved the budgeting app'."""
    after = new_text.lower().partition(cue)[2].split()[:4]
    return bool(cues.content_stems(" ".join(after)).keys() & cues.content_stems(old_text).keys())


def _ended_before(old_text: str, new_text: str, cue: str) -> bool:
    """A cue that follows what ended ('Overwatch is dead to me', 'crutches are off', 'Camden is behind
    us') ends the old thing only when the words before it name it: a word or a value of the old statement."""
    before = " ".join(new_text.lower().partition(cue)[0].split()[-4:])
    old_words = cues.content_stems(old_text).keys() | cues.values(old_text)
    return bool((cues.content_stems(before).keys() | set(before.split())) & old_words)


def _says(text: str, value: str) -> bool:
    """The text names the value, wherever it stands ('Acme pays me' names 'acme')."""
    return bool(_value_pattern(value).search(text))


@functools.lru_cache(maxsize=cues.CACHE)
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


@functools.lru_cache(maxsize=cues.CACHE)
def masked_parts(new_text: str) -> tuple[str, ...]:
    """The masked new statement and its masked clauses (of two words or more), each once."""
    parts = [new_text] + [c for c in _CLAUSE.split(new_text) if len(c.split()) > 1]
    return tuple(masked(p) for p in dict.fromkeys(parts))


def _change(old_text: str, new_text: str) -> str | None:
    old_values, new_values = cues.values(old_text), cues.values(new_text)
    kept = {v for v in old_values if _says(new_text, v)}
    said, new_text = new_text, masked(new_text)  # a cue inside a name ('New York') is no cue
    if ending := cues.first_match(cues.ENDING, new_text):
        return _ending(old_text, said, ending, bool(kept or not old_values or not new_values))
    if cue := cues.renewed(old_text, new_text):
        return f"attribute renewed '{cue}'"
    if cue := cues.negated_attribute(old_text, new_text):
        return f"attribute negated '{cue}'"
    cue = cues.first_match(cues.CHANGE, new_text)
    if old_values and kept == old_values:  # every value of the old statement is said again
        came = sorted(new_values - old_values)  # ... next to a new one and a change: 'Seoul instead of Tokyo'
        return f"value '{sorted(kept)[0]}' -> '{came[0]}', change cue '{cue}'" if cue and came else None
    if cue := cue or cues.first_match(cues.RETURN, new_text):
        return f"change cue '{cue}'"
    if cues.first_match(cues.EPISODE, new_text):
        return None  # 'I went to bed at 2am last night': an episode, not a new standing value
    gone, came = sorted(old_values - kept), sorted(new_values - old_values)
    if gone and came:
        return f"value '{gone[0]}' -> '{came[0]}'"
    return None


def _ending(old_text: str, new_text: str, cue: str, names_old: bool) -> str | None:
    """An ending cue ends the old fact when it names the old thing: a cue that follows what ended ('the
    Jeep's gone') by the words before it; others by an old value said again, or the words after the cue
    ('not in Paris anymore' ends Paris, not New York; 'shelved the budgeting app')."""
    if cues.POSTFIX_ENDING.fullmatch(cue):
        names_old = _ended_before(old_text, new_text, cue)
    else:
        names_old = names_old or _ends_old_thing(old_text, masked(new_text), cue)
    return f"ending cue '{cue}'" if names_old else None
