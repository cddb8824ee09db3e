"""Decision step 5: the learned pair judge retires what the rules kept for want of a shared attribute or a
change signal, only when nearly sure, only for an old fact that is nobody else's, and never past a guard."""

from __future__ import annotations

import pytest

from engine.annotate.facts.decision import JUDGE, MAX_WORDS, STORY_WORDS, Decision, Statement, decide


def judged(old: str, new: str, p: float | None, new_by: str = "Maya", sim: float = 0.1) -> Decision:
    return decide(Statement(old, "Maya"), Statement(new, new_by), sim, None, None if p is None else lambda: p)


def never() -> float:
    raise AssertionError("the judge was asked although the rules had decided")


RENT = "we rent a flat downtown"
HOUSE = "finally closed on the house in Ballard, keys on friday"


def test_a_sure_judge_retires_what_the_rules_kept() -> None:
    assert judged(RENT, HOUSE, None) == Decision.keep("no shared attribute")
    assert judged(RENT, HOUSE, 0.995) == Decision(
        True, "superseded: the pair judge reads a change (0.99)", attribute="pair judge"
    )


def test_below_the_threshold_the_rules_verdict_stands() -> None:
    assert judged(RENT, HOUSE, JUDGE - 0.001) == Decision.keep("no shared attribute")


def test_same_attribute_without_a_change_signal_is_judged_too() -> None:
    old, new = "my commute is long", "my commute is a breeze, twenty minutes door to door"
    rules = judged(old, new, None, sim=0.9)
    assert not rules.supersedes and rules.reason.endswith("no change signal")
    assert judged(old, new, 0.99, sim=0.9).supersedes


STORY = (
    "the Foundry is tiny and the music is awful but I haven't waited for a squat rack once since joining, "
    "and the coach there fixed my deadlift form in one session, so I'm a happy woman"
)


LONG_OLD_FACT = (
    "i live at 14 elm road with the other second years, the house is falling apart and the landlord "
    "never answers but it's five minutes from campus"
)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("I train at PureGym on Deansgate, rammed at 6pm", STORY),  # an update told as a story
        (
            LONG_OLD_FACT,
            "keys for 7 park terrace collected, boxes absolutely everywhere",
        ),  # and the other way
    ],
)
def test_a_short_statement_beside_a_long_one_goes_to_the_judge(old: str, new: str) -> None:
    shorter, longer = sorted((len(old.split()), len(new.split())))
    assert shorter <= MAX_WORDS < longer <= STORY_WORDS
    assert judged(old, new, None) == Decision.keep(
        f"longer than {MAX_WORDS} words and not read by the lexicon"
    )
    assert judged(old, new, 0.99).supersedes


def test_two_long_turns_or_a_rambling_one_are_never_judged() -> None:
    long_old = "I train at PureGym on Deansgate " + "and honestly " * 10 + "I hate it"
    rambling = STORY + ", " + "and then we went for food " * 3
    assert len(rambling.split()) > STORY_WORDS
    for old, new in ((long_old, STORY), ("I train at PureGym on Deansgate", rambling)):
        assert not decide(Statement(old, "Maya"), Statement(new, "Maya"), 0.1, None, never).supersedes


@pytest.mark.parametrize(
    ("new", "why"),
    [
        ("thinking about buying a house in Ballard someday", "hypothetical"),
        ("we also bought a cabin by the lake", "additive"),
        ("my brother closed on a house in Ballard", "third person"),
        ("did you close on the house yet?", "question"),
    ],
)
def test_guards_come_first_and_the_judge_is_not_asked(new: str, why: str) -> None:
    d = decide(Statement(RENT, "Maya"), Statement(new, "Maya"), 0.1, None, never)
    assert not d.supersedes and why in d.reason


def test_another_speaker_is_kept_without_asking_the_judge() -> None:
    d = decide(Statement(RENT, "Maya"), Statement(HOUSE, "Leo"), 0.1, None, never)
    assert d == Decision.keep("other speaker 'Leo'")


def test_a_rules_supersession_does_not_ask_the_judge() -> None:
    d = decide(
        Statement("I live in Boston.", "Maya"), Statement("I live in Denver now.", "Maya"), 0.9, None, never
    )
    assert d.supersedes and "pair judge" not in d.reason


@pytest.mark.parametrize(
    "old",
    ["my sister's office is on 5th street", "Wow Jon, you look so happy at the office on 5th street"],
)
def test_an_old_statement_about_another_party_or_the_listener_is_left_to_the_rules(old: str) -> None:
    assert judged(old, "the office is down by the harbour, a nice walk", 1.0).reason.startswith("kept:")


def test_an_old_statement_about_things_with_no_one_named_is_the_speakers_to_judge() -> None:
    """Round 23: 'Gas and electric are with British Gas' is the speaker's word on their own life; on the
    sixteenth to thirty-first sets (unseen by judge v10) judging such facts found 37 more of 1,120 updates
    and retired 2 more of 1,440 true facts, and retired no more LoCoMo dev chat turns."""
    assert judged(
        "Gas and electric are with British Gas", "Octopus sent the first bill, forty quid less", 0.99
    ).supersedes


def test_the_old_values_said_again_are_a_restatement_the_judge_cannot_retire() -> None:
    old = "my car is a blue Corolla from 2015"
    again = judged(old, "took the Corolla through the car wash, 2015 never looked so good", 1.0)
    assert again == Decision.keep("no shared attribute")
    one_of_two = judged(old, "took the Corolla to the scrapyard, a bike for me from here on", 1.0)
    assert one_of_two.supersedes and "pair judge" in one_of_two.reason


@pytest.mark.parametrize(
    "old",
    [
        "i drive a 2012 honda civic",
        "im vegetarian, have been since uni",
        "We live in Capitol Hill, near the park",
        "renting a room near the station, four of us and one bathroom",
    ],
)
def test_the_speaker_typed_in_lower_case_owns_the_old_fact(old: str) -> None:
    """Chat types 'i' and 'im', or drops the 'I' ('renting a room ...'); a sentence opens with 'We': the
    judge may read these as the speaker's own."""
    assert judged(old, "keys to the new place are in my hand, goodbye rental life", 0.99).supersedes


@pytest.mark.parametrize(
    "new",
    [
        "train was late again this morning, third time this week",
        "the train was packed today, stood the whole way",
    ],
)
def test_a_day_in_the_old_facts_life_is_not_a_change_the_judge_may_read(new: str) -> None:
    old = "i get the train to work, 45 min"
    assert judged(old, new, 0.99) == Decision.keep("no shared attribute")
    assert judged(old, "sold my season ticket, the bike gets me in faster", 0.99).supersedes


def test_a_new_value_told_the_day_it_came_is_no_day_in_the_old_facts_life() -> None:
    old = "saved about 6k for the deposit so far"
    assert judged(old, "deposit pot hit 9k today, getting there", 0.99).supersedes
    assert judged(old, "deposit pot got a bit bigger today", 0.99) == Decision.keep("no shared attribute")


def test_a_judge_without_a_model_is_no_verdict() -> None:
    assert judged(RENT, HOUSE, None) == decide(
        Statement(RENT, "Maya"), Statement(HOUSE, "Maya"), 0.1, None, lambda: None
    )


# --- the engine: one batch of judgements per write, and the switch --------------------------------------
OLD_FACTS = ["we rent a flat downtown", "I bank with Chase", "I drive a Honda Civic"]
UPDATES = [
    "finally closed on the house in Ballard, keys on friday",
    "all my accounts are at the credit union these days",
    "the civic is gone, it's the bus for me",
]


@pytest.mark.parametrize("on", [True, False])
def test_a_write_asks_the_judge_once_for_its_whole_batch(monkeypatch: pytest.MonkeyPatch, on: bool) -> None:
    from engine import Config, Memory
    from engine.annotate.facts.pair_judge import PairJudge, pair_judge

    if pair_judge() is None:
        pytest.skip("the MiniLM package is not installed")
    calls: list[int] = []
    real = PairJudge.probabilities

    def counted(self: PairJudge, pairs: list[tuple[str, str]]) -> object:
        calls.append(len(pairs))
        return real(self, pairs)

    monkeypatch.setattr(PairJudge, "probabilities", counted)
    with Memory(config=Config.of(fact_judge=on)) as mem:
        for day, text in enumerate(OLD_FACTS, 1):
            mem.add(text, tenant="t", timestamp=f"2024-01-0{day}T09:00:00+00:00", speaker="Maya")
        calls.clear()
        items = [{"content": u, "timestamp": "2024-06-01T09:00:00+00:00", "speaker": "Maya"} for u in UPDATES]
        mem.add_many(items, tenant="t")
    if on:
        assert len(calls) == 1 and calls[0] >= 2  # the pairs of several updates, judged together
    else:
        assert calls == []
