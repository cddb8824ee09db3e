"""The lexicon behind facts.rules: attribute frames ("live in X", "my rent is X", "the meeting moved to X").

Data only: every frame is one regular expression over a clause with a named group `value` (optional in
frames that end a fact: "I quit my job"), and optionally `what` (the topic) and `owner` (a possessor inside
the match). The building blocks (value patterns, filters, `Frame`) are in facts.patterns.
"""

from __future__ import annotations

from engine.annotate.facts.patterns import (  # noqa: F401 - re-exported: Frame, words
    _OCC,
    DIETS,
    EMAIL,
    EVENT,
    NAME,
    NOUN,
    NUM,
    ORG,
    PET,
    PETS,
    PHONE,
    PREF,
    ROLE,
    TIME,
    Frame,
    _f,
    is_activity,
    is_hobby_ended,
    is_identity,
    is_named_school,
    is_org,
    is_place,
    is_proper,
    is_proper_place,
    is_school,
    is_time,
    is_vehicle,
    words,
)

_BE = r"(?:is|'s|are|'re|was|will\s+be)"
_MOVE = (
    r"(?:moved|rescheduled|pushed(?:\s+back)?|postponed|changed|bumped|shifted|delayed|switched|moved\s+up)"
)

FRAMES: tuple[Frame, ...] = (
    # --- where someone lives --------------------------------------------------
    _f("residence", rf"\b(?:live|lives|living|lived|reside|resides|residing|resided)\s+in\s+{NAME}", "place"),
    _f(
        "residence",
        r"\b(?:moved|moving|move|relocated|relocating|relocate)(?:\s+(?:back|out|over|away|down|up|"
        r"across\s+the\s+country))?(?:\s+from\s+[\w' -]+?)?\s+to\s+" + NAME,
        "place",
        change=True,
        check=is_place,
    ),
    _f("residence", rf"\bbased\s+(?:in|out\s+of)\s+{NAME}", "place"),
    _f("residence", rf"\bhome\s+(?:is|'s)\s+(?:now\s+)?(?:in\s+)?{NAME}", "place", check=is_proper_place),
    _f("residence", rf"\bmoved\s+(?:out\s+of|away\s+from)\s+{NAME}", "place", ends=True),
    _f(
        "hometown",
        rf"\b(?:'m|am|is|'s|are|come|comes)\s+(?:originally\s+)?from\s+{NAME}",
        "place",
        check=is_proper_place,
    ),
    _f("address", rf"\blive[sd]?\s+at\s+(?=\d){NAME}"),
    _f("address", rf"\baddress\s+{_BE}\s+(?:now\s+)?{NAME}"),
    # --- work -----------------------------------------------------------------------
    _f(
        "employer",
        r"\b(?:work|works|working|worked)\s+(?:(?:[a-z]+ly|full[- ]time|part[- ]time)\s+)?(?:at|for)\s+"
        + ORG,
        check=is_org,
    ),
    _f("employer", rf"\bemployed\s+(?:at|by)\s+{ORG}", check=is_org),
    _f(
        "employer",
        rf"\b(?:(?:a|my|the|new|first|dream|current)\s+)*(?:job|position|gig)\s+(?:at|with)\s+{ORG}",
        check=is_org,
    ),
    _f(
        "employer",
        r"\b(?:joined|joining|start(?:ed|ing)?\s+(?:working\s+)?at|hired\s+(?:at|by)|"
        rf"(?:accepted|took)\s+(?:an?\s+)?(?:job\s+)?offer\s+(?:from|at))\s+{ORG}",
        change=True,
        check=is_proper,
    ),
    _f("employer", r"\b(?:work(?:s|ing|ed)?|job)\s+as\s+an?\s+(?:[\w-]+\s+){0,3}?at\s+" + ORG, check=is_org),
    _f(
        "employer",
        r"\b(?:quit|left|leaving|resigned\s+from|retired\s+from|(?:laid\s+off|let\s+go|fired)\s+"
        rf"(?:from|by))\s+{ORG}",
        ends=True,
        check=is_proper,
    ),
    _f(
        "employer",
        rf"\b(?:quit|left|lost|leaving|quitting)\s+(?:my|the|his|her)\s+job\b(?:\s+(?:at|with)\s+{ORG})?",
        ends=True,
    ),
    _f("employer", r"\b(?:laid\s+off|retired|fired)\b(?!\s+(?:from|by|up)\b)", ends=True),
    _f(
        "role",
        rf"\b(?:quit|left|lost|leaving|quitting)\s+(?:my|the|his|her)\s+(?:job|position|role)\s+as\s+"
        rf"(?:an?\s+)?{ROLE}",
        ends=True,
    ),
    _f("role", rf"\b(?:work|works|working|worked)\s+as\s+(?:an?\s+)?{ROLE}"),
    _f("role", rf"\b(?:job|role|position|career)\s+as\s+(?:an?\s+)?{ROLE}"),
    _f("role", rf"\bpromoted\s+to\s+(?:an?\s+|the\s+)?{ROLE}", change=True),
    _f("role", rf"\b(?:job\s+title|title|role|position)\s+(?:is|'s)\s+(?:now\s+)?(?:an?\s+)?{ROLE}"),
    _f(
        "role",
        rf"\ban?\s+(?P<value>(?:[\w-]+\s+){{0,2}}?(?:{_OCC}))\b(?!\s+(?:friend|who|named|and|'s)\b)",
        needs_subject=True,
    ),
    # --- relationships ------------------------------------------------------------
    _f(
        "relationship",
        r"\b(?P<value>single|married|engaged|divorced|separated|widowed)\b(?=\s+(?:to|now|for|"
        r"since|again|last|this|in|and|but|anymore|any more|yet|recently|with|officially)\b|\s*[,;.!?]|\s*$)",
        "status",
    ),
    _f(
        "relationship",
        r"\b(?P<value>in\s+a\s+(?:serious\s+|new\s+|long-distance\s+)?relationship|dating\s+"
        r"(?:someone|somebody)|seeing\s+someone)\b",
        "status",
    ),
    _f(
        "relationship",
        r"\b(?P<value>broke\s+up|split\s+up|breaking\s+up|called\s+it\s+quits)\b(?=\s+(?:with|last|"
        r"this|a|in|on|after|yesterday|recently|for)\b|\s*[,;.!?]|\s*$)",
        "status",
        change=True,
    ),
    _f(
        "partner",
        r"\b(?:girlfriend|boyfriend|partner|wife|husband|fianc[eé]e?|spouse)(?:'s\s+name)?\s+(?:is|'s)"
        rf"\s+{NAME}",
        check=is_proper,
    ),
    _f(
        "partner",
        rf"\b(?:dating|seeing|going\s+out\s+with|engaged\s+to|married\s+to)\s+{NAME}",
        check=is_proper,
    ),
    # --- contact details and identity ------------------------------------------------
    _f(
        "phone",
        r"\b(?:phone|cell|mobile|number)\s+(?:number\s+)?(?:is|'s|changed\s+to)\s+(?:now\s+)?" + PHONE,
        "phone",
    ),
    _f("phone", rf"\b(?:call|text|reach|contact)\s+(?P<owner>me)\s+(?:at|on)\s+{PHONE}", "phone"),
    _f("email", rf"\bemail(?:\s+address)?\s+(?:is|'s|changed\s+to)\s+(?:now\s+)?{EMAIL}", "email"),
    _f("email", rf"\b(?:email|reach|contact|write\s+to)\s+(?P<owner>me)\s+at\s+{EMAIL}", "email"),
    _f(
        "{what}",
        r"\b(?P<what>name|nickname|username|handle|password|wifi\s+password|zip\s*code|postcode|doctor|"
        r"dentist|therapist|boss|manager|supervisor|landlord|gym|bank|carrier|internet\s+provider|insurer|vet|"
        r"barber|hairdresser|stylist|coach|trainer|pharmacy|birthday|anniversary|blood\s+type|time\s*zone|"
        rf"license\s+plate|shoe\s+size)\s+(?:is|'s|will\s+be|changed\s+to)\s+(?:(?:now|officially)\s+)*{NAME}",
        check=is_identity,
    ),
    _f("name", rf"\b(?:call|calls)\s+(?P<owner>me)\s+{NAME}", check=is_proper),
    _f("name", rf"\bgo(?:es)?\s+by\s+{NAME}", check=is_proper),
    _f(
        "age",
        r"\b(?:am|'m|is|'s|are|turned|turning|turn|be)\s+(?:(?:now|almost|nearly|officially|just)\s+)*"
        r"(?P<value>\d{1,3})(?:\s+years?\s+old\b|(?=\s*[,;.!?]|\s*$)|(?=\s+(?:now|today|this|next)\b))",
        "number",
    ),
    _f("age", r"\bage\s+(?:is|'s)\s+(?P<value>\d{1,3})\b", "number"),
    # --- favourites and preferences ---------------------------------------------------
    _f(
        "favourite: {what}",
        r"\bfavou?rite\s+(?P<what>[a-z]+(?:\s+[a-z]+){0,2}?)\s+(?:is|are|'s|has\s+to\s+be|"
        rf"would\s+be)\s+(?:(?:now|still|definitely|probably|easily|honestly)\s+)*{NAME}",
    ),
    _f(
        "favourite: {what}",
        r"^\s*(?P<value>[\w' -]+?)\s+(?:is|are|'s)\s+(?:now\s+|still\s+)?(?P<owner>my|our|"
        r"his|her|their|[a-z]+'s)\s+(?:new\s+)?(?:all-time\s+)?favou?rite\s+(?P<what>[a-z]+(?:\s+[a-z]+)?)",
    ),
    _f("preference: {dom}", rf"\bprefer(?:s|red)?\s+(?:to\s+)?{PREF}"),
    _f(
        "preference: {dom}",
        r"\bswitch(?:ed|ing)?\s+(?:over\s+)?(?:from\s+[\w' -]+?\s+)?to\s+" + PREF,
        change=True,
    ),
    # --- vehicle and diet -----------------------------------------------------------
    _f(
        "vehicle",
        rf"\b(?:drive|drives|driving|drove)\s+(?:an?\s+|the\s+|my\s+)?(?:new\s+|used\s+|old\s+)?{NAME}",
        check=is_vehicle,
    ),
    _f("vehicle", rf"\b(?:car|ride|truck)\s+(?:is|'s)\s+(?:now\s+)?an?\s+{NAME}", check=is_vehicle),
    _f(
        "vehicle",
        r"\b(?:bought|got|purchased|leased|traded\s+(?:it\s+|mine\s+)?in\s+for|upgraded\s+to)\s+"
        rf"(?:myself\s+)?an?\s+(?:new\s+|used\s+|brand\s+new\s+)?{NAME}",
        change=True,
        check=is_vehicle,
    ),
    _f(
        "vehicle",
        rf"\b(?:sold|totaled|totalled|crashed|wrecked|got\s+rid\s+of)\s+(?:my|our|the)\s+{NAME}",
        ends=True,
        check=is_vehicle,
    ),
    _f(
        "diet",
        r"(?:\b|(?<='))(?:(?:'m|am|is|are|'re|be|been|being|went|gone|going|become|became|turned|stay|stayed|"
        r"staying|eat|eating|follow|following|switched|switching|to|on|a|an|not|no\s+longer|never|strict|strictly|fully|mostly|totally|now|"
        r"still|also|pretty|completely)\s+)+"
        rf"(?P<value>{DIETS})\b(?:\s+diet)?(?!\s+(?:food|foods|lasagna|burgers?|restaurants?|options?|recipes?|"
        r"cheese|meals?|dish|dishes|places?|friends?|cafe|bakery|version|menu|alternatives?|dessert|cake|"
        r"cookies|pizza|sandwich|cookbook|chef|market|brand|milk|sausages?|bacon|curry|tacos?)\b)",
        "diet",
    ),
    _f("diet", r"\b(?:eat|eats|eating|back\s+to\s+eating)\s+(?P<value>meat)\b", "diet"),
    # --- schedules --------------------------------------------------------------------
    _f(
        "when: {what}",
        rf"{EVENT}\s+(?:(?:is|was|has|have|had|been|got|'s|are|were|will|be|being|just|now|"
        rf"officially|also|all)\s+)*{_MOVE}\s+(?:to|until|till|for)\s+{TIME}",
        "time",
        change=True,
        check=is_time,
    ),
    _f(
        "when: {what}",
        rf"\b{_MOVE}\s+{EVENT}\s+(?:back\s+)?(?:to|until|till)\s+{TIME}",
        "time",
        change=True,
        check=is_time,
    ),
    _f(
        "when: {what}",
        rf"{EVENT}\s+(?:is|'s|are|will\s+be|starts?|begins?)\s+(?:(?:now|still|going\s+to\s+be)\s+)?"
        rf"(?:(?:scheduled|set|planned|booked|happening)\s+)?(?:(?:for|on|at)\s+)?{TIME}",
        "time",
        check=is_time,
    ),
    _f(
        "when: {what}",
        r"\b(?:have|has|'ve\s+got|got|booked|scheduled|set\s+up|made)\s+(?:an?\s+)?"
        rf"{EVENT}\s+(?:on|at|for)\s+{TIME}",
        "time",
        check=is_time,
    ),
    _f(
        "when: {what}",
        rf"{EVENT}\s+(?:(?:is|was|has|been|got|'s|just|now|officially)\s+)*(?:cancell?ed|called\s+"
        r"off|scrapped)\b",
        "time",
        ends=True,
    ),
    _f("when: {what}", rf"\b(?:cancell?ed|called\s+off|scrapped)\s+{EVENT}", "time", ends=True),
    _f(
        "time: {what}",
        r"\b(?P<what>wakes?\s+up|gets?\s+up|go(?:es)?\s+to\s+(?:bed|sleep|the\s+gym|work)|"
        r"works?\s+out|leaves?\s+for\s+work|starts?\s+work|finish(?:es)?\s+work|hits?\s+the\s+gym|"
        r"(?:eat|have)s?\s+dinner)\s+(?:(?:usually|normally|now|every\s+day|daily)\s+)*(?:at|around|by)\s+"
        + TIME,
        "time",
        check=is_time,
    ),
    # --- amounts and counts --------------------------------------------------------------
    _f(
        "amount: {what}",
        rf"\b{NOUN}\s+(?:is|are|was|'s|will\s+be)\s+(?:(?:now|only|about|around|roughly|just|"
        rf"nearly|almost|over|under)\s+)*{NUM}",
        "number",
    ),
    _f(
        "amount: {what}",
        rf"\b{NOUN}\s+(?:(?:has|have|had|just|finally)\s+)*(?:went|gone|go|going|jumped|climbed|"
        r"rose|risen|increased|decreased|dropped|fell|fallen|grew|grown|shrank|changed|raised|cut|reduced|lowered|"
        rf"bumped|doubled)(?:\s+(?:up|down))?\s+to\s+{NUM}",
        "number",
        change=True,
    ),
    _f(
        "amount: {what}",
        rf"\b{NOUN}\s+(?:costs?|runs?|comes?\s+to|came\s+to)\s+(?:(?:me|us)\s+)?"
        rf"(?:(?:about|around|only|just)\s+)?{NUM}",
        "number",
    ),
    _f(
        "amount: {what}",
        r"\b(?:raised|increased|upped|bumped|cut|lowered|reduced|hiked)\s+(?P<owner>my|our|the)"
        rf"\s+{NOUN}\s+to\s+{NUM}",
        "number",
        change=True,
    ),
    _f(
        "amount: salary",
        rf"\b(?:make|makes|making|earn|earns|earning|get\s+paid|getting\s+paid)\s+"
        rf"(?:(?:about|around|roughly)\s+)?{NUM}",
        "number",
    ),
    _f(
        "amount: salary",
        rf"\b(?:got|get|getting|received|given)\s+(?:a\s+)?(?:\w+\s+)?(?:raise|bump)\s+to\s+{NUM}",
        "number",
        change=True,
    ),
    _f(
        "amount: {what}",
        rf"\bpay(?:ing|s)?\s+{NUM}\s+(?:(?:a|per)\s+(?:month|week|year)\s+|monthly\s+)?"
        r"(?:for|in|on)\s+(?P<what>[a-z]+)",
        "number",
    ),
    _f("amount: weight", rf"\bweigh(?:s|ed)?\s+(?:(?:about|around|roughly|now)\s+)*{NUM}", "number"),
    _f(
        "count: {what}",
        r"\b(?:have|has|'ve\s+got|own|owns)\s+(?:(?:now|only|just)\s+)?(?P<value>\d+|two|three|"
        r"four|five|six|seven|eight|nine|ten)\s+(?:(?:little|young|older|younger|big|small|grown|adult)\s+)?"
        r"(?P<what>[a-z-]+)",
        "number",
    ),
    _f(
        "count: {what}",
        r"\b(?:grew|grown|growing|expanded|shrank|shrunk|dropped|down|up)\s+to\s+"
        r"(?P<value>\d+)\s+(?P<what>[a-z-]+)",
        "number",
        change=True,
    ),
    # --- school -------------------------------------------------------------------------
    _f(
        "school",
        r"\b(?:attend(?:s|ing)?|enrolled\s+(?:at|in)|transferr(?:ed|ing)\s+to|(?:a\s+)?student\s+at|"
        rf"(?:accepted|admitted)\s+(?:to|into|at)|stud(?:y|ying|ies)\s+at)\s+{ORG}",
        check=is_named_school,
    ),
    _f("school", rf"\b(?:go(?:es|ing)?\s+to|start(?:ed|ing)?\s+at)\s+{ORG}", check=is_school),
    _f("school", rf"\b(?:graduated\s+from|dropped\s+out\s+of|left)\s+{ORG}", ends=True, check=is_school),
    _f("major", rf"\bmajor(?:ing|ed)?\s+in\s+{NAME}"),
    _f("major", rf"\bmajor\s+(?:is|'s)\s+(?:now\s+)?{NAME}"),
    _f("major", rf"\b(?:switched|changed)\s+(?:my\s+)?major\s+to\s+{NAME}", change=True),
    _f("major", r"\bstud(?:y|ying|ies)\s+(?P<value>[a-z][\w -]*?)\s+at\s+"),
    # --- many-valued: pets, children, activities, languages, allergies ---------------------
    _f(
        "pet",
        r"\b(?:have|has|got|adopted|rescued|bought|own|owns|getting|adopting|adopt|brought\s+home|"
        rf"fostering)\s+(?:(?:an?|another|one|two|three|new|second|little|baby|rescue)\s+)*{PET}",
        "pet",
    ),
    _f(
        "pet",
        r"\b(?:gave\s+away|rehomed|re-homed|gave\s+up|lost|sold|put\s+down|said\s+goodbye\s+to)\s+"
        rf"(?:my|our|the)\s+{PET}",
        "pet",
        ends=True,
    ),
    _f(
        "pet",
        rf"\b(?P<owner>my|our)\s+(?P<value>(?:[a-z]+\s+)?{PETS})(?:\s+(?P<name>[a-z]+))?\s+(?:died|passed"
        r"\s+away|passed|ran\s+away|is\s+gone)",
        "pet",
        ends=True,
    ),
    _f(
        "child",
        r"\b(?:have|has|had|welcomed|expecting|adopted)\s+(?:(?:an?|another|our|my|new|baby|first|"
        r"second|third|little)\s+)*(?P<value>son|daughter|baby(?:\s+(?:boy|girl))?|twins|boy|girl)\b",
    ),
    _f("activity", rf"\bplay(?:s|ing)?\s+(?:the\s+)?{NAME}", check=is_activity),
    _f(
        "activity",
        rf"\b(?:took|taken|taking|take|picked|picking)\s+up\s+(?:the\s+)?{NAME}",
        check=is_activity,
    ),
    _f(
        "activity",
        rf"\b(?:learning|practicing|practising)\s+(?:to\s+play\s+(?:the\s+)?)?{NAME}",
        check=is_activity,
    ),
    _f("activity", rf"\bhobb(?:y|ies)\s+(?:is|are|'s)\s+(?:now\s+)?{NAME}", check=is_activity),
    _f(
        "activity",
        r"\b(?:quit|gave\s+up|give\s+up|giving\s+up|stopped|stop)\s+(?:playing\s+|doing\s+|"
        rf"practicing\s+|learning\s+|going\s+to\s+)?(?:the\s+)?{NAME}",
        ends=True,
        check=is_hobby_ended,
    ),
    _f(
        "language",
        r"\bspeaks?\s+(?:(?:fluent|some|a\s+little|basic|conversational|native)\s+)?"
        r"(?P<value>[A-Z][a-z]+)\b",
        check=is_proper,
    ),
    _f("allergy", rf"\ballergic\s+to\s+{NAME}"),
)

MULTI_VALUED = words("pet child activity language allergy restriction")
"""Attributes a person has many of at once: a new value adds, it does not replace, unless a cue says so."""
