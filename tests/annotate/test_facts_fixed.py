"""`is_fixed`: the guard that reads the old statement alone, kept per note by the note table so a stored
neighbour is not read again in every write batch that offers it. Telling `decide` the answer must never
change a verdict, only skip the reading."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.annotate.facts.decision import FIXED, Statement, decide, is_fixed

PAIRS = [json.loads(line) for line in (Path(__file__).parents[2] / "bench/fact_pairs_train.jsonl").open()]


@pytest.mark.parametrize(
    ("text", "fixed"),
    [
        ("Where do you work these days?", True),
        ("We went hiking at Mount Tam last weekend with my cousins.", True),
        ("I drive a 2015 Camry.", False),
        ("My manager is Helen, she's really supportive.", False),
        ("moved to Denver in May, loving the mountains", False),  # a change, not a one-off event
    ],
)
def test_questions_and_narrated_events_are_fixed(text: str, fixed: bool) -> None:
    assert is_fixed(text) is fixed


def test_a_fixed_old_statement_is_kept_with_its_reason() -> None:
    old, new = "Where do you work these days?", "I work at Stripe now."
    assert decide(Statement(old), Statement(new)).reason == "kept: old statement is a question"
    told = decide(Statement(old, fixed=True), Statement(new))
    assert not told.supersedes and told.reason == f"kept: {FIXED}"


def test_telling_decide_what_the_column_holds_changes_no_verdict() -> None:
    """Over 526 pairs written blind (both orders, so the newer statement is also read as the old one),
    a decision told `fixed` gives the verdict of one that reads it."""
    similarity = 0.45  # a middling cosine, so the pairs that pass the guards reach the attribute test
    checked = fixed_seen = 0
    for pair in PAIRS:
        for old, new in ((pair["old"], pair["new"]), (pair["new"], pair["old"])):
            a, b = Statement(old, pair["old_speaker"]), Statement(new, pair["new_speaker"])
            told = Statement(old, pair["old_speaker"], is_fixed(old))
            assert decide(told, b, similarity).supersedes == decide(a, b, similarity).supersedes, (old, new)
            checked += 1
            fixed_seen += told.fixed is True
    assert checked == 2 * len(PAIRS) and 0 < fixed_seen < checked
