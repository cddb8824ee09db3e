"""facts v5 on constructed pairs: endings that follow what ended, an old value named next to a new one,
returns to an earlier state, and 'still getting used to' read as a change; each with its guard.

`decide` is pure: the masked-statement cosine is an argument, so each case fixes it explicitly.
"""

from __future__ import annotations

from engine.annotate.facts.decision import Decision, Statement, decide


def judge(old: str, new: str, sim: float = 0.6) -> Decision:
    return decide(Statement(old, "Maya"), Statement(new, "Maya"), sim)


# --- endings -----------------------------------------------------------------------------------
def test_an_ending_that_follows_the_old_value_supersedes() -> None:
    d = judge("I play a lot of Fortnite.", "Fortnite is dead to me, all Apex now.", sim=0.2)
    assert d.reason == "superseded: same attribute 'old value 'fortnite' named', ending cue 'is dead'"


def test_an_ending_that_follows_the_old_head_word_supersedes() -> None:
    d = judge("I've got a cast on my arm.", "the cast came off this morning!", sim=0.55)
    assert d.reason == "superseded: same attribute 'similar statements (0.55)', ending cue 'came off'"


def test_an_ending_that_follows_something_else_is_no_change() -> None:
    d = judge("I keep my bike in the hallway.", "the hallway is a mess, the old flat is behind us", sim=0.35)
    assert d == Decision.keep("same attribute 'hallway', no change signal")


def test_no_more_and_done_with_end_the_thing_they_name() -> None:
    d = judge("I take melatonin every night.", "no more melatonin, sleeping fine without it", sim=0.35)
    assert d.reason == "superseded: same attribute 'melatonin', ending cue 'no more'"
    d = judge("I'm watching The Crown.", "done with The Crown, starting Slow Horses", sim=0.1)
    assert d.reason == "superseded: same attribute 'old value 'crown' named', ending cue 'done with'"


def test_tapered_off_and_deleted_end_the_old_value() -> None:
    d = judge("I'm on Zoloft.", "tapered off Zoloft in March", sim=0.3)
    assert d.reason == "superseded: same attribute 'old value 'zoloft' named', ending cue 'tapered off'"
    d = judge("I'm on Bumble.", "deleted Bumble, taking a break", sim=0.2)
    assert d.reason == "superseded: same attribute 'old value 'bumble' named', ending cue 'deleted'"


# --- an old value named next to a new one -------------------------------------------------------
def test_old_value_named_beside_a_new_one_with_a_change_cue_supersedes() -> None:
    d = judge("flying to Lisbon in June", "booked Porto instead of Lisbon, cheaper", sim=0.2)
    assert d.reason == (
        "superseded: same attribute 'old value 'lisbon' named', value 'lisbon' -> 'porto', change cue 'instead'"
    )


def test_old_value_named_beside_a_new_one_without_a_cue_is_a_restatement() -> None:
    d = judge("Dr. Patel is my dentist", "saw Dr. Patel at Brightsmile for a cleaning", sim=0.6)
    assert not d.supersedes


# --- a return to an earlier state -----------------------------------------------------------------
def test_getting_something_back_is_a_change() -> None:
    d = judge(
        "I've been walking to work since my bike was stolen.",
        "got my bike back, riding to work again",
        sim=0.5,
    )
    assert d.reason == "superseded: same attribute 'bike, work', change cue 'got my bike back'"


def test_a_bare_again_repeats_an_episode() -> None:
    d = judge("I drink my tea black.", "my tea went cold again, classic", sim=0.5)
    assert d == Decision.keep("same attribute 'similar statements (0.50)', no change signal")


# --- 'still getting used to' ----------------------------------------------------------------------
def test_still_getting_used_to_is_a_change_not_continuity() -> None:
    d = judge("I'm based in Denver.", "still getting used to Boston after Denver's sun", sim=0.3)
    assert d.reason == (
        "superseded: same attribute 'old value 'denver' named', value 'denver' -> 'boston', "
        "change cue 'getting used to'"
    )


def test_plain_still_keeps_the_fact() -> None:
    d = judge("I'm based in Denver.", "still in Denver, still loving it", sim=0.8)
    assert d == Decision.keep("continuity cue 'still'")
