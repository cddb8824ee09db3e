"""facts v5, decision step 3's last test: no shared word, an explicit change cue, and a sentence encoder
(MiniLM) that finds the speaker's own two statements close. Each guard of the step on a constructed pair."""

from __future__ import annotations

import functools

import pytest

from engine.annotate.facts.decision import SENTENCE, Decision, Statement, decide, similarity
from engine.annotate.facts.sentence import sentence_encoder


def judge(old: str, new: str, sentence: float | None, sim: float = 0.1, new_by: str = "Maya") -> Decision:
    return decide(Statement(old, "Maya"), Statement(new, new_by), sim, sentence)


def test_close_sentences_with_a_change_cue_supersede() -> None:
    d = judge("I'm insured with Allstate.", "switched my car cover to Lemonade", sentence=0.62)
    assert d == Decision(
        True,
        "superseded: same attribute 'close sentences (0.62) with a change cue 'switched'', change cue 'switched'",
        "close sentences (0.62) with a change cue 'switched'",
    )


def test_below_the_threshold_is_no_shared_attribute() -> None:
    d = judge("I'm insured with Allstate.", "switched my car cover to Lemonade", sentence=SENTENCE - 0.01)
    assert d == Decision.keep("no shared attribute")


def test_without_a_sentence_encoder_the_step_is_off() -> None:
    assert judge("I'm insured with Allstate.", "switched my car cover to Lemonade", None).reason == (
        "kept: no shared attribute"
    )


def test_no_change_cue_is_no_shared_attribute() -> None:
    d = judge("I'm insured with Allstate.", "Lemonade covers my car", sentence=0.9)
    assert d == Decision.keep("no shared attribute")


def test_a_habit_is_no_change_cue_here() -> None:
    d = judge("My phone number ends in 42.", "my phone battery dies so fast these days", sentence=0.9)
    assert d == Decision.keep("no shared attribute")


def test_an_old_statement_not_of_the_speaker_is_kept() -> None:
    d = judge("Mondays are rough.", "switched to four-day weeks now", sentence=0.9)
    assert d == Decision.keep("no shared attribute")


def test_long_statements_are_left_to_the_other_tests() -> None:
    long_new = (
        "switched my car cover to Lemonade after a long call with an agent "
        "who talked me through every option they had"
    )
    assert 20 < len(long_new.split()) <= 25  # beyond SENTENCE_WORDS, within the general path's MAX_WORDS
    d = judge("I'm insured with Allstate.", long_new, sentence=0.9)
    assert d == Decision.keep("no shared attribute")


def test_guards_decide_before_the_step() -> None:
    d = judge("I'm insured with Allstate.", "might switch my car cover to Lemonade", sentence=0.9)
    assert d == Decision.keep("hypothetical cue 'might'")
    d = judge("I'm insured with Allstate.", "my sister switched her car cover to Lemonade", sentence=0.9)
    assert d == Decision.keep("third person 'my sister'")


def test_the_real_sentence_encoder_finds_an_unworded_update() -> None:
    encoder = sentence_encoder()
    if encoder is None:
        pytest.skip("all-MiniLM-L6-v2 package not installed")
    old, new = "I listen to podcasts on Spotify.", "moved my podcast listening to Overcast"
    close = functools.partial(similarity, encoder.encode_batch, old, new)
    d = decide(Statement(old, "Maya"), Statement(new, "Maya"), 0.1, close)
    assert d.supersedes and d.reason.endswith("change cue 'moved'"), d.reason
