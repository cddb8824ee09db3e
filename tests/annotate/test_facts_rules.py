"""Which new statements retire an old fact: the decision (engine.annotate.facts.decision) on the pairs the
frame lexicon (engine.annotate.facts.rules) was built with, and the lexicon's own fact extraction.

`sup` runs the whole decision (guards, lexicon, masked similarity from the real WordLlama encoder) and
returns the reason without its 'superseded: ' prefix; frame-read pairs keep their lexicon reason."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.fact_scenarios import FILLERS, SCENARIOS, Scenario
from engine.annotate.facts.decision import Statement, decide, similarity
from engine.annotate.facts.rules import Fact, extract_facts
from engine.encode import WordLlamaEncoder

_ENCODER = WordLlamaEncoder()
_FRAME = "superseded: same attribute (frame) "


def sup(
    old: str, new: str, old_speaker: str | None = "Alice", new_speaker: str | None = "Alice"
) -> str | None:
    sim = similarity(_ENCODER.encode_batch, old, new)
    decision = decide(Statement(old, old_speaker), Statement(new, new_speaker), sim)
    return decision.reason.removeprefix(_FRAME).removeprefix("superseded: ") if decision.supersedes else None


# --- the headline rules -----------------------------------------------------------------
def test_move_supersedes_residence_with_a_readable_reason() -> None:
    assert (
        sup("I live in New York.", "I moved to Seattle last month.")
        == "residence of Alice: New York -> Seattle"
    )


def test_additive_statement_does_not_supersede() -> None:
    assert sup("I have a dog named Biscuit.", "I also adopted a cat.") is None
    assert sup("I have a dog.", "I adopted a cat.") is None  # pets are many-valued even without "also"
    assert sup("I work at a hospital.", "I also work at a coffee shop on weekends.") is None


def test_third_person_does_not_supersede_the_speakers_fact() -> None:
    assert sup("I live in New York.", "My brother moved to Denver.") is None
    assert sup("I live in New York.", "Sarah moved to Boston.") is None
    assert sup("I live in New York.", "She moved to Boston last year.") is None
    assert sup("I live in New York.", "My company relocated to Dallas.") is None


def test_same_third_party_subject_supersedes() -> None:
    assert (
        sup("My brother lives in Denver.", "My brother moved to Austin.")
        == "residence of brother of Alice: Denver -> Austin"
    )
    assert sup("Sarah lives in Boston.", "Sarah moved to Chicago.") is not None
    assert sup("My brother lives in Denver.", "My sister moved to Austin.") is None


def test_rescheduled_event_supersedes_and_other_events_do_not() -> None:
    old = "The team meeting is on Tuesday at 3pm."
    assert (
        sup(old, "The team meeting got moved to Thursday at 10am.")
        == "time of team meeting: Tuesday at 3pm -> Thursday at 10am"
    )
    assert sup(old, "We pushed the meeting to Friday.") is not None
    assert sup(old, "My dentist appointment got moved to Friday.") is None
    assert sup(old, "The team meeting was great.") is None


def test_cancelled_event_ends_its_schedule() -> None:
    assert sup("Our book club meeting is Thursday evening.", "Book club meeting got cancelled.") is not None


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("My rent is $1,200 a month.", "My rent just went up to $1,450."),
        ("I pay $950 a month in rent.", "The landlord raised the rent to $1,100."),
        ("I make about $85k a year.", "I'm making $95k now."),
        ("We have two kids.", "We have three kids now!"),
        ("Netflix costs me $15.49 a month.", "Netflix is now $22.99 a month."),
    ],
)
def test_changed_numbers_supersede(old: str, new: str) -> None:
    assert sup(old, new) is not None


def test_same_number_in_other_words_is_no_change() -> None:
    assert sup("My rent is $1,500.", "Paying 1500 dollars in rent every month hurts.") is None
    assert sup("My rent is $1,000.", "My car payment is $300.") is None


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("I live in Seattle.", "Still living in Seattle and loving it."),
        ("I live in NYC.", "I live in New York City."),
        ("I work at IBM.", "I've worked at IBM for ten years now."),
        ("My email is quinn@mail.com.", "As a reminder, my email is quinn@mail.com."),
        ("Radiohead is my favorite band.", "My favorite band is still Radiohead."),
        ("I work as a barista.", "I'm a barista and a part-time student."),
    ],
)
def test_restated_value_does_not_supersede(old: str, new: str) -> None:
    assert sup(old, new) is None


def test_first_person_statements_of_different_speakers_are_different_subjects() -> None:
    assert sup("I live in Osaka.", "I live in Kyoto.", "Hiro", "Yuki") is None
    assert sup("My favorite movie is Inception.", "My favorite movie is Parasite.", "Ines", "Jonas") is None
    assert sup("I live in Osaka.", "I live in Kyoto.", "Hiro", "Hiro") is not None


def test_shared_event_can_be_updated_by_another_speaker() -> None:
    assert sup("The meeting is on Friday.", "The meeting moved to Monday.", "Alice", "Bob") is not None


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("I work for Deloitte.", "I finally quit my job at Deloitte."),
        ("I work for Deloitte.", "I quit my job."),
        ("I'm employed at Boeing.", "I got laid off last Friday."),
        ("I live in Paris.", "I don't live in Paris anymore."),
        ("I'm vegan.", "I'm not vegan anymore."),
        ("I play the guitar.", "I don't play guitar anymore."),
        ("I have a cat named Mochi.", "We gave away our cat."),
        ("I'm single.", "I'm not single anymore!"),
        ("I drive a Honda Civic.", "I sold the Civic."),
    ],
)
def test_negations_and_endings_supersede(old: str, new: str) -> None:
    assert sup(old, new) is not None


def test_an_ending_must_name_the_old_value_when_it_names_one() -> None:
    assert sup("I live in New York.", "I don't live in Paris anymore.") is None
    assert sup("I work for Acme.", "I quit smoking!") is None


@pytest.mark.parametrize(
    "new",
    [
        "I want to move to Boston someday.",
        "If I moved to Boston I'd miss the mountains.",
        "Would you ever move to Boston?",
        "I lived in Boston before that.",
        "I can't wait to move to Boston.",
        "When I lived in Boston it was cold.",
    ],
)
def test_hypotheticals_questions_and_past_tense_do_not_supersede(new: str) -> None:
    assert sup("I live in Denver.", new) is None


def test_a_past_fact_is_not_superseded() -> None:
    assert sup("I used to live in Rome.", "I live in Milan.") is None
    assert sup("My rent was $800 when I moved in.", "My rent is $1,000.") is None


def test_many_valued_attributes_need_a_replacement_cue() -> None:
    assert sup("I play guitar.", "I play basketball.") is None
    assert sup("I speak Spanish.", "I speak German.") is None
    assert sup("I play tennis on weekends.", "I gave up tennis, I do pottery instead.") is not None


def test_preferences_compare_within_a_domain() -> None:
    assert sup("I prefer tea.", "I prefer coffee now.") is not None
    assert sup("I prefer window seats on flights.", "These days I prefer aisle seats.") is not None
    assert sup("I prefer tea.", "I prefer the window seat.") is None


def test_unrelated_phrases_that_look_like_frames_do_not_supersede() -> None:
    assert sup("I work for Acme.", "I left the office early today.") is None
    assert sup("I work for Acme.", "I joined the book club.") is None
    assert sup("I'm a teacher.", "I'm a huge fan of jazz.") is None
    assert sup("I drive a Jeep.", "I drive to work every day.") is None
    assert sup("I'm vegan.", "I had a vegan burger for lunch.") is None
    assert sup("I'm 40.", "I'm 5 minutes away.") is None


# Phrasings written after the rules, to check they generalise (kept as a regression table).
_VARIETY = [
    ("I'm based out of Chicago.", "I've relocated to Miami for the winter.", True),
    ("I live in New York.", "We moved from New York to Seattle in June.", True),
    ("I work for the city council.", "I was hired by Deloitte last week.", True),
    ("I'm working at a startup called Zapp.", "Zapp shut down, so I joined Figma.", True),
    ("I work at Acme.", "I work remotely for Stripe now.", True),
    ("My job title is product manager.", "My title is now senior product manager.", True),
    ("I'm a freelance photographer.", "I work as a full-time wedding planner now.", True),
    ("I'm happily married.", "We separated in the fall.", True),
    ("My cell is (415) 555-0101.", "My new cell number is (415) 555-0199.", True),
    ("Reach me at old@mail.com.", "My email address changed to new@mail.com.", True),
    ("My favourite season is summer.", "Autumn is my favourite season now.", True),
    ("I prefer texting.", "I prefer phone calls now.", True),
    ("I drive a Mazda 3.", "I'm driving a Kia Telluride now.", True),
    ("I'm pescatarian.", "I've gone fully vegetarian.", True),
    ("The concert is on Friday night.", "The concert was postponed to next Saturday.", True),
    ("Our anniversary dinner is at 8pm.", "We moved our anniversary dinner to 7pm.", True),
    ("My internet bill is $60.", "My internet bill is now $75.", True),
    ("We have 4 chickens.", "We now have 6 chickens.", True),
    ("I go to Riverside Community College.", "I transferred to UCLA this fall.", True),
    ("I go to bed around 10pm.", "These days I go to bed at midnight.", True),
    ("I speak Italian.", "I don't speak Italian anymore, I've forgotten it all.", True),
    ("I'm based out of Chicago.", "I'm flying to Miami for the weekend.", False),
    ("I work for the city council.", "My daughter was hired by Deloitte.", False),
    ("I'm happily married.", "My parents separated years ago.", False),
    ("My favourite season is summer.", "Summer is my mom's favourite season.", False),
    ("I drive a Mazda 3.", "I rented a Kia for the trip.", False),
    ("I'm pescatarian.", "I cooked a vegetarian lasagna.", False),
    ("The concert is on Friday night.", "The concert on Friday night will be epic.", False),
    ("My lease costs $2,100 a month.", "Parking costs $150 a month.", False),
    ("I go to bed around 10pm.", "I went to bed at 2am last night.", False),
    ("I live in Oslo.", "Thinking of moving to Bergen.", False),
    ("I work at Nike.", "Nike is hiring, you should apply!", False),
    ("I live in Oslo.", "He lives in Oslo too.", False),
    ("I'm vegan.", "On another note, I made vegan ice cream last Friday.", False),
    ("I'm single.", "I like breaking up my studying into smaller parts.", False),
]


@pytest.mark.parametrize(("old", "new", "expected"), _VARIETY)
def test_phrasing_variety(old: str, new: str, expected: bool) -> None:
    assert (sup(old, new) is not None) == expected


# --- extract_facts ------------------------------------------------------------------------------
def test_extract_facts_resolves_subjects() -> None:
    facts = extract_facts("I live in Denver and my brother works at Intel.", "Alice")
    assert [(f.subject, f.attribute, f.value) for f in facts] == [
        ("self:Alice", "residence", "denver"),
        ("brother of self:Alice", "employer", "intel"),
    ]


def test_extract_facts_flags() -> None:
    (fact,) = extract_facts("I don't live in Paris anymore.", "Dev")
    assert isinstance(fact, Fact) and fact.is_negated and fact.text == "Paris"
    (fact,) = extract_facts("I also adopted a cat.", "Hiro")
    assert fact.is_additive and fact.attribute == "pet" and fact.value == "cat"
    (fact,) = extract_facts("He drives a Jeep.", "Grace")
    assert not fact.is_resolved
    assert extract_facts("Where do you live?", "Bob") == []


def test_subject_inherited_across_clauses_and_appositions() -> None:
    (fact,) = extract_facts("My brother, Tom, moved to Denver.", "Alice")
    assert fact.subject == "person:tom"
    (_, second) = extract_facts("I moved to Seattle and started at Amazon.", "Alice")
    assert (second.subject, second.attribute, second.value) == ("self:Alice", "employer", "amazon")


def test_a_speaker_named_in_the_third_person_is_the_speaker() -> None:
    assert sup("I live in Lyon.", "Alice moved to Nice.") is not None


# --- properties -----------------------------------------------------------------------------------
_STATEMENTS = sorted({s.old for s in SCENARIOS} | {s.new for s in SCENARIOS})


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(_STATEMENTS), st.sampled_from(FILLERS))
def test_chit_chat_never_supersedes_nor_is_superseded(statement: str, filler: str) -> None:
    assert sup(statement, filler) is None
    assert sup(filler, statement) is None


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(_STATEMENTS))
def test_a_statement_never_supersedes_itself(statement: str) -> None:
    assert sup(statement, statement) is None


def _first_person_only(text: str, speaker: str) -> bool:
    facts = extract_facts(text, speaker)
    return bool(facts) and all(f.subject == f"self:{speaker}" for f in facts)


_FIRST_PERSON_PAIRS = [
    s
    for s in SCENARIOS
    if s.kind == "supersede" and _first_person_only(s.old, s.speaker) and _first_person_only(s.new, s.speaker)
]


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(_FIRST_PERSON_PAIRS))
def test_first_person_facts_of_another_speaker_never_supersede(scenario: Scenario) -> None:
    assert sup(scenario.old, scenario.new, scenario.speaker, scenario.speaker) is not None
    assert sup(scenario.old, scenario.new, scenario.speaker, "Somebody Else") is None


def test_scenarios_get_the_expected_verdict() -> None:
    wrong = [
        s.name
        for s in SCENARIOS
        if (sup(s.old, s.new, s.speaker, s.speaker_of_new) is not None) != (s.kind == "supersede")
    ]
    assert wrong == []
