"""The words a supersession decision reads: guards, change cues, values, subjects, content words.

General English constructions, not an attribute lexicon: what makes a statement additive ("also"),
hypothetical ("if", "someday"), a negated past ("never did", "almost"), about someone else ("my brother
moved"), or a change ("now", "no longer", "sold", "switched"). engine.annotate.facts.decision combines them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from engine.annotate.facts.memo import memo
from engine.text import STOPWORDS, stem

__all__ = [
    "ADDITIVE",
    "CHANGE",
    "ENDING",
    "EPISODE",
    "HYPOTHETICAL",
    "NEGATED_PAST",
    "RELATION_WORDS",
    "POSTFIX_ENDING",
    "REPLACEMENT",
    "RETURN",
    "STILL",
    "possessed",
    "speaker_owned",
    "nobody_elses",
    "all_stems",
    "content_stems",
    "is_past_event",
    "negated_attribute",
    "REPLACING",
    "first_match",
    "masked",
    "renewed",
    "normalise",
    "party_names",
    "third_party",
    "units",
    "value_kind",
    "values",
]


def _rx(*alternatives: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(alternatives) + r")\b", re.I)


ADDITIVE = re.compile(
    r"\b(?:also|as well|another|in addition|additionally|on top of|added|besides|both|dual)\b"
    r"|\b(?:a|my|our|the) second\b|\btoo\b\s*(?:[-,.!;:)]|$)|\bside (?:hustle|gig|job|business)\b",
    re.I,
)
"""The new fact joins the old one: 'I also adopted a cat', 'shellfish too', 'a second job', 'officially
dual', 'a side hustle'."""

HYPOTHETICAL = _rx(
    r"if",
    r"unless",
    r"would",
    r"(?:I|we|you|he|she|they)'d(?! been| had)",
    r"some ?day",
    r"wanna",
    r"(?:want|wants|wanted|plan|plans|planning|hope|hoping|intend|need) to",
    r"(?:am|'m|are|'re|is|'s) going to",
    r"thinking (?:about|of)",
    r"considering",
    r"wondering (?:whether|if|about)",
    r"tempted to",
    r"toying with",
    r"(?:considered|contemplated) \w+ing",
    r"maybe",
    r"might",
    r"should(?!(?:'ve| have) (?:\S+ ){0,5}(?:years|months|ages|long) ago|(?:'ve| have) (?:\S+ ){0,5}sooner)",
    r"could",
    r"dream(?:ed|ing|s)? (?:of|about)",
    r"always dreamed",
    r"wish",
    r"tomorrow",
    r"next (?:week|weekend|month|year)",
    r"one day",
)
"""Not (yet) true: 'if I got the job I'd move', 'someday I want an EV', 'considering going vegetarian',
'tempted to cancel the gym'.
A late regret is no plan: 'should've done it years ago' says it is done now."""

NEGATED_PAST = _rx(
    r"never (?:did|went|ended|got|actually|really|quit|left|moved|sold|canceled|cancelled|made|bought|took)",
    r"didn'?t",
    r"did not",
    r"almost",
    r"nearly",
    r"after all",
    r"in the end",
    r"fell through",
    r"rumou?r",
    r"that was (?:my|his|her|their)",
    r"not true",
    r"wasn'?t me",
    r"(?:won'?t|will not|don'?t|do not|never) (?:\w+ )?(?:quit|give up|stop|leave)",
    r"w(?:as|ere) (?:going to|gonna|about to|all set to|supposed to)",
    r"turned (?:\w+ ){0,2}down",
    r"backed (?:down|off)",
    r"talked (?:me|us|him|her|them) out of",
    r"changed (?:my|our|his|her|their) minds?",
    r"decided against",
    r"chickened out",
    r"bottled it",
    r"(?:got|get|getting) cold feet",
    r"(?:couldn'?t|could not) go through with",
    r"un-?(?:cancel+ed|did|subscribed again)",
    r"talked (?:me|us|him|her|them) round",
)
"""A change that did not happen: 'I never did quit the choir', 'I almost sold the bike but didn't', 'was
gonna get a new number', 'was supposed to move to the Hong Kong office', 'offered me head of department and I
turned it down', 'cancelled TalkTalk, then they offered half price so I un-cancelled'."""

EPISODE = _rx(
    r"last night", r"yesterday", r"this morning", r"tonight", r"the other day", r"last (?:week|weekend)"
)
"""A one-off episode ('went to bed at 2am last night'), not a new standing value."""

STILL = _rx(
    r"still(?! (?:getting used|can'?t get used|adjusting|settling|learning|unpacking|figuring|miss))",
    r"same old",
    r"as always",
    r"as usual",
    r"(?:as|like) ever",
    r"for (?:\w+ ){0,2}(?:years?|months?|weeks?|days?|decades?|ages|a while) now",
    r"(?:i'?m|we'?re|i am|we are) staying(?! (?:with|at|in|over)\b)",
    r"staying (?:put|as)",
    r"unchanged",
    r"stick(?:ing)? (?:around|with (?:it|them|him|her))",
    r"keep(?:ing)? (?:\w+ ){1,2}for (?:the )?(?:day[ -]to[ -]day|everyday|personal)",
    r"(?:left|leave|leaving) (?:it|them) (?:alone|as (?:it|they) (?:is|are|was|were))",
)
"""Continuity: 'still in Portland', 'still at 110k', 'vegan for three years now', 'so I'm staying' (not
'staying with my parents now', a move; nor a newcomer's 'still unpacking', 'still learning where everything
is', nor 'still miss the old choir')."""

ENDING = _rx(
    r"no longer",
    r"any ?more",
    r"not anymore",
    r"quit",
    r"quitting",
    r"left",
    r"sold(?! out)",
    r"dropped",
    r"ditched",
    r"gave up",
    r"stopped",
    r"broke up",
    r"split up",
    r"retired",
    r"closed",
    r"canceled",
    r"cancelled",
    r"replaced",
    r"took me off",
    r"died",
    r"stolen",
    r"moved out",
    r"shelved",
    r"skipped",
    r"put (?:\w+ )?down",
    r"divorced",
    r"lost(?! it\b)",
    r"(?<!getting )(?<!get )used to",
    r"(?:smoke|alcohol|sugar|meat|caffeine)[- ]free",
    r"no more",
    r"done with",
    r"(?:'m|am) off(?! to\b)",
    r"(?:tapered|paid|signed) off",
    r"(?:is|'s|are|'re) (?:gone|over|dead|history|off)",
    r"(?:came|come|comes) off",
    r"(?:is|'s|are|'re)? ?(?:officially )?behind (?:me|us)",
    r"(?:is|'s|are|'re) out of the picture",
    r"fell apart",
    r"deleted",
    r"scrapped",
    r"graduated",
    r"passed away",
    r"rehomed",
    r"moved on",
)
"""The old fact ended, even when its value is named again: 'sold the Outback', 'took me off lisinopril'."""

CHANGE = _rx(
    r"(?<!for )(?<!right )now",
    r"nowadays",
    r"these days",
    r"(?<!while )since(?! (?:then|forever|childhood|(?:we|I|you) (?:last|talked|spoke|chatted|saw|was|were)))",
    r"instead",
    r"switched",
    r"switching",
    r"changed",
    r"moved",
    r"relocated",
    r"raise",
    r"promot(?:ed|ion)",
    r"upgraded",
    r"swapped",
    r"traded",
    r"officially",
    r"rebooked",
    r"pushed",
    r"postponed",
    r"rescheduled",
    r"enrolled",
    r"took over",
    r"jumped",
    r"went up",
    r"went down",
    r"down to",
    r"getting used to",
    r"adjusting to",
    r"settling in(?:to)?",
)
"""The newer statement reports a change: 'now', 'since the reorg', 'these days', 'switched'."""

POSTFIX_ENDING = re.compile(
    r"(?:is|'s|are|'re) (?:gone|over|dead|history|off|out of the picture)|(?:came|come|comes) off|"
    r"(?:(?:is|'s|are|'re) ?)?(?:officially )?behind (?:me|us)|fell apart"
)
"""Ending cues that follow what ended ('the Jeep's gone', 'braces came off'): the words before name it."""

RETURN = _rx(
    r"(?:am|'m|are|'re|is|'s|went|go|going|moved|got) back (?:to|in|at|on|home)",
    r"(?:got|have|has|had) (?:my|our|the) \w+ back",
    r"start(?:ed|ing)? \w+ing (?:\w+ ){0,2}again",
)
"""A return to an earlier state ('got my license back', 'started eating fish again'; not a bare 'again':
'my coffee went cold again' repeats an episode). A change, though not one that names a new value (so not
enough to read a restatement as a change)."""

REPLACEMENT = _rx(r"instead", r"no longer", r"any ?more", r"switched", r"replaced", r"swapped", r"traded")
"""Cues that name a replacement outright: a shared word then suffices for the attribute."""

CACHE = 1 << 16
"""Texts whose readings are kept per reader: a few batches of notes and their candidates."""

_POSSESSED = re.compile(
    r"\b(?:[Mm]y|[Oo]ur)\s+(?:(?:new|old|current|usual|favou?rite)\s+)?([a-z]+)(?='s|\s+(?:is|are|was|'s|now|since|"
    r"these|named|called|[A-Z])\b|\s*[,.!;:]|$)"
)


@memo(CACHE)
def possessed(text: str) -> frozenset[str]:
    """Nouns the speaker owns ('my manager', 'our car insurance' -> 'car'): the attribute a fact is about."""
    return frozenset({stem(m.group(1).lower()) for m in _POSSESSED.finditer(text)} - {"own", "life", "way"})


_RELATIONS = (
    r"brother|sister|sibling|mom|mum|mother|dad|father|parents?|wife|husband|spouse|partner|son|daughter|"
    r"kids?|child|children|baby|friend|buddy|neighbou?r|roommate|flatmate|housemate|coworker|co-worker|"
    r"colleague|girlfriend|boyfriend|fianc[eé]e?|cousin|aunt|uncle|grandma|grandpa|grandmother|"
    r"grandfather|niece|nephew|(?:brother|sister|mother|father|son|daughter)-in-law|in-laws?|boss|manager|"
    r"teammate|classmate|sis|bro|twin|stepdad|stepmom|mate|pal|bestie"
)
_NOT_AFTER_PREPOSITION = "".join(
    rf"(?<!\b{p}\s)" for p in ("to", "with", "for", "from", "by", "of", "at", "than")
)
_THIRD_SUBJECT = re.compile(
    rf"{_NOT_AFTER_PREPOSITION}\b(?:my|our)\s+(?:\w+\s+)?(?P<rel>{_RELATIONS})(?:'s)?(?:\s+(?-i:[A-Z])\w+)?\s+"
    r"(?:(?:is|'s|was|are)\s+(?=\w+ing\b)|(?!is\b|'s\b|was\b|are\b))(?P<verb>\w+)",
    re.I,
)
"""'my sister moved': a party opening a clause. One after a preposition is an object ('the Swift went to my
cousin', 'classes with my sister'), not who the statement is about."""
_RELATION_WORDS = frozenset(re.findall(r"[a-z-]+", _RELATIONS.replace("s?", "")))
RELATION_WORDS = _RELATION_WORDS
"""Who a fact is about, not what: 'my sister lives...' and 'my sister got...' share no attribute."""
_OWNERS = r"(?:my|our|your|his|her|their)\b"
_HOUSEHOLD = r"(?:baby|kids?|child|children)\b"
_BARE_THIRD = re.compile(
    rf"(?:^|[.!?]\s+)\W*(?:(?:the|a|an|one)\s+)?(?:(?!{_OWNERS})\w+\s+)?(?!{_HOUSEHOLD})(?P<rel>{_RELATIONS})"
    r"(?:'s)?(?:\s+of\s+(?:mine|ours)|\s+from\s+\w+)?(?:\s+(?-i:[A-Z])\w+)?\s+(?!of\b|and\b|&)\w+\b"
    r"(?!(?:\s+\w+){0,3}\s+(?:me|us)\b)",
    re.I,
)
"""A party opening a sentence without 'my': 'dad finally sold his Octavia', 'little brother switched',
'colleague of mine quit', 'the wife moved'. Not when the speaker is the object ('boss moved me to nights'),
and not the household's children ('baby number three arrived' changes the speaker's own family)."""
_FIRST_SUBJECT = re.compile(r"\b(?:[Ii]|[Ii]'?m|[Ii]'?ve|[Ii]'ll|[Ii]'d|[Ww]e|[Ww]e're|[Ww]e'?ve|[Ww]e'll)\b")
"""The speaker as subject, as chat types it: 'i', 'im', 'ive', 'We' (not 'ill', 'id', 'well': words)."""
_FIRST_OBJECT = re.compile(r"\b(?:me|my|mine|us|our)\b", re.I)  # 'you can reach me at ...' is the speaker's
_PRONOUN_SUBJECT = re.compile(
    r"^\W*(?:he|she|he's|she's|you|you're|you've|your)\b", re.I
)  # not 'they': often a company
_NAMED_OWNER = re.compile(
    r"^\W*(?P<name>[A-Z][a-z]+)'s\s+(?!my\b|our\b|the\b|a\b|an\b|been\b|not\b)[A-Za-z]\w*"
)
"""'Sue's NHS pension went up', 'Dev's contract ended': a named party's thing opens the statement."""
_OWNER_SUBJECT = re.compile(
    r"(?:^|[.!?]\s+)\W*(?:(?:my|our)\s+(?P<rel>[a-z]+)|(?P<name>(?-i:[A-Z])[a-z]+))(?:'s)?"
    r"(?:(?:\s+[\w']+){1,3}?\s+(?:his|her)\b|"
    r"(?:(?:(?<='s)|\s+(?:has|had))\s+(?:\w+ed|gone|left|got|quit|sold|taken|been)|"
    r"(?:\s+(?:at|from|in|on)\s+(?:the\s+)?\w+)?\s+(?:gave|left|quit|sold|went|took|lost))\b"
    r"(?!\s+(?:me|us)\b)[^.!?]*?\b(?:he|she)\b)",
    re.I,
)
"""A subject that changes its own thing ('Junior sold his Corolla', 'my bf cancelled his gold's', 'our
Darren's moved his pension'): the possessive says whose, whatever the subject is called; or a named subject
that a 'he' / 'she' later in the sentence refers back to ('Pam has left the choir, she says it's more fun',
'Kat gave up vegan, she was gone': in the plain past, a verb that ends something), unless the speaker is
the object ('Shah has moved me onto ..., she says')."""
_NUMBER = re.compile(
    r"(?<![a-z\d])(?<!(?-i:[A-Z])-)\$?\d[\d,.:]*(?:\s?(?:k|am|pm|st|nd|rd|th)(?![a-z])|%)?", re.I
)
"""A number and its unit: '45k', '10am', '3rd' (not '30km', which is 30 of something else; not the 42 of
'Loon42', nor the 221908 of a reference 'VF-221908'; the 11 of 'under-11s' is one)."""
_HANDLE = re.compile(r"\b(?=\w*[a-z])(?=\w*[_\d])[a-z]\w{3,}\b", re.I)
"""A user name or code typed as one word of letters with digits or underscores ('gabi_gol10', 'Loon42')."""
_ORDINAL = re.compile(r"\d+(?:st|nd|rd|th)")
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][\w'&-]*(?:\s+(?:[A-Z0-9][\w'&-]*))*")
_WORD_OR_MARK = re.compile(r"[a-z][a-z'-]*|[^\w\s]")
"""Words, and the marks between them: a comma ends a compound ('my number, save it')."""
_GENERIC = frozenset(
    "really pretty honestly basically totally like lol haha yeah ok okay good great nice day days week weeks "
    "month months year years time today tonight morning night every thing things stuff lot bit little big "
    "much many one two first last ago back way kind sort get got go going went make made take took thing "
    "people love still new now just also even though since feel feels think know right well rough tough hard fun "
    "busy tired happy sad cold hot awesome amazing terrible beautiful gorgeous crazy cool wild huge bad best "
    "worst fast slow long short easy sure glad excited super real whole".split()
)


@memo(CACHE)
def normalise(text: str) -> str:
    """Straight quotes; no stage directions ('[shares a photo of ...]'); no vocatives ('Thanks, John!')."""
    text = text.replace("’", "'").replace("‘", "'").replace("“", '"').replace("”", '"')
    return _VOCATIVE.sub("", _STAGE.sub(" ", text)).strip()


_STAGE = re.compile(r"\[[^\]]*\]")
_VOCATIVE = re.compile(
    r",\s*(?!(?:Dr|Mr|Mrs|Ms|Prof|St)\b)[A-Z][a-z]+(?=\s*[!?.,])|\b(?:Hey|Hi|Hello)\s+[A-Z][a-z]+\b"
)  # ', Dr. Alvarez' is a title, not 'Thanks, John!'
_PARTY_NAME = re.compile(rf"\b(?:my|our)\s+(?:\w+\s+)?(?:{_RELATIONS})\s+(?P<name>(?-i:[A-Z])[a-z]+)", re.I)
_RENEWED = re.compile(r"\b(?:a|my|our)\s+new\s+(?P<word>[a-z]+)", re.I)
"""'a new dentist', 'my new number' (not 'new worlds', 'some new book recommendations')."""


@memo(CACHE)
def party_names(text: str) -> frozenset[str]:
    """Names given to a related party ('my boyfriend Marco' -> 'marco'): a later 'Marco and I' is that party."""
    return frozenset(m.group("name").lower() for m in _PARTY_NAME.finditer(text))


def renewed(old_text: str, new_text: str) -> str | None:
    """'a new dentist', 'my new number': an attribute word of the old statement replaced by a new one (and
    not already 'new' there: the same phrase twice is no change)."""
    stems, old_lower = content_stems(old_text), old_text.lower()
    for m in _RENEWED.finditer(new_text):
        phrase = m.group(0).lower()
        if _stem(m.group("word").lower()) in stems and phrase not in old_lower:
            return phrase
    return None


REPLACING = frozenset(("instead", "switched", "swapped", "traded", "replaced"))
"""Replacement cues that name no ending: 'I spend my Saturdays at the shelter instead'."""
_NEGATED_WORD = re.compile(r"\b(?:no|without)\s+(?P<word>[a-z]+)|\b(?P<free>[a-z]+)-free\b", re.I)


def negated_attribute(old_text: str, new_text: str) -> str | None:
    """'no glasses', 'meat-free': the new statement denies a head word the old one asserted (and the old
    statement does not deny it already: 'no car, no problem' twice is no change). The old statement must
    assert something of the speaker ('I wear glasses'): 'Talk to you soon!' is no fact 'long time no talk' denies."""
    if not _FIRST_SUBJECT.search(old_text):
        return None
    stems, old_lower = content_stems(old_text), old_text.lower()
    for m in _NEGATED_WORD.finditer(new_text):
        word = (m.group("word") or m.group("free")).lower()
        if _stem(word) in stems and m.group(0).lower() not in old_lower:
            return m.group(0).lower()
    return None


_PATTERNS: dict[tuple[str, int], re.Pattern[str]] = {}
"""The cue patterns `first_match` has been given, by source and flags (a few dozen, for good)."""


def first_match(pattern: re.Pattern[str], text: str) -> str | None:
    key = (pattern.pattern, pattern.flags)
    if key not in _PATTERNS:
        _PATTERNS[key] = pattern
    return _first_match(*key, text)


@memo(4 * CACHE)
def _first_match(source: str, flags: int, text: str) -> str | None:
    """Keyed by the pattern's source and flags, not the pattern: a key of strings and numbers is one the
    garbage collector stops tracking, one holding a compiled pattern it walks on every full pass (117k
    such keys were 107 ms of a 345 ms pass after 30k notes written)."""
    m = _PATTERNS[source, flags].search(text)
    return m.group(0).strip().lower() if m else None


_PAST_EVENT = re.compile(
    r"\b(?:went|was|were|did|had|saw|watched|finished|fixed|spent|made|took|came|tried|visited|met|ate|"
    r"played|forgot|loved|enjoyed|used to)\b",
    re.I,
)
_PRESENT = re.compile(
    r"\b(?:am|is|are|have|has|do|does|usually|always|every|currently|now|these days)\b|'m\b|'re\b|'ve\b|'s\b",
    re.I,
)


_KEPT_AFTER = (
    r"(?:(?:'s|\s+is)?\s+(?:stays?|staying|remains?|isn't going anywhere|is not going anywhere)|\s+it is)\b"
)
"""'the Volvo stays', 'Mashreq it is' (the old name chosen again)."""
_KEPT_BEFORE = r"\b(?:keeping|kept|keep)\s+(?:the|my|our)\s+(?:\w+\s+)?"


def kept_value(old_text: str, new_text: str) -> str | None:
    """A name of the old statement said to stay ('the Volvo stays for family stuff', 'keeping the
    Volvo'): the new thing comes beside it, not in its place."""
    for value in sorted(v for v in values(old_text) if not v[:1].isdigit()):
        name = re.escape(value)
        if re.search(rf"\b{name}{_KEPT_AFTER}|{_KEPT_BEFORE}{name}\b", new_text, re.I):
            return value
    return None


@memo(CACHE)
def speaker_owned(text: str) -> bool:
    """The statement is about the speaker ('I', 'my', 'we', 'our', or no subject at all: 'living with 4
    others in Clapham'), not about someone or something else."""
    first = _FIRST_SUBJECT.search(text) or _FIRST_OBJECT.search(text) or _NO_SUBJECT.match(text)
    return bool(first) and third_party(text) is None


_SECOND_PERSON = re.compile(r"\b(?:you|your|you're|you've|u|ur)\b", re.I)


@memo(CACHE)
def nobody_elses(text: str) -> bool:
    """The statement is the speaker's own, or about things with no person named as whose ('Gas and electric
    are with British Gas', 'NHS hearing aids, the beige ones'): a chat speaker's word on their own life. Not
    one about the listener ('you look so happy') or another party."""
    return speaker_owned(text) or (third_party(text) is None and not _SECOND_PERSON.search(text))


_NO_SUBJECT = re.compile(
    r"\W*(?:(?:so|just|finally|honestly|currently|already|mostly)\s+)?"
    r"[a-z]{3,}(?:ing|ed)\s+(?!(?:is|was)\b)[a-z]",
    re.I,
)
"""Chat drops the speaker's 'I': a statement that opens on a verb ('delivering for Deliveroo on weekends',
'adopted a kelpie') is the speaker's own (not 'Cooking is fun', 'Amazing, John!')."""


@memo(CACHE)
def is_past_event(text: str) -> bool:
    """A narrated past event ('My coffee went cold again'), not a standing fact that a change could end."""
    return bool(_PAST_EVENT.search(text)) and not _PRESENT.search(text)


@memo(CACHE)
def third_party(text: str) -> str | None:
    """'my brother', 'she': the new statement is about someone else and the speaker is not its subject.
    A party named after the speaker's own 'I' / 'we' is not the subject ('I drove my son to school'), nor one
    beside it ('my wife and I moved'); one named before it is ('my mum's appointment moved, so i'm driving')."""
    first = _FIRST_SUBJECT.search(text)
    text = text[: first.start()] if first else text
    if first and _JOINT.search(text):
        return None
    m = _THIRD_SUBJECT.search(text)
    if m:
        return f"my {m.group('rel').lower()}"
    if m := _BARE_THIRD.search(text):
        return m.group("rel").lower()  # a bare word: 'my dad' in the old statement is the same party
    m2 = _PRONOUN_SUBJECT.search(text)
    if m2 and not (m2.group(0).strip().lower().startswith("you") and _FIRST_OBJECT.search(text)):
        return m2.group(0).strip().lower()
    m3 = _NAMED_OWNER.search(text)
    if m3:
        return m3.group("name").lower()
    return _owner_subject(text)


def _owner_subject(text: str) -> str | None:
    m = _OWNER_SUBJECT.search(text)
    if m is None:
        return None
    if m.group("rel"):
        return f"my {m.group('rel').lower()}"
    name = m.group("name").lower()
    return None if name in STOPWORDS or name.endswith("ly") else name  # 'Finally sold her, the old Corolla'


@memo(CACHE)
def units(text: str) -> Mapping[str, str]:
    """Number -> the thing it counts, where a content word follows it ('35 minutes' -> 'minut', '3 trains'
    -> 'train'); a number followed by no such word ('650 a month') or by a month ('14 June') counts
    anything."""
    out: dict[str, str] = {}
    for m in _NUMBER.finditer(text):
        after = _UNIT.match(text, m.end())
        if after and (word := after.group(1).lower()) not in _NOT_CONTENT and word not in _CALENDAR:
            value = m.group(0).lower().strip("$.,:")
            out[value] = out[value.replace(",", "")] = stem(word)
    return out


_UNIT = re.compile(r"\s?([a-z]{2,})\b", re.I)


def value_kind(value: str) -> str:
    """'ordinal' ('3rd'), 'number' ('45k', '1,650') or 'name': a value replaces one of its own kind."""
    if _ORDINAL.fullmatch(value):
        return "ordinal"
    return "number" if value[:1].isdigit() else "name"


_JOINT = re.compile(rf"(?:\b(?:{_RELATIONS})(?:\s+\w+)?|\b(?-i:[A-Z])[a-z]+)\s*(?:\band|&)\s*$", re.I)
"""A party joined to the speaker's 'I' ('my wife and I', 'mum & i', 'Sarah and I', 'my boyfriend jake and
i') is no other subject; '... across the drive and we're fighting over it' joins no party."""


@memo(CACHE)
def values(text: str) -> frozenset[str]:
    """Numbers, proper names and handles ('gabi_gol10'), lowercased word by word: what differs between two
    values of one attribute."""
    found = {m.group(0).lower().strip("$.,:") for m in _NUMBER.finditer(text)}
    found |= {m.group(0).lower() for m in _HANDLE.finditer(text)}
    for m in _NAME.finditer(text):
        found |= {w.lower().removesuffix("'s") for w in m.group(0).split() if w not in _NOT_VALUES}
    found |= {w.replace(",", "") for w in found}
    return frozenset(v for v in found if v and v not in STOPWORDS and v.rstrip("s") not in _CALENDAR)


_NOT_VALUES = frozenset(("I", "I'm", "I've", "I'd", "I'll"))
_CALENDAR = frozenset(
    "monday tuesday wednesday thursday friday saturday sunday january february march april may june july "
    "august september october november december weekend season spring summer autumn fall winter".split()
)


@memo(CACHE)
def masked(text: str) -> str:
    """The statement with its values replaced, so similarity measures the attribute, not the value."""
    text = _NUMBER.sub("some", normalise(text))
    return _NAME.sub(lambda m: m.group(0) if m.group(0) in ("I", "I'm", "I've", "I'd") else "someone", text)


@memo(CACHE)
def content_stems(text: str) -> Mapping[str, str]:
    """Stem -> word for the head content words (no stopwords, no filler, no relation words): the candidate
    attribute nouns and verbs. A word directly followed by another content word is a modifier ('phone' in
    'phone battery') and left out: only the compound's head ('battery') names the attribute."""
    words = _words(text)
    content = [_is_content(w) for w in words]
    out: dict[str, str] = {}
    for i, w in enumerate(words):
        if content[i] and not (i + 1 < len(words) and content[i + 1]):
            out.setdefault(_stem(w), w)
    return out


@memo(CACHE)
def all_stems(text: str) -> frozenset[str]:
    """Every content word's stem, modifiers too ('golf' in 'a black golf gti'): what the text mentions."""
    return frozenset(_stem(w) for w in _words(text) if _is_content(w))


def _words(text: str) -> list[str]:
    """The normalised text's words, lower case, without edge quotes or hyphens (punctuation marks kept)."""
    return [w.strip("'-") for w in _WORD_OR_MARK.findall(normalise(text).lower())]


def _stem(word: str) -> str:
    """engine.text.stem, with a doubled final consonant undone: 'shopping' and 'shop' share 'shop'."""
    s = stem(word)
    return s[:-1] if s != word and len(s) > 3 and s[-1] == s[-2] and s[-1] not in "aeiouls" else s


def _is_content(w: str) -> bool:
    return len(w) > 2 and w not in _NOT_CONTENT and w.rstrip("s") not in _CALENDAR


_NOT_CONTENT = STOPWORDS | _GENERIC | _RELATION_WORDS
