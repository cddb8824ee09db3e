"""Building blocks of the frame lexicon (facts.frames): value patterns, value filters, the Frame type.

Data only, plus the small value filters the frames name. Every frame is one regular expression over a
clause with a named group `value` (optional in frames that end a fact: "I quit my job"), and optionally
`what` (the topic: which meeting, which favourite) and `owner` (a possessor inside the match: "call *me*
at", "*my* flight"). The subject is otherwise whoever the words before the match name (engine.annotate.facts.rules).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass


def words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Words that end a value: "I moved to Seattle *last* month", "I work at Google *with* ...".
_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
_STOPS = (
    r"since|because|as of|for|with|last|next|this|ago|now|anymore|any more|instead|again|too|as well|recently|"
    r"after|before|when|where|which|who|so|and|but|yesterday|today|tomorrow|though|although|right now|"
    r"these days|nowadays|starting|effective|from now on|at the moment|forever|permanently|already|lately|"
    r"over|during|throughout|around|near|close to|next to|full[- ]time|part[- ]time|on (?:the )?weekends?|"
    r"is|are|was|were|has|have|had|will|would|can|could|should|"
    rf"every|in (?:{_MONTHS}|\d{{4}}|the (?:spring|summer|fall|autumn|winter))|a (?:few|couple|while)|"
    r"(?:a|an|one|two|three|four|five|six|\d+)\s+(?:days?|weeks?|months?|years?|hours?|minutes?)\s+ago"
)
_END = r"\s*[,;:.!?()]|\s*$"
NAME = rf"(?P<value>[^,;:.!?()]+?)(?=\s+(?:{_STOPS})\b|{_END})"
ORG = rf"(?P<value>[^,;:.!?()]+?)(?=\s+(?:{_STOPS}|in|as|on|at)\b|{_END})"
ROLE = rf"(?P<value>[^,;:.!?()]+?)(?=\s+(?:{_STOPS}|at|in|on|for)\b|{_END})"
_OCCASION = r"(?:in|at|on|during|for)\s+(?:the\s+)?(?:mornings?|evenings?|nights?|weekends?|weekdays|flights?|trips?|winter|summer)"  # noqa: E501
PREF = rf"(?P<value>[^,;:.!?()]+?)(?=\s+(?:{_STOPS}|over|to|than|rather|{_OCCASION})\b|{_END})"
TIME = (
    r"(?P<value>[^,;.!?()]+?)(?=\s+(?:because|since|so|and|but|due to|instead|now|if|as|for some reason|"
    r"thanks to|which|this time)\b|\s*[,;.!?()]|\s*$)"
)
NUM = (
    r"(?P<value>[$€£]?\s?\d[\d,]*(?:\.\d+)?\s?(?:k\b|%|percent\b|dollars\b|bucks\b|euros\b|pounds\b|lbs?\b|"
    r"kg\b|kilos\b|miles\b|km\b|minutes\b|mins\b|hours\b)?)"
)
PHONE = r"(?P<value>\+?\(?\d[\d\s().-]{5,}\d)"
EMAIL = r"(?P<value>[\w.+-]+@[\w-]+(?:\.[\w-]+)+)"

# Words that are never the noun in front of "is $1200" ("my rent is", not "it is").
_FUNC = (
    r"(?!(?:is|are|was|were|be|been|has|have|had|the|a|an|my|our|your|his|her|their|its|this|that|and|"
    r"but|so|or|i|we|you|he|she|they|it|me|now|also|just|still|not|to|of|in|on|at|for|with|from|do|does|"
    r"did|will|got|new)\b)"
)
NOUN = rf"(?P<what>(?:{_FUNC}[a-z-]+\s+){{0,2}}?{_FUNC}[a-z-]+)(?!')"
EVENTS = (
    "meeting|appointment|dinner|lunch|breakfast|brunch|flight|call|interview|party|wedding|reunion|game|"
    "concert|class|lesson|exam|test|session|presentation|deadline|trip|visit|checkup|check-up|surgery|"
    "reservation|standup|stand-up|review|demo|date|match|recital|ceremony|conference|workshop|shift|launch|"
    "meetup|playdate|tournament|rehearsal|practice|webinar|hearing|consultation|delivery|pickup|showing|"
    "closing|tour|graduation|race|marathon|seminar|lecture|sync|retreat|offsite|kickoff|cleaning|haircut|"
    "move|vacation|holiday|sleepover|shower|exhibition|premiere|screening|gig|show"
)
_EV_OWNER = r"\b(?:(?P<owner>the|my|our|his|her|their|your|this|that|[a-z]+'s)\s+)?"
EVENT = (
    rf"{_EV_OWNER}(?P<what>(?:{_FUNC}[a-z0-9-]+\s+){{0,2}}?(?:{EVENTS})s?)\b(?!')"
    r"(?:\s+(?:to|with|for|from|at|in)\s+(?:[\w']+\s+){0,3}?[\w']+)??"
)
PETS = (
    r"(?:dog|puppy|pup|cat|kitten|kitty|hamster|rabbit|bunny|parrot|bird|budgie|fish|goldfish|turtle|"
    r"tortoise|snake|lizard|gecko|horse|pony|guinea\s+pig|ferret|chinchilla|retriever|labrador|lab|poodle|"
    r"beagle|terrier|bulldog|husky|corgi|dachshund|tabby|iguana|hedgehog|rat|mouse)(?:s|es)?"
)
PET = rf"(?P<value>(?:[a-z]+\s+)?{PETS})\b(?:\s+(?:named|called)\s+(?P<name>[a-z]+))?"
DIETS = (
    "vegan|vegetarian|veggie|pescatarian|pescetarian|keto|ketogenic|paleo|gluten-free|dairy-free|"
    "lactose-free|nut-free|plant-based|carnivore|omnivore|flexitarian|low-carb|whole30|halal|kosher"
)
OCCUPATIONS = words(
    "engineer developer programmer designer manager director analyst scientist researcher consultant accountant "
    "lawyer attorney doctor physician surgeon nurse dentist pharmacist therapist teacher professor lecturer tutor "
    "student chef cook baker barista bartender waiter waitress writer journalist editor artist musician "
    "photographer architect electrician plumber carpenter mechanic pilot firefighter paramedic veterinarian vet "
    "librarian cashier clerk recruiter intern ceo cto cfo founder co-founder cofounder freelancer contractor "
    "administrator coordinator specialist technician lead vp president paralegal receptionist realtor banker "
    "economist biologist chemist physicist statistician entrepreneur retiree marketer salesman saleswoman "
    "translator dietitian nutritionist counselor counsellor principal officer midwife caregiver hairdresser"
)
_OCC = "|".join(sorted(OCCUPATIONS, key=len, reverse=True))
VEHICLES = words(
    "car truck van suv minivan pickup motorcycle motorbike scooter jeep toyota honda ford tesla bmw audi subaru "
    "mazda chevy chevrolet nissan hyundai kia volkswagen vw volvo mercedes lexus porsche prius civic corolla "
    "camry accord outback forester rav4 wrangler mustang f-150 mini cooper golf jetta leaf bolt model"
)
SCHOOL_WORDS = words("university college school academy institute polytechnic conservatory uni univ mit")
_BAD_FIRST = words(
    "my his her their our your it them him me us a an with by for to at in on some any this that "
    "around up out well back off into about the kids games"
)


def _raw(m: re.Match[str]) -> str:
    return (m.group("value") or "").strip()


def is_proper(m: re.Match[str]) -> bool:
    raw = _raw(m)
    return raw[:1].isupper() and not (words(raw.lower()) & SCHOOL_WORDS)


def is_org(m: re.Match[str]) -> bool:
    return _raw(m).split()[0].lower() not in _BAD_FIRST - {"the", "a", "an"}


def is_school(m: re.Match[str]) -> bool:
    return bool(words(_raw(m).lower()) & SCHOOL_WORDS)


def is_named_school(m: re.Match[str]) -> bool:
    return is_school(m) or _raw(m)[:1].isupper()


def is_vehicle(m: re.Match[str]) -> bool:
    raw = _raw(m).lower()
    return bool((words(raw) | words(raw.replace("-", " "))) & VEHICLES)


_NOT_ACTIVITIES = words(
    "hard well ever sometimes often together again more less something anything how what "
    "professionally lately around it"
)


def is_activity(m: re.Match[str]) -> bool:
    first = _raw(m).split()[0].lower()
    return first not in _BAD_FIRST and first not in _NOT_ACTIVITIES and not first.endswith("ly")


def is_hobby_ended(m: re.Match[str]) -> bool:
    return is_activity(m) and not _raw(m)[:1].isupper()


_TIMEISH = re.compile(
    rf"\d|\b(?:mon|tues|wednes|thurs|fri|satur|sun)day|\b(?:{_MONTHS}|noon|midnight|tonight|"
    r"tomorrow|week|weekend|morning|afternoon|evening|night|am|pm|later|earlier)\b",
    re.I,
)


def is_time(m: re.Match[str]) -> bool:
    return bool(_TIMEISH.search(_raw(m)))


def is_place(m: re.Match[str]) -> bool:
    """'moved to Seattle', not 'moved to Friday' (a rescheduled event without its noun)."""
    return not _TIMEISH.search(re.sub(r"\d", "", _raw(m)))


_FREE_IDENTITY = words(
    "username handle password wifi zip zipcode postcode birthday anniversary blood time timezone license shoe"
)


def is_identity(m: re.Match[str]) -> bool:
    """Names of people and businesses are capitalised ('my gym is Equinox', not 'the gym is awesome')."""
    return m.group("what").lower().split()[0] in _FREE_IDENTITY or _raw(m)[:1].isupper()


def is_proper_place(m: re.Match[str]) -> bool:
    return _raw(m)[:1].isupper() and is_place(m)


@dataclass(frozen=True, slots=True)
class Frame:
    """One way of stating an attribute. `attribute` may name `{what}` (the topic group) or `{dom}`."""

    attribute: str
    pattern: re.Pattern[str]
    kind: str = "text"
    """How the value is normalised: text, place, time, number, phone, email, pet, diet, status."""
    ends: bool = False
    """The frame itself ends the fact ("I quit my job", "the dinner is cancelled")."""
    change: bool = False
    """The frame reports a change, so past tense is still news ("the meeting *was* moved to Friday")."""
    check: Callable[[re.Match[str]], bool] | None = None
    needs_subject: bool = False
    """No elliptical 'I': 'A fellow chef helped' is not the speaker saying they are a chef."""
    trigger: re.Pattern[str] | None = None
    """A cheap search that must succeed before the (slower) pattern is tried."""


_HAS_EVENT = re.compile(rf"\b(?:{EVENTS})", re.I)
_HAS_NUMBER = re.compile(r"\d|\b(?:two|three|four|five|six|seven|eight|nine|ten)\b", re.I)


def _f(
    attribute: str,
    pattern: str,
    kind: str = "text",
    ends: bool = False,
    change: bool = False,
    check: Callable[[re.Match[str]], bool] | None = None,
    needs_subject: bool = False,
) -> Frame:
    trigger = _HAS_EVENT if attribute.startswith("when") else _HAS_NUMBER if kind == "number" else None
    return Frame(attribute, re.compile(pattern, re.I), kind, ends, change, check, needs_subject, trigger)
