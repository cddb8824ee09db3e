"""Rounds 23 and 23b on constructed pairs: a change cue that passes or measures nothing changes nothing, a
named party whose later 'he' / 'she' says so is another person, and an ending cue whose own clause names the
old thing is a change in a long statement too. Each checked with its counterpart."""

from __future__ import annotations

import pytest

from engine.annotate.facts.change import change
from engine.annotate.facts.cues import third_party
from engine.annotate.facts.decision import Decision, Statement, decide


def judge(old: str, new: str, sim: float = 0.6) -> Decision:
    return decide(Statement(old, "Rosa"), Statement(new, "Rosa"), sim)


@pytest.mark.parametrize(
    ("old", "new", "changed"),
    [
        # a rise or fall of something the old statement did not measure: news about it, not a new value
        ("I get a council pension and the state one", "council pension went up 4% in April", False),
        ("my insulin is two units at night", "went up to four units after the review", True),
        ("the gym membership is £32 a month", "membership went up to £36 a month", True),
        # a change that passes
        ("we're with Sky broadband", "Sky broadband went down for the whole of Saturday", False),
        ("we're with Sky broadband", "Sky broadband went down for a few hours", False),
        ("I work the tills at Tesco", "moved to the Aldi tills for the money", True),
    ],
)
def test_a_change_cue_that_passes_or_measures_nothing(old: str, new: str, changed: bool) -> None:
    assert (change(old, new) is not None) is changed


@pytest.mark.parametrize(
    ("text", "party"),
    [
        ("Pam has left the Bach Choir for a gospel one, she says it's more fun", "pam"),
        ("Our Kieran's moved his savings into one of those apps", "my kieran"),
        ("Maria's started at the bakery, she loves it", "maria"),
        # no pronoun that points back, or the name is the speaker's object: not another party's news
        ("Dr Shah has moved me onto a lower dose", None),
        ("Amira qualified and moved out, the back room is free", None),
        ("My manager is Helen, she's great", None),
    ],
)
def test_a_named_subject_that_a_later_pronoun_points_back_to(text: str, party: str | None) -> None:
    assert third_party(text) == party


def test_another_partys_news_about_the_same_thing_keeps_the_fact() -> None:
    old = "I sing alto with the Bach Choir"
    new = "Pam has left the Bach Choir for a gospel one, she says it's more fun"
    assert judge(old, new) == Decision.keep("third person 'pam'")
    # the party the old fact was about may well change it
    assert judge(
        "my dentist is Mr Cole at Castle Street", "Mr Cole's retired, he sold the practice"
    ).supersedes


LONG_TAIL = (
    "and the dog barked all morning at the postman, the neighbours were not impressed with any of us at all"
)


@pytest.mark.parametrize(
    ("old", "new", "retires"),
    [
        # an ending cue whose own clause names the old thing: a change, however long the statement runs
        (
            "I send money home through Remitly every month",
            f"so I closed the Remitly account last week {LONG_TAIL}",
            True,
        ),
        (
            "my running buddy is Bramble, a collie",
            f"we lost Bramble in the spring, the new pup is Nessa {LONG_TAIL}",
            True,
        ),
        # the thing ended is in another clause, or passes
        (
            "We're with TalkTalk, 67Mb fibre",
            f"the Sky engineer never came so I cancelled the order, and TalkTalk {LONG_TAIL}",
            False,
        ),
        ("We're with TalkTalk, 67Mb fibre", f"TalkTalk dropped out for an hour on Sunday {LONG_TAIL}", False),
    ],
)
def test_a_long_statement_that_ends_the_old_thing_in_its_own_clause(
    old: str, new: str, retires: bool
) -> None:
    assert len(new.split()) > 25
    assert judge(old, new).supersedes is retires


def test_a_reversed_ending_is_no_change() -> None:
    old = "we're on TalkTalk, it's fine"
    new = "cancelled TalkTalk, then they offered half price so I un-cancelled"
    assert judge(old, new) == Decision.keep("negated past cue 'un-cancelled'")


def test_a_named_party_in_the_plain_past_is_another_party_unless_the_speaker_is_the_object() -> None:
    assert third_party("Kat gave up after two years of vegan, she was gone") == "kat"
    assert third_party("Shah has moved me onto a lower dose, she says it will help") is None


def test_an_ending_told_again_or_a_former_state_is_no_change_in_a_long_statement() -> None:
    old = "Lost my job as a banker yesterday, so I'm starting my own business"
    again = f"It's been tough going since I lost my job, but the business will pay off {LONG_TAIL}"
    assert not judge(old, again).supersedes
    former = f"I used to have a dog back in Michigan, then I got allergic {LONG_TAIL}"
    assert not judge("I still have that stuffed dog you gave me", former).supersedes
