"""engine.annotate.facts.stance: asserted vs hedged statements, and which hedges a question asks about."""

from __future__ import annotations

import pytest

from engine.annotate.facts.stance import (
    ASSERTED,
    HYPOTHETICAL,
    NEGATED,
    OTHER_PARTY,
    RELATIONS,
    asks_about,
    stance,
)


def party(word: str) -> int:
    return OTHER_PARTY + 1 + RELATIONS.index(word)


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("I drive a 2015 Camry.", ASSERTED),
        ("My manager is Helen, she's really supportive.", ASSERTED),  # the speaker's own relation
        ("someday I want to drive an EV, maybe when the Camry dies", HYPOTHETICAL),  # not (yet) true
        ("I almost sold the bike but didn't", NEGATED),  # a change that did not happen
        ("my daughter is learning Mandarin at school", party("daughter")),  # about someone else
        ("my parents moved to Spain", party("parent")),  # plural relation, one code
        ("she got a new job", OTHER_PARTY),  # a pronoun: another party, no relation word
    ],
)
def test_stance_of_a_statement(text: str, code: int) -> None:
    assert stance(text) == code


def test_a_question_asks_about_the_hedges_it_names() -> None:
    assert asks_about("What car does Kendra drive?") == frozenset()  # a plain question: the asserted fact
    assert HYPOTHETICAL in asks_about("What are Caroline's plans for the summer?")
    assert NEGATED in asks_about("Which gym did Kiara not cancel?")
    assert asks_about("What did Melanie's kids do?") == {party("kid")}
    # the relation asked about is the manager, not the coworker who has one
    assert party("coworker") not in asks_about("Who is Darius's manager?")
