"""Round 22 on constructed pairs: a statement is read less its questions, and a guard cue or another party
in a trailing aside guards nothing; a guard before the news still governs it. Each with its reason."""

from __future__ import annotations

import pytest

from engine.annotate.facts.clauses import before_aside, stated
from engine.annotate.facts.decision import Decision, Statement, decide, is_fixed


def judge(old: str, new: str, sim: float = 0.6, p: float | None = None) -> Decision:
    return decide(Statement(old, "Maya"), Statement(new, "Maya"), sim, None, None if p is None else lambda: p)


@pytest.mark.parametrize(
    ("text", "told"),
    [
        ("I'm on Zoloft.", "I'm on Zoloft."),  # no question: the statement whole, however short
        ("How are you?", ""),
        ("Did you see the game? What a finish!", ""),  # three words besides the question tell nothing
        ("Vet bill came to £400. Should I query it?", "Vet bill came to £400."),
        ("Vet bill came to £400. Is that normal for a dental?", ""),  # asks about the world, not the speaker
        ("the new kettle arrived, how do I descale it?", "the new kettle arrived"),
        ("Can you help me swap my rota? I'm on lates all week now.", "I'm on lates all week now."),
        ("Could you tell me more? I'm all ears now.", ""),  # asks back: a chat turn, not news
        ("Hey! Guess what? I'm now on lates.", "Hey! I'm now on lates."),  # a short question: an interjection
        (
            "Loving the new flat. Any tips for Leeds? Moved in Friday.",
            "Loving the new flat. Moved in Friday.",
        ),
        # not in the form of a question: a statement with a question mark, kept whole
        (
            "thinking I should get a cheaper gym, maybe PureGym? the Y is £60 a month",
            "thinking I should get a cheaper gym, maybe PureGym? the Y is £60 a month",
        ),
    ],
)
def test_a_statement_is_read_less_its_questions(text: str, told: str) -> None:
    assert stated(text) == told


def test_news_told_before_a_question_is_read() -> None:
    old = "my phone is a Galaxy S9"
    d = judge(old, "the Pixel 7 came today, how do I move my photos across?", sim=0.3, p=0.99)
    assert d.reason == "superseded: the pair judge reads a change (0.99)"
    assert judge(old, "should I get a Pixel 7?", p=0.99) == Decision.keep("new statement is a question")


def test_an_old_statement_that_asks_stays_fixed() -> None:
    # As an old fact a line that asks is chat small talk more often than not (LoCoMo asks back after
    # nearly every line), so it is never retired, though a new one is read less its questions.
    assert is_fixed("I'm with Ovo for the electric, can you help me check the tariff?")
    assert is_fixed("Which supplier are you with?")
    assert not is_fixed("I'm with Ovo for the electric.")


def test_a_guard_cue_in_a_trailing_aside_guards_nothing() -> None:
    old, new = "I swim 40 lengths every morning", "swim 60 lengths now, and my shoulders still ache"
    assert before_aside(old, new) == "swim 60 lengths now"
    assert judge(old, new).reason == "superseded: same attribute 'lengths', change cue 'now'"
    lido = "I swim 40 lengths at the Lido every morning"  # the aside names the old thing: it guards
    assert judge(lido, "swim 60 lengths now, still at the Lido") == Decision.keep("continuity cue 'still'")


def test_a_party_in_a_trailing_aside_guards_nothing() -> None:
    old, new = (
        "we pay 900 rent for the flat",
        "rent for the flat goes to 975 in May, my sister thinks that's steep",
    )
    assert before_aside(old, new) == "rent for the flat goes to 975 in May"
    assert judge(old, new).supersedes


def test_a_guard_before_the_news_governs_it() -> None:
    old = "I climb at The Arch"
    new = "maybe I should try the Castle, their climbing walls are newer"
    assert before_aside(old, new) is None
    assert judge(old, new, p=0.99) == Decision.keep("hypothetical cue 'maybe'")


def test_an_aside_that_names_the_old_thing_still_guards() -> None:
    old, new = "I drive a Corsa", "picked up a Yaris on Saturday, but I'm keeping the Corsa too"
    assert before_aside(old, new) is None
    assert not judge(old, new, p=0.99).supersedes


def test_an_aside_about_someone_else_is_not_cut() -> None:
    old = "my number is 07700 900123"
    new = "my apprentice got a new number, 07700 900456, ring him if I'm up a ladder"
    assert before_aside(old, new) is None


def test_after_an_aside_is_cut_the_judge_is_not_asked() -> None:
    # The judge reads the whole statement, the aside's cue included: the rules decide what is left.
    old, new = "I'm on the Tuesday league team", "league night was chaos, I still can't believe we won"
    assert before_aside(old, new) == "league night was chaos"
    assert not judge(old, new, sim=0.2, p=0.99).supersedes


def test_an_ending_that_recurs_or_passes_ends_nothing() -> None:
    old = "our broadband is Virgin fibre"
    assert not judge(old, "Virgin fibre dropped again this evening", sim=0.7).supersedes
    assert not judge(old, "Virgin fibre dropped out for an hour", sim=0.7).supersedes
    assert judge("I take melatonin every night.", "dropped melatonin, sleeping fine", sim=0.35).supersedes


def test_a_plan_with_a_question_mark_still_guards() -> None:
    old = "I swim at the Y three mornings a week"
    new = "thinking I should get a cheaper gym, maybe PureGym? the Y is £60 a month"
    assert judge(old, new, p=0.99) == Decision.keep("hypothetical cue 'should'")
