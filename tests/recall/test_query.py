from engine.recall.query import analyse, has_time_expression, mentions

PEOPLE = ("Caroline", "Melanie")


def test_named_participants_are_found_possessive_and_case_too() -> None:
    assert analyse("What did Caroline's mom give her?", PEOPLE).speakers == {"Caroline"}
    assert analyse("what do caroline and MELANIE share?", PEOPLE).speakers == {"Caroline", "Melanie"}
    assert analyse("What did Carolines do?", PEOPLE).speakers == frozenset()


def test_strip_names_takes_names_out_of_the_lexical_query_only() -> None:
    info = analyse("What did Caroline's mom give her?", PEOPLE, strip_names=True)
    assert "Caroline" not in info.lexical and "mom give her" in info.lexical
    assert info.text == "What did Caroline's mom give her?"
    assert analyse("Caroline?", PEOPLE, strip_names=True).lexical == "Caroline?"  # nothing else left
    assert analyse("What did Caroline do?", PEOPLE).lexical == "What did Caroline do?"


def test_temporal_questions() -> None:
    for q in (
        "When did Melanie paint a sunrise?",
        "How long has Caroline had her friends?",
        "What year did it open?",
    ):
        assert analyse(q, PEOPLE).temporal, q
    for q in ("What did Melanie paint?", "Where did Caroline move from?"):
        assert not analyse(q, PEOPLE).temporal, q


def test_time_expressions_in_turns() -> None:
    for text in (
        "We went camping last week!",
        "I got a puppy two weeks ago",
        "It opened in 2019.",
        "See you Friday",
    ):
        assert has_time_expression(text), text
    for text in ("I love painting sunsets.", "My kids are great"):
        assert not has_time_expression(text), text


def test_mentions() -> None:
    assert mentions("Hey Caroline, how are you?", frozenset({"Caroline"}))
    assert not mentions("Hey Carol", frozenset({"Caroline"}))


def test_standing_questions_ask_what_holds_in_the_present_tense() -> None:
    for q in (
        "What does Suki do for a living?",
        "Where is Caroline's office?",
        "Who's Melanie's favourite artist?",
    ):
        assert analyse(q, PEOPLE).standing, q
    for q in (
        "What did Melanie paint?",
        "When is Caroline's wedding?",
        "Where has Melanie camped?",
        "What is the last book Melanie read?",
        "Hi there",
    ):
        assert not analyse(q, PEOPLE).standing, q
