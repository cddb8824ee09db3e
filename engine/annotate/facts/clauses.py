"""What a statement tells, read clause by clause: its questions set aside, and a trailing aside cut off.

People tell an assistant the news and ask about it in one breath ('Pixel 8 arrived from the EE upgrade,
how do I get WhatsApp chats across?'), and ramble on after the news ('52 miles and my legs somehow still
work'). A guard cue or another party in such an aside says nothing of the old fact, while a cue before
the news governs it ('maybe I should try Portobello, they do beach runs'). engine.annotate.facts.decision
reads the statement through these.
"""

from __future__ import annotations

import re

import engine.annotate.facts.cues as cues
from engine.annotate.facts.attribute import says
from engine.annotate.facts.memo import memo

__all__ = ["STATED_WORDS", "asks", "before_aside", "guard_cue", "names_old", "stated", "told"]

STATED_WORDS = 4
"""Fewer words than this left besides the questions tell nothing ('Did you see the game? What a finish!')."""


def told(text: str) -> str:
    """The normalised statement less its questions, where it tells something besides them."""
    said = cues.normalise(text)
    return stated(said) or said


@memo(cues.CACHE)
def asks(text: str) -> bool:
    """The statement opens or ends with a question ('Did you see the game? What a finish!'): as an old
    statement, chat small talk more often than a fact (LoCoMo's turns ask back after nearly every line)."""
    sentences = [x for x in _SENTENCE.split(text.strip()) if x.strip()]
    return bool(sentences) and any(_QUESTION.search(x) for x in (sentences[0], sentences[-1]))


@memo(cues.CACHE)
def stated(text: str) -> str:
    """What the statement tells: its sentences less the questions about the speaker's own matter, one
    tagged on after a comma cut off ('after the regrade I'm on £34,500, does that push me over ...?'). ''
    when it asks anything else (a chat turn asking back) or a question leaves under STATED_WORDS words."""
    sentences = _SENTENCE.split(text.strip())
    if not any(_QUESTION.search(s) for s in sentences):
        return text
    kept, ends = [], (0, len(sentences) - 1)
    for i, sentence in enumerate(sentences):
        if not _QUESTION.search(sentence):
            kept.append(sentence)
        elif len(sentence.split()) < STATED_WORDS:
            continue  # 'honestly??', 'right?': an aside, not a question
        elif not _own(sentence):
            if i in ends:  # opens or ends by asking back ('How have you been?'): a chat turn, not news
                return ""
        elif tag := _TAG_QUESTION.search(sentence):
            kept.append(sentence[: tag.start()])
        elif not _ASKING.match(sentence):  # 'thinking i should switch, maybe planet fitness?': a statement
            kept.append(sentence)
    said = " ".join(x.strip() for x in kept if x.strip())
    return said if len(said.split()) >= STATED_WORDS else ""


_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_QUESTION = re.compile(r"\?\s*(?:[\W_]*)$")


def _own(question: str) -> bool:
    """A question about the speaker's own matter ('how do I dispute it?', 'can you help me cancel it?'),
    not about the listener ('could you tell me more about it?', 'can I come and watch you play?')."""
    return bool(_FIRST.search(question)) and (not _YOU.search(question) or bool(_HELP.search(question)))


_FIRST = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|me|my|mine)\b", re.I)
_YOU = re.compile(r"\byou(?:r|'re|'ve|'ll|'d)?\b", re.I)
_HELP = re.compile(r"\byou\s+(?:please\s+)?help\b", re.I)
_OPENERS = (
    "how|what|why|where|who|when|which|should|shall|can|could|will|would|do|does|did|is|are|was|were|has|"
    "have|any|anyone"
)
_ASKING = re.compile(rf"\W*(?:{_OPENERS}|what's|am)\b", re.I)
"""A sentence in the form of a question (set aside when about the speaker's own matter)."""
_TAG_QUESTION = re.compile(rf",\s+(?=(?:{_OPENERS}|isn't|surely|or)\b)", re.I)


@memo(cues.CACHE)
def guard_cue(text: str) -> str | None:
    """The first guard cue of a new statement ("additive cue 'also'"): cached, as it depends on it alone."""
    for name, pattern in (
        ("negated past", cues.NEGATED_PAST),
        ("hypothetical", cues.HYPOTHETICAL),
        ("additive", cues.ADDITIVE),
        ("continuity", cues.STILL),
    ):
        if cue := cues.first_match(pattern, text):
            return f"{name} cue '{cue}'"
    return None


def before_aside(old_text: str, new_text: str) -> str | None:
    """The news without its trailing aside: the clauses before the first one with a guard cue or another
    party, where a clause free of them names the old statement's thing first and no guarded clause names
    it ('52 miles | and my legs somehow still work', 'from March it's R8,800, | landlord agreed ... because
    I signed for another two years', 'full fibre 900 now | but ... kills my partner's night shifts').
    None where a guard comes first: it governs what follows."""
    spans = [m.span() for m in _CLAUSE.finditer(new_text)]
    parts = [new_text[a:b] for a, b in spans]
    guarded = [bool(guard_cue(c) or cues.third_party(c)) for c in parts]
    first = next((i for i, c in enumerate(parts) if guarded[i] or names_old(old_text, c)), None)
    if first is None or guarded[first]:  # most calls end here: a guard comes first
        return None
    aside = next((i for i in range(first, len(parts)) if guarded[i]), None)
    if aside is None or any(
        guarded[i] and (names_old(old_text, parts[i]) or _refers_back(parts[i]))
        for i in range(aside, len(parts))
    ):
        return None
    if _PERSON.search(new_text, spans[aside][0]):  # 'give him a buzz if ...': someone else's news
        return None
    news = new_text[: spans[aside][0]].rstrip(" ,;:-")
    return news if len(news.split()) >= STATED_WORDS else None  # 'No problem, | let me know if ...


_CLAUSE = re.compile(
    r".+?(?=[.!?;:]+\s|,\s|\s-+\s|\s(?:and|but|so|because|though|although|while|plus|cos|cause)\s|$)", re.I
)


def _refers_back(clause: str) -> bool:
    """A guarded clause that points at the news without naming it: one of no content word of its own ('we
    didn't'), or one that says the old thing stays ('personal one is unchanged', 'same old')."""
    return not cues.content_stems(clause) or bool(_BACK.search(clause))


_BACK = re.compile(r"\b(?:the same|unchanged|same old|as before|as usual|as ever)\b", re.I)
_PERSON = re.compile(r"\b(?:he|him|his|she|her|hers|he's|she's)\b", re.I)


def names_old(old_text: str, clause: str) -> bool:
    """The clause names the old statement's thing: a content word of it (a modifier too: 'the globe one
    is still my main' after 'my globe number is ...'), or one of its values."""
    if cues.all_stems(clause) & cues.all_stems(old_text):
        return True
    return any(says(clause, v) for v in cues.values(old_text))
