"""Step 4 of the decision (engine.annotate.facts.decision): does the newer statement, about the same
attribute, report a change? An ending cue that names the old thing, the old attribute word renewed or
negated, a change cue (unless every old value is said again: a restatement), or a value replaced by one of
its kind. A cue that passes ('went down for the whole of Sunday', 'dropped again') changes nothing, nor does a
rise or fall ('went up 6.7%') where the old statement measured nothing."""

from __future__ import annotations

import re
from collections.abc import Iterable

import engine.annotate.facts.cues as cues
from engine.annotate.facts.attribute import says

__all__ = ["change", "ended", "replaced"]


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


def change(old_text: str, new_text: str) -> str | None:
    """The change the new statement reports about the old one's attribute ('ending cue 'sold'', 'value
    '1400' -> '1650''), or None: decision step 4, once both are known to share an attribute."""
    old_values, new_values = cues.values(old_text), cues.values(new_text)
    kept = {v for v in old_values if says(new_text, v)}
    said, new_text = new_text, cues.masked(new_text)  # a cue inside a name ('New York') is no cue
    if ending := cues.first_match(cues.ENDING, new_text):
        return _ending(old_text, said, ending, bool(kept or not old_values or not new_values))
    if cue := cues.renewed(old_text, new_text):
        return f"attribute renewed '{cue}'"
    if cue := cues.negated_attribute(old_text, new_text):
        return f"attribute negated '{cue}'"
    cue = cues.first_match(cues.CHANGE, new_text)
    if cue and _no_change(old_text, said, cue):
        cue = None
    if old_values and kept == old_values:  # every value of the old statement is said again
        # ... beside a new one of its kind and a change cue: 'Seoul instead of Tokyo'
        came = _replacing(kept, new_values - old_values, old_text, said)
        return f"value '{sorted(kept)[0]}' -> '{came[0]}', change cue '{cue}'" if cue and came else None
    if cue := cue or cues.first_match(cues.RETURN, new_text):
        return f"change cue '{cue}'"
    if cues.first_match(cues.EPISODE, new_text):
        return None  # 'I went to bed at 2am last night': an episode, not a new standing value
    gone = sorted(old_values - kept)
    came = _replacing(gone, new_values - old_values, old_text, said)
    if gone and came:
        return f"value '{gone[0]}' -> '{came[0]}'"
    return None


_RECALLED = frozenset(("used to",))
"""A cue that looks back at a former state ('I used to have a dog back in Michigan'), not at a change."""
_CLAUSE_END = re.compile(r"[,.;:!?(]|\s(?:and|but|so|then)\s")


def ended(old_text: str, new_text: str) -> str | None:
    """An ending cue whose own clause names the old thing right after it ('closed the Remitly account',
    'we lost Bramble in the spring', 'gave up the hot desk'): a change read even in a long statement, where
    a shared word alone is coincidence. Words past a comma or an 'and' belong to the next clause ('cancelled
    the order, and TalkTalk agreed ...'). Not an ending the old statement told already ('lost my job
    yesterday' / 'tough going since I lost my job'), nor a former state ('used to')."""
    said = cues.masked(new_text)
    cue = cues.first_match(cues.ENDING, said)
    if cue is None or cues.POSTFIX_ENDING.fullmatch(cue) or cue.lower() in _RECALLED:
        return None
    if cues.first_match(cues.ENDING, cues.masked(old_text)) == cue:  # the ending told again
        return None
    after = _CLAUSE_END.split(new_text.lower().partition(cue.lower())[2], maxsplit=1)[0].split()[:4]
    if not after or _PASSING.match(" ".join(after)):
        return None
    old_words = cues.content_stems(old_text).keys() | {v.lower() for v in cues.values(old_text)}
    named = cues.content_stems(" ".join(after)).keys() | {w.strip("'\"") for w in after}
    return f"ending cue '{cue}' on the old thing" if named & old_words else None


def _replacing(
    old_values: Iterable[str], new_values: Iterable[str], old_text: str, new_text: str
) -> list[str]:
    """The new values of a kind the old ones have: a name replaces a name, a number a number of the same
    thing ('the Fiido barely lasts 30km now' measures the bike; 'down again, 3rd time this month' replaces
    no '150'; '3 trains' no '35 minutes')."""
    old_units, new_units = cues.units(old_text), cues.units(new_text)
    kinds = {(cues.value_kind(v), old_units.get(v)) for v in old_values}

    def fits(value: str) -> bool:
        kind, unit = cues.value_kind(value), new_units.get(value)
        return any(kind == k and (unit is None or u is None or unit == u) for k, u in kinds)

    return sorted(v for v in new_values if fits(v))


def replaced(old_text: str, new_text: str) -> bool:
    """A number of the old statement gone and one of the same thing in its place ('£1,400' / '£1,650 from
    July'). Not a name: a day in the old thing's life names other things ('took the Serena in today, so the
    trip to Nikko ...')."""
    old_values, new_values = cues.values(old_text), cues.values(new_text)
    gone = [v for v in old_values if cues.value_kind(v) == "number" and not says(new_text, v)]
    return bool(gone and _replacing(gone, new_values - old_values, old_text, new_text))


_PASSING = re.compile(
    r"\W*(?:\w+\W+){0,2}?(?:again\b|for (?:(?:an?|the|a few|\d+|one|two|three|half an?)\s+)?"
    r"(?:(?:whole|entire|rest|best part|most)\s+(?:of\s+)?(?:the\s+)?)?"
    r"(?:second|minute|hour|day|night|morning|afternoon|evening|weekend|(?:mon|tues|wednes|thurs|fri|satur|sun)day)s?\b)"
)
_AMOUNT_CUES = frozenset(("went up", "went down", "down to"))
_AMOUNTED = re.compile(
    r"\d|\b(?:two|three|four|five|six|seven|eight|nine|ten|twelve|twenty|fifty|hundred|thousand|half|"
    r"dozen|couple|grand|quid|bucks)\b",
    re.I,
)


def _no_change(old_text: str, new_text: str, cue: str) -> bool:
    """A change cue that passes ('Virgin went down for the whole of Sunday', 'moved again') or a rise or
    fall where the old statement measured nothing ('I get a teachers' pension' / 'pension went up 6.7%'):
    news about the old thing, not a new value of what it said."""
    if _PASSING.match(new_text.lower().partition(cue)[2]):
        return True
    return cue.lower() in _AMOUNT_CUES and not _AMOUNTED.search(old_text)


def _ending(old_text: str, new_text: str, cue: str, names_old: bool) -> str | None:
    """An ending cue ends the old fact when it names the old thing: a cue that follows what ended ('the
    Jeep's gone') by the words before it; others by an old value said again, or the words after the cue
    ('not in Paris anymore' ends Paris, not New York; 'shelved the budgeting app'). One that recurs or
    lasts a while ('the fibre dropped again', 'dropped out for an hour') ends nothing."""
    if _PASSING.match(new_text.lower().partition(cue)[2]):
        return None
    if cues.POSTFIX_ENDING.fullmatch(cue):
        names_old = _ended_before(old_text, new_text, cue)
    else:
        names_old = names_old or _ends_old_thing(old_text, cues.masked(new_text), cue)
    return f"ending cue '{cue}'" if names_old else None
