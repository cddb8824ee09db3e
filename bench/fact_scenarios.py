"""Supersession scenarios for bench/facts.py: an old fact, later a new statement, and a question.

Kinds:
- supersede:    the new statement replaces the old fact. Now: `current` ranks first, the old note is gone
                from default search. As of a time between the two: the old note ranks first, the new is absent.
- additive:     the new statement adds to the old ("I also adopted a cat"); nothing is retired.
- third_person: the new statement is about someone else (a relative, a named person, another speaker).
- restated:     the new statement repeats the old value; nothing is retired.
- other_speaker, hypothetical, negated (blind set only): another speaker's statement, a plan or wish, a change
                that did not happen ("I never did quit"); nothing is retired and `current` is in the old note.

`current`: substrings, one of which the top hit must contain now. `retired`: a substring of the old note:
absent from default search for supersede, still present for the other kinds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

KINDS = ("supersede", "additive", "third_person", "restated", "other_speaker", "hypothetical", "negated")
BLIND = Path(__file__).with_name("fact_scenarios_blind.json")
"""205 scenarios written blind (without reading the rules), split into dev and heldout halves."""
LATER: dict[str, str] = {
    "fresh": "a second blind set, written by a session that saw only the scenario format, after v3",
    "third": "written the same way after v5 and rescoring were frozen",
    "fourth": "written while v6 (two guards found on the third set) was built, not seen by it",
    "fifth": "written while the pair judge was trained, scored once after it was frozen",
    "sixth": "written after the judge (v7) was scored, first read by v8 (the restatement gate)",
    "seventh": "written after v8 was frozen, first read by v8",
    "eighth": "written after the seventh was scored, first read by v8",
    "ninth": "written after query centring (round 17) was frozen, first read by it",
    "tenth": "written beside the ninth by another session, first read the same way",
    "eleventh": "written while round 18 (lower-case speakers, the event penalty, a judge that learned from the "
    "scored sets) was built, first read by it once frozen",
    "twelfth": "written beside the eleventh by another session, first read the same way",
    "thirteenth": "written after the eleventh and twelfth were scored (its brief asked for additive and negated "
    "statements that name a second value or the old one), first read by 2cdfe29",
    "fourteenth": "a third of its statements 26-40 words, as people ramble; written after the thirteenth was "
    "scored, first read by 2cdfe29",
    "fifteenth": "a third of its statements long too, written after the fourteenth was scored, first read by "
    "2cdfe29 (the sentence-at-a-time reading tried meanwhile was left out)",
    "sixteenth": "people in their 30s-60s in family, neighbourhood and work chats, a quarter of the new "
    "statements long; written while round 19 (a judge that learned from the eleventh to fifteenth, updates "
    "told as a story judged) was built, first read by it once frozen",
    "seventeenth": "students and people in their 20s typing in lower case, a fifth of the statements long; "
    "written beside the sixteenth by another session, first read the same way",
    "eighteenth": "professionals and parents writing in full sentences to an assistant or a team chat, a quarter "
    "of the statements long; written while the sixteenth and seventeenth were scored, first read by round 19b "
    "(guards read from those two) once frozen",
    "nineteenth": "retirees, tradespeople and farmers in small towns, typing as they talk, a fifth of the "
    "statements long; written beside the eighteenth by another session, first read the same way",
    "twentieth": "health, money, home and family admin told to an assistant app; written after round 19b was "
    "scored, first read by round 20 (a long old fact beside a short update judged) once frozen",
    "twentyfirst": "hobbyists and creatives in community chats; written beside the twentieth, first read the "
    "same way",
    "twentysecond": "healthcare, hospitality, retail and gig workers typing between shifts, many in English as "
    "a second language; written while round 20 was built, first read by it once frozen",
    "twentythird": "parents and grandparents coordinating family life, long polite messages and very short "
    "ones; written beside the twentysecond, first read the same way",
    "twentyfourth": "people who moved abroad or between cities writing home and to new friends, many in "
    "English as a second language, a quarter of the statements long; written while round 21 (the judge at "
    "0.95, whose possessive names the party) was built, first read by it once frozen",
    "twentyfifth": "small-business owners, freelancers and the self-employed on their work and life, a quarter "
    "of the statements long; written beside the twentyfourth, first read the same way",
    "twentysixth": "shift-based public-service workers (police, fire, ambulance, transport, forces) and their "
    "families, clipped jargon beside long tired rambles, a third of the updates with an ordinary cue; written "
    "while round 21b (the speaker's dropped 'I', numbers of one thing) was built, first read by it once frozen",
    "twentyseventh": "teachers, academics, researchers and office and tech workers in work Slack and with "
    "friends, the same share of cues; written beside the twentysixth, first read the same way",
    "twentyeighth": "athletes, coaches, gym-goers and people managing a health condition, terse log lines beside "
    "long rambles, a third of the updates with an ordinary cue; written after round 21b was scored, first read "
    "by it",
    "twentyninth": "renters, homeowners and landlords dealing with utilities, banks, insurers and councils, formal "
    "or irritated, with reference numbers; written beside the twentyeighth, first read the same way",
    "thirtieth": "retirees, grandparents and older adults (pensions, clubs, volunteering, GP surgeries, care), a "
    "quarter of the statements long, a third of the updates with an ordinary cue; written while round 22 (news "
    "told before a question, a trailing aside's cue) was built, first read by it once frozen",
    "thirtyfirst": "freelancers, gig workers and small-business owners (clients, rates, tools, platforms, "
    "premises), the same shares; written beside the thirtieth, first read the same way",
    "thirtysecond": "young adults in first jobs and apprenticeships, flatshares, gaming and streaming communities, "
    "a quarter of the statements long, a third of the updates with an ordinary cue; written after round 22 was "
    "scored, first read by round 23 once frozen (with judge v11, which did not ship) and by what shipped",
    "thirtythird": "international families juggling two countries (banks, two numbers, schools, visas, tax, care), "
    "the same shares; written beside the thirtysecond, first read the same way",
    "thirtyfourth": "people living with a disability or a long-term illness and their carers (benefits, equipment, "
    "support workers, adapted homes, medication), the same shares; written while round 23 was built, first "
    "read the same way",
    "thirtyfifth": "sports fans and amateur players (season tickets, Sunday league, fantasy leagues, quiz teams) "
    "and their everyday lives, British, Irish, Australian, American and Indian English, the same shares; "
    "written beside the thirtyfourth, first read the same way",
    "thirtysixth": "teenagers and their parents and grandparents (college, part-time jobs, driving lessons, exams), "
    "slang and lower case beside long careful messages, the same shares; written after round 23 was scored, "
    "first read by round 23b (read from the thirty-second to thirty-fifth) once frozen",
    "thirtyseventh": "money and everyday admin online (subscriptions, banking and budgeting apps, side hustles, "
    "savings, contracts), the same shares; written beside the thirtysixth, first read the same way",
    "thirtyeighth": "tradespeople, drivers and manual workers typing between jobs, abbreviations beside long rants, "
    "the same shares; written while round 23b was built, not read yet: score it once with the next frozen "
    "version",
    "thirtyninth": "new parents and parents of young children (nurseries, sleep, leave, childcare), tired short "
    "messages beside long anxious ones, the same shares; written beside the thirtyeighth, not read yet",
}
"""The blind sets written after the first (split -> how it was written and first read), in order; each is
bench/fact_scenarios_<split>.json, written by a helper session from the scenario format alone, never the
rules, and scored once by the version frozen before it was read."""


def later_path(split: str) -> Path:
    return Path(__file__).with_name(f"fact_scenarios_{split}.json")


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    kind: str
    speaker: str
    old: str
    new: str
    query: str
    current: tuple[str, ...]
    retired: str
    new_speaker: str | None = None
    """Who says the new statement; None = the same speaker."""
    t1: str = "2024-03-01T10:00:00+00:00"
    t2: str = "2024-05-01T10:00:00+00:00"
    split: str = "old92"
    """'old92' (this file), or the blind set's 'dev' / 'heldout'."""

    def __post_init__(self) -> None:
        assert self.kind in KINDS, self.kind
        assert self.retired in self.old, (self.name, self.retired)
        assert self.t1 < self.t2

    @property
    def speaker_of_new(self) -> str:
        return self.new_speaker or self.speaker


FILLERS: tuple[str, ...] = (
    "Ugh, Mondays are rough.",
    "Did you see the game last night? What a finish!",
    "I'm making pasta tonight, any sauce ideas?",
    "The weather has been gorgeous this week.",
    "Just finished a great book about the ocean.",
    "Traffic was terrible this morning.",
    "Can you recommend a good podcast for long drives?",
    "My coffee went cold again, classic.",
    "Watched a documentary about octopuses, wild stuff.",
    "Lol that meme you sent was hilarious.",
    "I need to remember to water the plants.",
    "The new season of that show is so good.",
    "Went for a long walk by the river after lunch.",
    "Does anyone know a good pizza place around here?",
    "I can't believe it's already the end of the month.",
    "The neighbours' kids were loud again last night.",
    "Trying a new sourdough recipe this weekend.",
    "The sunset yesterday was unreal.",
    "Got caught in the rain without an umbrella, of course.",
    "Honestly I just need a nap.",
    "That concert last year was amazing.",
    "I keep forgetting where I put my keys.",
    "Spent the afternoon cleaning out the garage.",
    "My sister lives in Miami, lucky her with that weather.",
    "We should play board games again sometime.",
    "I finally fixed the squeaky door in the hallway.",
    "The grocery store was out of avocados again.",
    "My phone battery dies so fast these days.",
)


def fillers_for(index: int, count: int = 5) -> list[str]:
    """A rotating window of the pool, so each scenario gets different chit-chat."""
    start = (index * 3) % len(FILLERS)
    return [FILLERS[(start + i) % len(FILLERS)] for i in range(count)]


def load_blind(splits: tuple[str, ...] = ("dev", "heldout"), path: Path = BLIND) -> list[Scenario]:
    """The blind scenarios of the given splits (bench only: develop on dev, score heldout once)."""
    fields = (
        "name",
        "kind",
        "speaker",
        "old",
        "new",
        "query",
        "current",
        "retired",
        "new_speaker",
        "t1",
        "t2",
    )
    out = []
    for i, row in enumerate(json.loads(path.read_text())):
        try:
            if row["split"] in splits:
                values = {f: row[f] for f in fields} | {
                    "current": tuple(row["current"]),
                    "split": row["split"],
                }
                out.append(Scenario(**values))
        except (KeyError, AssertionError, TypeError) as exc:
            raise ValueError(f"{path}: scenario {i} ({row.get('name')!r}): bad field: {exc!r}") from exc
    return out


def _sup(name: str, speaker: str, old: str, new: str, query: str, current: str, retired: str) -> Scenario:
    return Scenario(name, "supersede", speaker, old, new, query, (current,), retired)


SCENARIOS: list[Scenario] = [
    # --- supersede: residence ------------------------------------------------------
    _sup(
        "residence-move",
        "Alice",
        "I live in New York, in a tiny apartment.",
        "I moved to Seattle last month for a new job.",
        "Where does Alice live?",
        "Seattle",
        "New York",
    ),
    _sup(
        "residence-relocated",
        "Ben",
        "We're based in Austin these days.",
        "Big update: we relocated to Denver over the summer.",
        "Which city is Ben based in?",
        "Denver",
        "Austin",
    ),
    _sup(
        "residence-home-is",
        "Chloe",
        "Home is Chicago for now.",
        "I just moved to Portland, Oregon!",
        "Where is Chloe's home?",
        "Portland",
        "Chicago",
    ),
    _sup(
        "residence-negated",
        "Dev",
        "I live in Paris near the canal.",
        "I don't live in Paris anymore; I'm back with my parents.",
        "Does Dev live in Paris?",
        "anymore",
        "near the canal",
    ),
    _sup(
        "residence-elliptical",
        "Alice",
        "Currently living in Toronto with two roommates.",
        "Just moved to Vancouver!",
        "Where is Alice living?",
        "Vancouver",
        "Toronto",
    ),
    _sup(
        "residence-brother",
        "Wes",
        "My brother lives in Denver.",
        "My brother just moved to Austin.",
        "Where does Wes's brother live?",
        "Austin",
        "Denver",
    ),
    _sup(
        "residence-named-person",
        "Yuki",
        "Sarah lives in Boston near the harbor.",
        "Sarah moved to Chicago in May.",
        "Where does Sarah live?",
        "Chicago",
        "Boston",
    ),
    _sup(
        "address-change",
        "Olga",
        "My address is 12 Elm Street, Apt 4.",
        "We moved to 88 Harbor Road last weekend.",
        "What is Olga's address?",
        "88 Harbor Road",
        "12 Elm Street",
    ),
    # --- supersede: work --------------------------------------------------------------
    _sup(
        "employer-started",
        "Emma",
        "I work at Google as a data analyst.",
        "I started at Microsoft on Monday!",
        "Where does Emma work?",
        "Microsoft",
        "Google",
    ),
    _sup(
        "employer-quit",
        "Farid",
        "I'm working for Deloitte in their Chicago office.",
        "I finally quit my job at Deloitte.",
        "Where does Farid work?",
        "quit my job",
        "Chicago office",
    ),
    _sup(
        "employer-new-job",
        "Grace",
        "I work for a small bakery downtown.",
        "I got a new job at the public library.",
        "What is Grace's job?",
        "public library",
        "bakery",
    ),
    _sup(
        "employer-joined",
        "Zane",
        "I work at Shopify on the payments team.",
        "I joined Stripe as a backend engineer.",
        "Which company does Zane work for?",
        "Stripe",
        "Shopify",
    ),
    _sup(
        "employer-laid-off",
        "Noah",
        "I'm employed at Boeing as a machinist.",
        "I got laid off last Friday.",
        "Is Noah still employed at Boeing?",
        "laid off",
        "Boeing",
    ),
    _sup(
        "role-promoted",
        "Hiro",
        "I work as a junior developer.",
        "I got promoted to team lead yesterday.",
        "What is Hiro's role at work?",
        "team lead",
        "junior developer",
    ),
    _sup(
        "role-change",
        "Ines",
        "I'm a nurse at the children's hospital.",
        "These days I work as a paramedic.",
        "What does Ines do for a living?",
        "paramedic",
        "nurse",
    ),
    _sup(
        "boss-change",
        "Liam",
        "My boss is Karen.",
        "Karen left, and my manager is now Steve.",
        "Who is Liam's boss?",
        "Steve",
        "My boss is Karen",
    ),
    # --- supersede: relationships ----------------------------------------------------
    _sup(
        "status-dating",
        "Jonas",
        "I'm single and honestly loving it.",
        "I've been dating someone named Lena since spring.",
        "Is Jonas single?",
        "Lena",
        "loving it",
    ),
    _sup(
        "status-breakup",
        "Kira",
        "I'm in a relationship with Tom.",
        "Tom and I broke up last week.",
        "Is Kira in a relationship?",
        "broke up",
        "relationship with Tom",
    ),
    _sup(
        "status-married",
        "Liam",
        "I'm engaged to Priya.",
        "We got married in June!",
        "Is Liam married?",
        "married",
        "engaged",
    ),
    _sup(
        "status-divorced",
        "Ben",
        "I'm married with two kids.",
        "I got divorced last year.",
        "Is Ben married?",
        "divorced",
        "married with two kids",
    ),
    _sup(
        "partner-change",
        "Quinn",
        "My girlfriend is Ava.",
        "I'm seeing Mia now, Ava and I split up in March.",
        "Who is Quinn's girlfriend?",
        "Mia",
        "My girlfriend is Ava",
    ),
    # --- supersede: contact details, identity ------------------------------------------
    _sup(
        "phone-new",
        "Maya",
        "My phone number is 555-201-3344.",
        "You can reach me at 555-987-1100 now.",
        "What is Maya's phone number?",
        "555-987-1100",
        "555-201-3344",
    ),
    _sup(
        "email-new",
        "Noah",
        "My email is noah.b@fastmail.com.",
        "I switched email providers, email me at noah.baker@proton.me from now on.",
        "What is Noah's email address?",
        "proton.me",
        "fastmail",
    ),
    _sup(
        "doctor-new",
        "Kira",
        "My doctor is Dr. Patel.",
        "My new doctor is Dr. Nguyen.",
        "Who is Kira's doctor?",
        "Nguyen",
        "Patel",
    ),
    _sup("age-birthday", "Umar", "I'm 29 years old.", "I turned 30 today!", "How old is Umar?", "30", "29"),
    # --- supersede: favourites, preferences ------------------------------------------------
    _sup(
        "favourite-color",
        "Priya",
        "My favorite color is green.",
        "Honestly my favorite color is purple now.",
        "What is Priya's favorite color?",
        "purple",
        "green",
    ),
    _sup(
        "favourite-food",
        "Quinn",
        "Sushi is my favourite food.",
        "My new favourite food is ramen.",
        "What is Quinn's favourite food?",
        "ramen",
        "Sushi",
    ),
    _sup(
        "favourite-team",
        "Emma",
        "My favorite team is the Lakers.",
        "Honestly the Celtics are my favorite team now.",
        "Which team does Emma support?",
        "Celtics",
        "Lakers",
    ),
    _sup(
        "preference-seat",
        "Farid",
        "I prefer window seats on flights.",
        "These days I prefer aisle seats.",
        "Which seat does Farid prefer on flights?",
        "aisle",
        "window",
    ),
    _sup(
        "preference-switch",
        "Grace",
        "I prefer tea in the morning.",
        "I switched to coffee, tea just doesn't cut it anymore.",
        "What does Grace drink in the morning?",
        "coffee",
        "prefer tea",
    ),
    _sup(
        "preference-workplace",
        "Farid",
        "I prefer working from home.",
        "Now I prefer working at the office, it's more social.",
        "Where does Farid prefer to work?",
        "office",
        "from home",
    ),
    # --- supersede: vehicle, diet ---------------------------------------------------------
    _sup(
        "car-sold",
        "Rosa",
        "I drive a Honda Civic.",
        "I sold the Civic and bought a Tesla Model 3.",
        "What car does Rosa drive?",
        "Tesla",
        "Honda Civic",
    ),
    _sup(
        "car-new",
        "Noah",
        "My car is a 2012 Toyota Corolla.",
        "I finally got a new car, a Subaru Outback.",
        "What car does Noah have?",
        "Subaru",
        "Corolla",
    ),
    _sup(
        "diet-vegan",
        "Sam",
        "I'm vegetarian.",
        "I went vegan in January.",
        "What is Sam's diet?",
        "vegan",
        "vegetarian",
    ),
    _sup(
        "diet-ended",
        "Tara",
        "I've been vegan for five years.",
        "I'm not vegan anymore, I eat fish now.",
        "Is Tara vegan?",
        "not vegan",
        "five years",
    ),
    _sup(
        "diet-plan",
        "Chloe",
        "I'm on a keto diet.",
        "I switched to paleo a month ago.",
        "What diet does Chloe follow?",
        "paleo",
        "keto",
    ),
    # --- supersede: schedules ---------------------------------------------------------------
    _sup(
        "meeting-moved",
        "Vera",
        "The team meeting is on Tuesday at 3pm.",
        "The team meeting got moved to Thursday at 10am.",
        "When is the team meeting?",
        "Thursday",
        "Tuesday",
    ),
    _sup(
        "appointment-pushed",
        "Wes",
        "I have a dentist appointment on March 12.",
        "My dentist appointment was pushed to March 19.",
        "When is Wes's dentist appointment?",
        "March 19",
        "March 12",
    ),
    _sup(
        "reservation-pushed",
        "Yuki",
        "Our dinner reservation is at 7pm on Saturday.",
        "We pushed the dinner reservation to 8:30pm.",
        "What time is the dinner reservation?",
        "8:30",
        "7pm",
    ),
    _sup(
        "flight-moved",
        "Zane",
        "My flight to Lisbon is on May 3.",
        "The airline moved my flight to May 5.",
        "When is Zane's flight to Lisbon?",
        "May 5",
        "May 3",
    ),
    _sup(
        "interview-rescheduled",
        "Alice",
        "My interview with Stripe is Friday at noon.",
        "They rescheduled my interview to Monday morning.",
        "When is Alice's interview?",
        "Monday",
        "Friday at noon",
    ),
    _sup(
        "kickoff-moved",
        "Tara",
        "The kickoff call is at 9am Monday.",
        "Heads up: the kickoff call moved to 11am Monday.",
        "What time is the kickoff call?",
        "11am",
        "9am",
    ),
    _sup(
        "meeting-cancelled",
        "Maya",
        "Our book club meeting is Thursday evening.",
        "Book club meeting got cancelled.",
        "When is the book club meeting?",
        "cancelled",
        "Thursday evening",
    ),
    # --- supersede: numbers -------------------------------------------------------------------
    _sup(
        "rent-up",
        "Dev",
        "I pay $950 a month in rent.",
        "My rent went up to $1,100.",
        "How much is Dev's rent?",
        "1,100",
        "$950",
    ),
    _sup(
        "rent-raised",
        "Ben",
        "My rent is $1,200 a month.",
        "The landlord raised the rent to $1,450.",
        "How much rent does Ben pay?",
        "1,450",
        "1,200",
    ),
    _sup(
        "salary-raise",
        "Chloe",
        "I make about $85k a year.",
        "Got a raise, I'm making $95k now.",
        "How much does Chloe earn?",
        "95k",
        "85k",
    ),
    _sup(
        "salary-stated",
        "Rosa",
        "My salary is $60,000.",
        "After the promotion my salary is $72,000.",
        "What is Rosa's salary?",
        "72,000",
        "60,000",
    ),
    _sup(
        "price-membership",
        "Dev",
        "My gym membership costs $40 a month.",
        "My gym membership went up to $55 a month.",
        "How much is Dev's gym membership?",
        "$55",
        "$40",
    ),
    _sup(
        "price-subscription",
        "Umar",
        "Netflix costs me $15.49 a month.",
        "Netflix is now $22.99 a month for me.",
        "How much does Umar pay for Netflix?",
        "22.99",
        "15.49",
    ),
    _sup(
        "count-kids",
        "Emma",
        "We have two kids.",
        "We have three kids now!",
        "How many kids does Emma have?",
        "three",
        "two kids",
    ),
    _sup(
        "count-employees",
        "Vera",
        "Our startup has 12 employees.",
        "Our startup has grown to 20 employees.",
        "How many employees does Vera's startup have?",
        "20",
        "12",
    ),
    # --- supersede: school, routines, hobbies -------------------------------------------------------
    _sup(
        "school-transfer",
        "Hiro",
        "I'm a student at Ohio State University.",
        "I transferred to the University of Michigan.",
        "Which university does Hiro attend?",
        "Michigan",
        "Ohio State",
    ),
    _sup(
        "major-switch",
        "Ines",
        "I'm majoring in biology.",
        "I switched my major to computer science.",
        "What is Ines majoring in?",
        "computer science",
        "biology",
    ),
    _sup(
        "routine-wake",
        "Jonas",
        "I usually wake up at 6am.",
        "Now I wake up at 7:30 because of the new shift.",
        "What time does Jonas wake up?",
        "7:30",
        "6am",
    ),
    _sup(
        "routine-gym",
        "Sam",
        "I hit the gym at 6pm after work.",
        "I go to the gym at 5am now.",
        "When does Sam go to the gym?",
        "5am",
        "6pm",
    ),
    _sup(
        "hobby-ended",
        "Grace",
        "I play tennis on weekends.",
        "I gave up tennis, I do pottery instead now.",
        "Does Grace play tennis?",
        "gave up tennis",
        "on weekends",
    ),
    _sup(
        "instrument-stopped",
        "Priya",
        "I play the violin in a community orchestra.",
        "I stopped playing the violin last year.",
        "Does Priya play the violin?",
        "stopped",
        "community orchestra",
    ),
    _sup(
        "pet-rehomed",
        "Olga",
        "I have a cat named Mochi.",
        "We gave away our cat because of my allergies.",
        "Does Olga have a cat?",
        "gave away",
        "Mochi",
    ),
    # --- additive -------------------------------------------------------------------------------------
    Scenario(
        "pets-added",
        "additive",
        "Hiro",
        "I have a dog named Biscuit.",
        "I also adopted a cat last weekend.",
        "What pets does Hiro have?",
        ("Biscuit", "cat"),
        "Biscuit",
    ),
    Scenario(
        "languages-added",
        "additive",
        "Ines",
        "I speak Spanish fluently.",
        "I speak Portuguese too.",
        "What languages does Ines speak?",
        ("Spanish", "Portuguese"),
        "Spanish",
    ),
    Scenario(
        "instruments-added",
        "additive",
        "Jonas",
        "I play the guitar.",
        "Lately I've taken up the drums as well.",
        "What instruments does Jonas play?",
        ("guitar", "drums"),
        "guitar",
    ),
    Scenario(
        "kids-added",
        "additive",
        "Kira",
        "I have a son named Leo.",
        "We just had a baby girl!",
        "What children does Kira have?",
        ("Leo", "baby girl"),
        "Leo",
    ),
    Scenario(
        "second-job",
        "additive",
        "Liam",
        "I work at a hospital as a nurse.",
        "I also work at a coffee shop on weekends.",
        "Where does Liam work?",
        ("hospital", "coffee shop"),
        "hospital",
    ),
    Scenario(
        "allergies-added",
        "additive",
        "Maya",
        "I'm allergic to peanuts.",
        "Turns out I'm allergic to shellfish as well.",
        "What is Maya allergic to?",
        ("peanuts", "shellfish"),
        "peanuts",
    ),
    Scenario(
        "cats-another",
        "additive",
        "Noah",
        "I have two cats.",
        "We got another cat, a tabby named Pixel.",
        "How many cats does Noah have?",
        ("cats", "cat"),
        "two cats",
    ),
    Scenario(
        "languages-learning",
        "additive",
        "Olga",
        "I'm learning French.",
        "I started learning Japanese too.",
        "Which languages is Olga learning?",
        ("French", "Japanese"),
        "French",
    ),
    Scenario(
        "hobbies-added",
        "additive",
        "Priya",
        "My hobby is painting.",
        "I've also picked up rock climbing.",
        "What are Priya's hobbies?",
        ("painting", "climbing"),
        "painting",
    ),
    Scenario(
        "cars-added",
        "additive",
        "Quinn",
        "I drive a Ford F-150 for work.",
        "We also bought a Mini Cooper for weekend trips.",
        "What cars does Quinn have?",
        ("F-150", "Mini"),
        "F-150",
    ),
    Scenario(
        "dogs-second",
        "additive",
        "Rosa",
        "I have a dog.",
        "We got a second dog, a beagle named Rufus.",
        "What dogs does Rosa have?",
        ("dog",),
        "I have a dog",
    ),
    # --- third person and other speakers ---------------------------------------------------------------
    Scenario(
        "brother-moved",
        "third_person",
        "Alice",
        "I live in New York.",
        "My brother moved to Denver.",
        "Where does Alice live?",
        ("New York",),
        "New York",
    ),
    Scenario(
        "wife-job",
        "third_person",
        "Ben",
        "I work at Amazon.",
        "My wife just started at Microsoft.",
        "Where does Ben work?",
        ("Amazon",),
        "Amazon",
    ),
    Scenario(
        "roommate-diet",
        "third_person",
        "Chloe",
        "I'm vegetarian.",
        "My roommate went vegan last month.",
        "Is Chloe vegetarian?",
        ("vegetarian",),
        "vegetarian",
    ),
    Scenario(
        "sister-engaged",
        "third_person",
        "Dev",
        "I'm single.",
        "My sister got engaged over the weekend!",
        "Is Dev single?",
        ("single",),
        "single",
    ),
    Scenario(
        "friend-phone",
        "third_person",
        "Emma",
        "My phone number is 555-300-1212.",
        "Sarah's new number is 555-777-8888.",
        "What is Emma's phone number?",
        ("555-300-1212",),
        "555-300-1212",
    ),
    Scenario(
        "her-appointment",
        "third_person",
        "Farid",
        "The team meeting is on Monday at 9am.",
        "Priya said her dentist appointment got moved to Friday.",
        "When is the team meeting?",
        ("Monday at 9am",),
        "Monday at 9am",
    ),
    Scenario(
        "he-drives",
        "third_person",
        "Grace",
        "I drive a Toyota Prius.",
        "He drives a Jeep Wrangler now.",
        "What car does Grace drive?",
        ("Prius",),
        "Prius",
    ),
    Scenario(
        "other-speaker-home",
        "third_person",
        "Hiro",
        "I live in Osaka.",
        "I live in Kyoto.",
        "Where does Hiro live?",
        ("Osaka",),
        "Osaka",
        new_speaker="Yuki",
    ),
    Scenario(
        "other-speaker-movie",
        "third_person",
        "Ines",
        "My favorite movie is Inception.",
        "My favorite movie is Parasite.",
        "What is Ines's favorite movie?",
        ("Inception",),
        "Inception",
        new_speaker="Jonas",
    ),
    Scenario(
        "dad-chef",
        "third_person",
        "Jonas",
        "I work as a chef.",
        "My dad worked as a chef for 30 years and now he's a baker.",
        "What does Jonas do for work?",
        ("I work as a chef",),
        "I work as a chef",
    ),
    Scenario(
        "son-age",
        "third_person",
        "Kira",
        "I'm 34.",
        "My son turned 5 yesterday.",
        "How old is Kira?",
        ("34",),
        "34",
    ),
    Scenario(
        "friend-rent",
        "third_person",
        "Liam",
        "My rent is $2,000.",
        "My friend's rent went up to $2,400.",
        "How much is Liam's rent?",
        ("2,000",),
        "2,000",
    ),
    Scenario(
        "company-relocated",
        "third_person",
        "Maya",
        "I live in Austin.",
        "My company relocated to Dallas.",
        "Where does Maya live?",
        ("Austin",),
        "Austin",
    ),
    Scenario(
        "other-speaker-job",
        "third_person",
        "Sam",
        "I work at Spotify.",
        "I just started at Netflix!",
        "Where does Sam work?",
        ("Spotify",),
        "Spotify",
        new_speaker="Tara",
    ),
    # --- restated -----------------------------------------------------------------------------------------
    Scenario(
        "restate-home",
        "restated",
        "Noah",
        "I live in Seattle.",
        "Still living in Seattle and loving the rain.",
        "Where does Noah live?",
        ("Seattle",),
        "I live in Seattle",
    ),
    Scenario(
        "restate-employer",
        "restated",
        "Olga",
        "I work at IBM.",
        "I've worked at IBM for ten years now.",
        "Where does Olga work?",
        ("IBM",),
        "I work at IBM",
    ),
    Scenario(
        "restate-meeting",
        "restated",
        "Priya",
        "The meeting is on Friday.",
        "Reminder: the meeting is still on Friday.",
        "When is the meeting?",
        ("Friday",),
        "The meeting is on Friday",
    ),
    Scenario(
        "restate-email",
        "restated",
        "Quinn",
        "My email is quinn@mail.com.",
        "As a reminder, my email is quinn@mail.com.",
        "What is Quinn's email?",
        ("quinn@mail.com",),
        "My email is",
    ),
    Scenario(
        "restate-diet",
        "restated",
        "Rosa",
        "I'm vegan.",
        "Being vegan for three years now has been great.",
        "Is Rosa vegan?",
        ("vegan",),
        "I'm vegan",
    ),
    Scenario(
        "restate-band",
        "restated",
        "Sam",
        "My favorite band is Radiohead.",
        "Radiohead is still my favorite band.",
        "What is Sam's favorite band?",
        ("Radiohead",),
        "My favorite band",
    ),
    Scenario(
        "restate-rent",
        "restated",
        "Umar",
        "My rent is $1,500.",
        "Paying $1,500 in rent every month hurts.",
        "How much is Umar's rent?",
        ("1,500",),
        "My rent is",
    ),
    Scenario(
        "restate-city",
        "restated",
        "Vera",
        "I moved to Berlin in 2019.",
        "I live in Berlin with my partner.",
        "Where does Vera live?",
        ("Berlin",),
        "moved to Berlin",
    ),
    Scenario(
        "restate-nyc",
        "restated",
        "Wes",
        "I live in NYC.",
        "I live in New York City, in Harlem.",
        "Where does Wes live?",
        ("NYC", "New York"),
        "I live in NYC",
    ),
]
