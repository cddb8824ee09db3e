"""Normalised values and topics for engine.annotate.facts.rules, so that restating a fact in other words is no change.

'$1,200' and '1200 dollars' are both '1200'; 'NYC' is 'new york'; '3 pm' is '3pm'; 'my new favourite food'
and 'favorite foods' are the same topic. Pure functions of the matched text.
"""

from __future__ import annotations

import re

from engine.annotate.facts.frames import Frame, words

_EDGE = words(
    "a an the my our his her their now still currently officially finally honestly definitely "
    "probably really actually just also again here there too basically"
)
_ALIASES = {
    "nyc": "new york",
    "ny": "new york",
    "new york city": "new york",
    "sf": "san francisco",
    "la": "los angeles",
    "philly": "philadelphia",
    "dc": "washington",
    "manager": "boss",
    "supervisor": "boss",
    "colour": "color",
    "film": "movie",
    "veggie": "vegetarian",
    "pescetarian": "pescatarian",
    "ketogenic": "keto",
    "meat": "omnivore",
    "broke up": "single",
    "split up": "single",
    "breaking up": "single",
    "called it quits": "single",
    "dating someone": "in a relationship",
    "dating somebody": "in a relationship",
    "seeing someone": "in a relationship",
    "hits the gym": "go to the gym",
    "hit the gym": "go to the gym",
    "puppy": "dog",
    "pup": "dog",
    "kitten": "cat",
    "kitty": "cat",
    "bunny": "rabbit",
    "tabby": "cat",
}
_DOGS = words("retriever labrador lab poodle beagle terrier bulldog husky corgi dachshund")
_DIET_GROUPS = {
    diet: group
    for group, diets in {
        "diet": "vegan vegetarian pescatarian plant-based carnivore omnivore flexitarian",
        "diet plan": "keto paleo low-carb whole30",
        "restriction": "gluten-free dairy-free lactose-free nut-free",
        "religious diet": "halal kosher",
    }.items()
    for diet in diets.split()
}
_GENERIC_PLACES = words(
    "place apartment flat house home condo studio townhouse loft neighborhood neighbourhood "
    "area suburb suburbs town city building"
)
_GENERIC_MODIFIERS = words(
    "weekly usual regular next upcoming monthly annual yearly total current new old big first "
    "today's tomorrow's tonight's usual daily big"
)
_CATEGORIES = {
    w: cat
    for cat, ws in {
        "drink": "coffee tea espresso latte cappuccino matcha decaf juice soda water beer wine kombucha",
        "seat": "aisle window seat",
        "time of day": "morning evening night afternoon",
        "contact": "email text call phone",
        "phone": "iphone android pixel samsung",
        "computer": "mac macbook windows linux pc",
        "workplace": "home office remote",
        "transport": "bike bus train subway car",
    }.items()
    for w in ws.split()
}
_VERBS = words(
    "work live eat drink read travel study run walk drive cook shop sleep watch listen play stay go "
    "commute bike swim"
)
_NUMBER_WORDS = {
    w: str(i)
    for i, w in enumerate(
        ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
    )
}


def attribute_and_value(frame: Frame, m: re.Match[str], raw: str) -> tuple[str, str]:
    """The frame's attribute with its topic filled in, and the normalised value ('' if unusable)."""
    value = normalise(frame.kind, raw, m)
    attribute = frame.attribute
    if "{what}" in attribute:
        attribute = attribute.replace("{what}", topic(m.group("what")))
    if "{dom}" in attribute:
        attribute = attribute.replace("{dom}", domain(value))
    if frame.kind == "diet":
        attribute = _DIET_GROUPS.get(value, "diet")
    if attribute == "residence" and value[:1].isdigit():
        attribute = "address"  # "moved to 45 Pine Ave" is an address, not a city
    return attribute, value


def normalise(kind: str, raw: str, m: re.Match[str]) -> str:
    if not raw:
        return ""
    if kind == "number":
        return number(raw)
    if kind == "phone":
        return re.sub(r"\D", "", raw)[-10:]
    if kind == "email":
        return raw.lower()
    if kind == "time":
        return _time(raw)
    if kind == "pet":
        return _pet(raw, m.group("name") if "name" in m.re.groupindex else None)
    value = _alias(clean(raw))
    return _place(value) if kind == "place" else value


def clean(raw: str) -> str:
    tokens = re.sub(r"[\"'`]+(?!s\b)|\s+", " ", raw.lower()).split()
    while tokens and tokens[0] in _EDGE:
        tokens = tokens[1:]
    while tokens and tokens[-1] in _EDGE:
        tokens = tokens[:-1]
    text = " ".join(tokens)
    return re.sub(r"\s+(?:inc|llc|corp|ltd|co|company)\.?$", "", text)


def display(raw: str) -> str:
    """The value as written, minus edge fillers: 'Honestly the Celtics' -> 'Celtics'."""
    tokens = raw.split()
    while tokens and tokens[0].lower() in _EDGE:
        tokens = tokens[1:]
    while tokens and tokens[-1].lower() in _EDGE:
        tokens = tokens[:-1]
    return " ".join(tokens) or raw


def _alias(value: str) -> str:
    return _ALIASES.get(value, value)


def _place(value: str) -> str:
    """'a bigger apartment in Austin' -> 'austin'; a bare 'new apartment' names no place, so ''."""
    m = re.match(r"(?:[\w'-]+\s+){0,3}?(?:" + "|".join(_GENERIC_PLACES) + r")\s+in\s+(.+)$", value)
    if m:
        return _alias(clean(m.group(1)))
    value = re.sub(r"^(?:the\s+)?city\s+of\s+", "", value)
    return "" if value.split()[-1:] and value.split()[-1] in _GENERIC_PLACES else value


def number(raw: str) -> str:
    text = raw.lower().replace(",", "")
    if text in _NUMBER_WORDS:
        return _NUMBER_WORDS[text]
    m = re.search(r"\d+(?:\.\d+)?", text)
    if not m:
        return ""
    amount = float(m.group()) * (1000 if re.search(r"\d\s?k\b", text) else 1)
    return f"{amount:g}"


def _time(raw: str) -> str:
    text = clean(raw)
    text = re.sub(r"^(?:on|at|for|to|until|till)\s+", "", text)
    text = re.sub(r"(\d)(?::00)?\s*(am|pm)\b", r"\1\2", text)
    return re.sub(r"\b(?:on|at|the)\s+", "", text).strip()


def _pet(raw: str, name: str | None) -> str:
    *_, species = clean(raw).split() or [""]
    species = _singular(species)
    species = "dog" if species in _DOGS else _ALIASES.get(species, species)
    return f"{species} {name.lower()}" if name else species


def topic(what: str) -> str:
    """'weekly team meetings' -> 'team meeting'; 'favorite colour' topics -> 'color'."""
    tokens = [t for t in clean(what).split() if t not in _GENERIC_MODIFIERS] or clean(what).split()
    if not tokens:
        return ""
    tokens[-1] = _singular(tokens[-1])
    if tokens[0].endswith("s") and len(tokens) > 1 and tokens[0][:-1] in ("wake", "get", "work", "leave"):
        tokens[0] = tokens[0][:-1]  # "wakes up" -> "wake up"
    text = " ".join(tokens).replace("goes ", "go ").replace("finishes ", "finish ").replace("haves ", "have ")
    return _alias(text)


def domain(value: str) -> str:
    """What a preference is about: 'window seats' -> 'seat', 'tea' -> 'drink', 'working from home' -> 'work'."""
    tokens = value.split()
    if not tokens:
        return ""
    first = tokens[0]
    if first in _VERBS or (first.endswith("ing") and len(first) > 5 and first not in _CATEGORIES):
        return _CATEGORIES.get(_verb_root(first), _verb_root(first))  # "texting" is about contact
    head = _singular(tokens[-1])
    return _CATEGORIES.get(head, head)


def _verb_root(word: str) -> str:
    if word.endswith("ing"):
        root = word[:-3]
        return root[:-1] if len(root) > 2 and root[-1] == root[-2] else root
    return word[:-1] if word.endswith("e") else word


def _singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if re.search(r"(?:ss|x|ch|sh)es$", word):
        return word[:-2]
    return word[:-1] if word.endswith("s") and not word.endswith("ss") and len(word) > 3 else word
