"""Supersession rules: does a new statement replace the fact an older one stated?

Pure and offline (no LLM, no embeddings). Each text is split into clauses and read with the frame lexicon
of engine.annotate.facts.frames into (subject, attribute, value) facts. A new fact supersedes an old one when both are
about the same subject and attribute and either the value changed (a single-valued attribute: where one
lives, one's employer) or the new statement ends the old fact ("I quit my job", "not vegan anymore").

The rules lean towards *not* superseding: a missed supersession leaves two notes current, a wrong one hides
a true fact from default search. So an unresolved subject ("he", "she", an unknown noun), a hypothetical
("I want to move to Paris"), a question, a past-tense statement ("I lived in Rome") or an additive cue
("I also ...") never supersedes, and many-valued attributes (pets, hobbies, languages...) only do on an
explicit replacement cue ("instead", "no longer", "gave away").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine.annotate.facts.frames import FRAMES, MULTI_VALUED, Frame, words
from engine.annotate.facts.memo import memo
from engine.annotate.facts.values import attribute_and_value, display

__all__ = ["Fact", "extract_facts", "frame_attribute", "frame_distinct", "supersedes"]

SHARED = "shared"
"""Subject of 'the meeting', 'the rent': whoever speaks, it is the conversation's common thing."""


@dataclass(frozen=True, slots=True)
class Fact:
    subject: str
    """'self:<speaker>', '<relation> of <subject>', 'person:<name>', 'shared', or '?...' when unresolved."""
    attribute: str
    """'residence', 'employer', or 'kind: topic' such as 'when: team meeting', 'amount: rent'."""
    value: str
    """Normalised value ('seattle', '1450', '5551234567'); '' when an ending names none ('I quit my job')."""
    text: str
    """The value as written, for reasons shown to people."""
    is_negated: bool = False
    """The statement says the fact no longer holds ('quit', 'not ... anymore', 'used to')."""
    is_additive: bool = False
    is_replacement: bool = False
    is_past: bool = False
    """Historical ('I lived in Rome'): neither supersedes nor is superseded."""
    is_hypothetical: bool = False

    @property
    def is_resolved(self) -> bool:
        return not self.subject.startswith("?")


def supersedes(
    old_content: str, old_speaker: str | None, new_content: str, new_speaker: str | None
) -> str | None:
    """A short reason ('residence of Alice: New York -> Seattle') when the new statement replaces the old
    one's fact, else None."""
    new_facts = _extract(new_content, new_speaker)
    if not new_facts:
        return None
    standing = [f for f in _extract(old_content, old_speaker) if _is_standing(f)]
    for old in standing:
        if _affirms(new_facts, old):
            continue
        for new in new_facts:
            if reason := _replaces(old, new):
                return reason
    return None


def frame_attribute(
    old_content: str, old_speaker: str | None, new_content: str, new_speaker: str | None
) -> str | None:
    """The attribute both statements state for the same subject, when the frame lexicon reads both."""
    old_facts = [f for f in _extract(old_content, old_speaker) if _is_standing(f)]
    for new in _extract(new_content, new_speaker):
        for old in old_facts:
            if (
                new.is_resolved
                and _same_subject(old.subject, new.subject)
                and _same_attribute(old.attribute, new.attribute)
            ):
                return _label(old)
    return None


def frame_distinct(
    old_content: str, old_speaker: str | None, new_content: str, new_speaker: str | None
) -> str | None:
    """'amount: lease' vs 'amount: parking': the lexicon reads two amounts of two different things (an amount
    of no named thing, 'paying 720 for the room', may be of either)."""
    old_facts = [f for f in _extract(old_content, old_speaker) if _is_standing(f) and _named_amount(f)]
    for new in _extract(new_content, new_speaker):
        for old in old_facts:
            if _named_amount(new) and not _same_attribute(old.attribute, new.attribute):
                return f"'{old.attribute}' vs '{new.attribute}'"
    return None


def _named_amount(fact: Fact) -> bool:
    return _kind(fact.attribute) == "amount" and bool(fact.attribute.partition(":")[2].strip())


def extract_facts(text: str, speaker: str | None) -> list[Fact]:
    """Every fact the text states, in reading order (for tests and debugging)."""
    return list(_extract(text, speaker))


# --- the decision -------------------------------------------------------------------
def _is_standing(fact: Fact) -> bool:
    return fact.is_resolved and not (fact.is_negated or fact.is_past or fact.is_hypothetical)


def _affirms(new_facts: tuple[Fact, ...], old: Fact) -> bool:
    """The new text restates the old value itself ("I'm a barista and a student"): nothing is replaced."""
    return any(
        f.value == old.value
        and not f.is_negated
        and _same_subject(old.subject, f.subject)
        and _same_attribute(old.attribute, f.attribute)
        for f in new_facts
    )


def _replaces(old: Fact, new: Fact) -> str | None:
    if new.is_hypothetical or not new.is_resolved:
        return None
    if not (_same_subject(old.subject, new.subject) and _same_attribute(old.attribute, new.attribute)):
        return None
    if new.is_negated:
        return _reason(old, new) if _covers(new.value, old.value) else None
    if new.is_past or new.is_additive or new.value == old.value:
        return None
    if _kind(new.attribute) in MULTI_VALUED and not new.is_replacement:
        return None
    return _reason(old, new)


def _same_subject(a: str, b: str) -> bool:
    if a == b:
        return True
    return SHARED in (a, b) and (a.startswith("self:") or b.startswith("self:"))


def _kind(attribute: str) -> str:
    return attribute.partition(": ")[0]


def _same_attribute(a: str, b: str) -> bool:
    """Equal, or the same kind with compatible topics: 'when: meeting' ~ 'when: team meeting'."""
    if a == b:
        return True
    (ka, _, ta), (kb, _, tb) = a.partition(": "), b.partition(": ")
    if ka != kb or not ta or not tb:
        return False
    wa, wb = ta.split(), tb.split()
    return wa[-1] == wb[-1] and (set(wa) <= set(wb) or set(wb) <= set(wa))


def _covers(ended: str, old: str) -> bool:
    """An ending names the old value, or none at all: 'cat' ends 'cat luna'; '' ends any employer."""
    return not ended or set(ended.split()) <= set(old.split())


def _reason(old: Fact, new: Fact) -> str:
    after = "ended" if new.is_negated else new.text
    return f"{_label(old)}: {old.text} -> {after}"


_LABELS = {
    "when": "time of {}",
    "time": "time to {}",
    "amount": "{}",
    "count": "number of {}s",
    "favourite": "favourite {}",
    "preference": "preference in {}",
}


def _label(fact: Fact) -> str:
    """'residence of Alice', 'time of team meeting', 'rent of brother of Alice'."""
    kind, _, topic = fact.attribute.partition(": ")
    what = _LABELS.get(kind, "{}").format(topic) if topic else kind
    return what if fact.subject == SHARED else f"{what} of {_display(fact.subject)}"


def _display(subject: str) -> str:
    subject = subject.replace("self:?", "the speaker").replace("self:", "").replace("person:", "")
    return subject.title() if " " not in subject else subject


# --- reading facts ---------------------------------------------------------------------
_ABBREV = re.compile(r"\b(Dr|Mr|Mrs|Ms|St|Jr|Sr|Ave|Prof|Mt|Ft)\.", re.I)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_CLAUSE = re.compile(
    r"\s*[;:]\s+|,\s+|\s+(?:and|but|so|although|though|because|while|whereas|plus)\s+|\s+[-–—]+\s+"
)
_HYPOTHETICAL_START = re.compile(r"^\W*(?:if|unless|whether|in case|when|once|what if|imagine)\b", re.I)


@memo(65536)
def _extract(text: str, speaker: str | None) -> tuple[Fact, ...]:
    """Cached: the annotator asks about the same notes once per candidate pair, in two stages."""
    text = text.replace("’", "'").replace("‘", "'").replace("“", '"').replace("”", '"')
    text = _ABBREV.sub(r"\1", re.sub(r"\b([ap])\.m\.", r"\1m", text, flags=re.I))
    frames = _live_frames(text)
    facts: list[Fact] = []
    for sentence in _SENTENCE.split(text):
        if frames and sentence.strip() and not sentence.rstrip().endswith("?"):
            facts += _sentence_facts(sentence, speaker, frames)
    return tuple(facts)


def _live_frames(text: str) -> list[Frame]:
    """Frames that match somewhere in the text, clause breaks made full stops (so a frame that matches a
    clause matches here too): one search each instead of one per clause. '^'-anchored frames always run."""
    joined = _CLAUSE.sub(". ", text)
    return [
        f
        for f in FRAMES
        if f.pattern.pattern.startswith("^")
        or (f.trigger is None or f.trigger.search(joined))
        and f.pattern.search(joined)
    ]


def _sentence_facts(sentence: str, speaker: str | None, frames: list[Frame]) -> list[Fact]:
    """Clauses without a subject of their own ('... and works at Intel') inherit the previous one's."""
    facts: list[Fact] = []
    subject = _self(speaker)
    for clause in _CLAUSE.split(sentence):
        found = _clause_facts(clause, speaker, subject, frames)
        facts += found
        subject = found[-1].subject if found else (_lead_subject(clause, speaker) or subject)
    return facts


def _clause_facts(clause: str, speaker: str | None, inherited: str, frames: list[Frame]) -> list[Fact]:
    found: dict[tuple[str, str, str], Fact] = {}
    hypothetical = bool(_HYPOTHETICAL_START.match(clause))
    for frame in frames:
        for m in frame.pattern.finditer(clause):
            fact = _fact(frame, m, clause, speaker, inherited, hypothetical)
            if fact is not None:
                found.setdefault((fact.subject, fact.attribute, fact.value), fact)
    return list(found.values())


def _fact(
    frame: Frame, m: re.Match[str], clause: str, speaker: str | None, inherited: str, hypothetical: bool
) -> Fact | None:
    raw = (m.group("value") or "").strip() if "value" in m.re.groupindex else ""
    if not raw and not frame.ends or raw and frame.check is not None and not frame.check(m):
        return None
    attribute, value = attribute_and_value(frame, m, raw)
    if raw and not value:
        return None
    owner_end = m.end("owner") if "owner" in m.re.groupindex and m.group("owner") else m.start()
    subject, aux = _resolve(clause[:owner_end], speaker)
    if not subject and frame.needs_subject or subject == SHARED and "what" not in m.re.groupindex:
        subject = "?"  # "the" owns nouns ("the meeting"), not verbs ("the learning environment")
    said = aux + [t.lower() for t in _tokens(clause[m.start() : m.start("value") if raw else m.end()])]
    # An ending frame's own verb ("quit") is not a negation of it; only words around it are.
    negators = set(aux if frame.ends else said) & _NEGATORS
    negated = bool(negators) or bool(_ANYMORE.search(clause[m.end() :]))
    return Fact(
        subject=subject or inherited,
        attribute=attribute,
        value=value,
        text=display(raw) if raw else "",
        is_negated=negated != frame.ends,
        is_additive=bool(_ADDITIVE.search(clause)),
        is_replacement=bool(_REPLACEMENT.search(clause)),
        is_past=not frame.change and bool(set(said) & _PAST) and not set(aux) & _PERFECT,
        is_hypothetical=hypothetical or bool(set(aux) & _HYPOTHETICAL),
    )


# --- who the fact is about ------------------------------------------------------------
_SKIP = words(
    "am 'm are 're is 's was were be been being have 've has had 'd do does did will 'll shall can ca wo just "
    "recently finally officially now currently still also actually really already then even eventually ever never "
    "not n't no longer got get gotten getting to going gonna decided ended up soon lately basically totally "
    "honestly seriously literally happily usually normally typically always often sometimes generally mostly only "
    "too again new old current proudly temporarily fully went gone become became turned switched started stopped "
    "quit used lost left leaving quitting want wanna plan planning plans hope hoping thinking considering might may could would should wish "  # noqa: E501
    "maybe perhaps try trying like"
)
_NEGATORS = words("not n't never no longer stopped quit used lost left leaving quitting")
_HYPOTHETICAL = words(
    "want wanna plan planning plans hope hoping thinking considering might may could would "
    "should wish maybe perhaps try trying like 'd"
)
_PAST = words(
    "was were had did lived worked resided studied drove owned played spoke attended majored preferred"
)
_PERFECT = words("have 've has")
_FIRST_PERSON = words("i we me us my our myself ourselves")
_PRONOUNS = words("he she they him her them his their it its you your yours someone somebody everyone")
_DETERMINERS = words("the this these those")  # not "that": "desserts that work for everyone"
_ADJECTIVES = words(
    "older younger little big best oldest youngest eldest baby twin ex new old dear close good step"
)
_NOT_NAMES = words(
    "so well yeah yes no ok okay anyway guess update news btw lol haha hey hi oh wow today yesterday tonight then "
    "now tomorrow monday tuesday wednesday thursday friday saturday sunday january february march april may june july "
    "august september october november december also sadly luckily unfortunately fortunately thanks sorry"
)
_FUNCTION = words(
    "as after before since because while if although but and or for with at in on from by of like about even"
)
_ANYMORE = re.compile(r"\b(?:anymore|any\s+more|no\s+more)\b", re.I)
_ADDITIVE = re.compile(
    r"\b(?:also|as\s+well|in\s+addition|additionally|second|plus|besides|on\s+the\s+side|"
    r"side\s+(?:job|gig|hustle))\b|\btoo\b\W*$",
    re.I,
)
_REPLACEMENT = re.compile(
    r"\b(?:instead|replaced|replacing|anymore|any\s+more|no\s+longer|switched|swapped|"
    r"traded)\b",
    re.I,
)
_CONTRACTION = re.compile(r"(n't|'m|'re|'ve|'ll|'d|'s)\b", re.I)


def _self(speaker: str | None) -> str:
    return f"self:{speaker.strip() if speaker and speaker.strip() else '?'}"


def _tokens(text: str) -> list[str]:
    spaced = _CONTRACTION.sub(r" \1", text)
    return [t for t in (w.strip('.,!?;:"()[]') for w in spaced.split()) if t]


def _resolve(prefix: str, speaker: str | None) -> tuple[str, list[str]]:
    """Subject named by the words before a frame, and the auxiliaries between ('I *have just* moved')."""
    tokens = _tokens(prefix)
    aux: list[str] = []
    while tokens and (tokens[-1].lower() in _SKIP or tokens[-1].lower() in _NOT_NAMES):
        aux.append(tokens.pop().lower())
    if not tokens:
        return "", aux
    return _tail_subject(tokens, speaker) or "?", aux


def _tail_subject(tokens: list[str], speaker: str | None) -> str | None:
    last, low = tokens[-1], tokens[-1].lower()
    if low in _FIRST_PERSON:
        return _self(speaker)
    if low in _PRONOUNS:
        return "?" + low
    if low in _DETERMINERS:
        return SHARED
    if (
        last[:1].isupper()
        and low not in _NOT_NAMES | _FUNCTION
        and not (len(low) > 5 and low.endswith("ing"))
    ):
        return _person(low, speaker)
    owner = _owner_of(tokens[:-1], speaker)
    return f"{low} of {owner}" if owner else None


def _person(name: str, speaker: str | None) -> str:
    """A name is the speaker when it is the speaker's (first) name: 'Alice moved' said by Alice."""
    names = (speaker or "").lower().split()
    return _self(speaker) if names and name in (names[0], " ".join(names)) else f"person:{name}"


def _owner_of(tokens: list[str], speaker: str | None) -> str | None:
    while tokens and tokens[-1].lower() in _ADJECTIVES:
        tokens = tokens[:-1]
    if not tokens:
        return None
    if tokens[-1].lower() in ("my", "our"):
        return _self(speaker)
    if tokens[-1] == "'s" and len(tokens) > 1:
        owner = _tail_subject(tokens[:-1], speaker)
        return owner if owner and not owner.startswith("?") and owner != SHARED else None
    return None


def _lead_subject(clause: str, speaker: str | None) -> str | None:
    """Subject of a clause that states no fact ('My brother, Tom, moved...'), from its first words."""
    tokens = [t for t in _tokens(clause) if t.lower() not in _SKIP and t.lower() not in _NOT_NAMES]
    if not tokens:
        return None
    first = tokens[0].lower()
    if first in ("my", "our") and len(tokens) > 1:
        rest = [t for t in tokens[1:] if t.lower() not in _ADJECTIVES]
        return f"{rest[0].lower()} of {_self(speaker)}" if rest else _self(speaker)
    if first in _FIRST_PERSON or first in _PRONOUNS or tokens[0][:1].isupper():
        return _tail_subject(tokens[:1], speaker)
    return None
