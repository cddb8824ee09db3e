"""engine.annotate.facts.decision: the general supersession decision on constructed pairs, reason by reason.

`decide` is pure: the masked-statement similarity is an argument, so each guard and each change signal is
tested with an explicit cosine; the last tests run the real encoder (WordLlama) and the embedded annotator.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from engine.annotate.embedded import EmbeddedAnnotator
from engine.annotate.facts import cues, occasions
from engine.annotate.facts.decision import Decision, Statement, decide, masked, similarity
from engine.annotate.schemas import EvolveRequest, NeighbourUpdate
from engine.config import Config
from engine.encode import WordLlamaEncoder
from engine.model.note import Note, new_id


def judge(old: str, new: str, sim: float = 0.6, old_by: str = "Maya", new_by: str = "Maya") -> Decision:
    return decide(Statement(old, old_by), Statement(new, new_by), sim)


# --- change signals ----------------------------------------------------------------------
def test_shared_head_noun_and_change_cue_supersede_with_reason() -> None:
    d = judge("My manager is Tom, he's hands-off.", "Priya's my manager since the reorg.", sim=0.25)
    assert d == Decision(True, "superseded: same attribute 'my manager', change cue 'since'", "my manager")


def test_ending_cue_on_the_old_value_supersedes() -> None:
    d = judge(
        "I drive a Subaru Outback.", "sold the Outback to my nephew, charging the Ioniq 5 is easy", sim=0.0
    )
    assert (
        d.supersedes
        and d.reason == "superseded: same attribute 'old value 'outback' named', ending cue 'sold'"
    )


def test_value_change_in_close_statements_supersedes() -> None:
    d = judge("I usually go to bed around 1am, total night owl.", "I'm asleep by 9:30 most nights", sim=0.45)
    assert (
        d.reason
        == "superseded: same attribute 'a value replaced in similar statements (0.45)', value '1am' -> '9:30'"
    )


def test_lexicon_frame_still_decides_what_it_reads() -> None:
    d = judge("I live in New York.", "I moved to Seattle last month.", sim=0.1)
    assert d.reason == "superseded: same attribute (frame) residence of Maya: New York -> Seattle"
    kept = judge("I live in NYC.", "I live in New York City, in Harlem.", sim=0.9)
    assert kept == Decision.keep("same attribute (frame) 'residence of Maya', same value")


def test_no_shared_attribute_is_kept_even_with_a_change_cue() -> None:
    d = judge("I bike to work every day.", "I'm obsessed with a new podcast now.", sim=0.1)
    assert d == Decision.keep("no shared attribute")


def test_same_attribute_without_a_change_is_a_restatement() -> None:
    d = judge("I bike to the office most days.", "biked to the office today, lovely morning", sim=0.35)
    assert d == Decision.keep("same attribute 'office', no change signal")
    same_values = judge("I make 110k at Acme.", "Acme pays me 110k, new title though", sim=0.6)
    assert same_values.reason.endswith("no change signal")


def test_the_old_party_named_again_is_no_third_party() -> None:
    # The old fact was about 'my roommate Jordan': a statement naming Jordan is about that party, even when
    # it also names who replaced them ('my cousin Tim').
    d = judge(
        "My roommate Jordan is a nurse.", "Jordan moved out in August, my cousin Tim took his room", sim=0.2
    )
    assert d.reason == "superseded: same attribute 'old value 'jordan' named', ending cue 'moved out'"
    other = judge("My roommate Jordan is a nurse.", "my cousin Tim moved to Ohio", sim=0.2)
    assert other == Decision.keep("third person 'my cousin'")


def test_a_denied_head_word_is_a_change() -> None:
    # 'no glasses' denies what 'I wear glasses' asserted; an old statement already saying 'no X' is no change.
    d = judge("I wear glasses every day.", "had surgery, no glasses for the first time!", sim=0.45)
    assert d.reason == "superseded: same attribute 'glasses', attribute negated 'no glasses'"
    same = judge("No glasses for me, perfect vision.", "still perfect vision, no glasses at 50", sim=0.6)
    assert not same.supersedes
    assert cues.negated_attribute("I drink coffee.", "coffee-free for a month") == "coffee-free"
    assert cues.negated_attribute("Talk to you soon!", "Hey! Long time no talk!") is None  # no fact, an idiom


def test_a_recurring_slot_filled_instead_is_the_same_attribute() -> None:
    # 'instead' replaces something; the shared weekly slot ('Saturdays') says what.
    d = judge(
        "I volunteer at the food bank on Saturdays.", "my Saturdays are at the animal shelter instead", 0.2
    )
    assert d.reason == "superseded: same attribute 'the same time slot 'saturday'', change cue 'instead'"
    no_cue = judge(
        "I volunteer at the food bank on Saturdays.", "my Saturdays are at the animal shelter", 0.2
    )
    assert no_cue == Decision.keep("no shared attribute")


# --- guards ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("new", "reason"),
    [
        ("I also adopted a cat last week.", "kept: additive cue 'also'"),
        ("found out I'm allergic to shellfish too, great", "kept: additive cue 'too,'"),
        ("on top of yoga I've started lifting twice a week", "kept: additive cue 'on top of'"),
        ("If I got the job in Austin I'd move in a heartbeat", "kept: hypothetical cue 'if'"),
        ("someday I want to drive an EV, maybe when the Camry dies", "kept: hypothetical cue 'someday'"),
        ("I've been thinking about going vegetarian", "kept: hypothetical cue 'thinking about'"),
        ("I never did quit the choir, despite all my complaining", "kept: negated past cue 'never did'"),
        ("I almost sold the bike but didn't", "kept: negated past cue 'almost'"),
        ("we didn't end up moving to Boulder", "kept: negated past cue 'didn't'"),
        ("yeah still in Portland, can't imagine leaving", "kept: continuity cue 'still'"),
        ("my brother just moved to Phoenix, he's loving the sun", "kept: third person 'my brother'"),
        ("my daughter is learning Mandarin at school", "kept: third person 'my daughter'"),
        ("Sarah's new number is 555-777-8888.", "kept: third person 'sarah'"),
        ("Did you move to Seattle?", "kept: new statement is a question"),
        ("dad finally sold his house in Denver and moved to Tampa", "kept: third person 'dad'"),
        ("little brother switched from law to accounting, mum is furious", "kept: third person 'brother'"),
        ("colleague of mine just moved to Boulder", "kept: third person 'colleague'"),
        ("the wife moved her office to Golden. Big change", "kept: third person 'wife'"),
        ("was gonna move to Boulder but the rent is mad", "kept: negated past cue 'was gonna'"),
        ("they offered me a place in Austin and I turned it down", "kept: negated past cue 'turned it down'"),
        ("landlord tried to move us out but backed down", "kept: negated past cue 'backed down'"),
        ("my sister talked me out of moving to Austin", "kept: negated past cue 'talked me out of'"),
        ("went to cancel the lease, got a discount, so I'm staying", "kept: continuity cue 'i'm staying'"),
        (
            "looked at flats in Austin, sticking with it here though",
            "kept: continuity cue 'sticking with it'",
        ),
        ("the address is unchanged, Denver it is", "kept: continuity cue 'unchanged'"),
        ("got dual residency in Portugal sorted!", "kept: additive cue 'dual'"),
        ("started a side hustle walking dogs in Boulder", "kept: additive cue 'side hustle'"),
        (
            "I was supposed to move to Boulder but it got cancelled",
            "kept: negated past cue 'was supposed to'",
        ),
        ("the rent went up and I considered moving to Boulder", "kept: hypothetical cue 'considered moving'"),
        ("Tomas sold his place in Denver, off to Tampa", "kept: third person 'tomas'"),
        ("my bf moved his stuff to Boulder, loves it there", "kept: third person 'my bf'"),
        ("Ana's Denver office closed, she works from home", "kept: third person 'ana'"),
        (
            "stood in the agent's office to sign for Boulder and chickened out",
            "kept: negated past cue 'chickened out'",
        ),
        (
            "the Boulder lease was ready to sign and we got cold feet",
            "kept: negated past cue 'got cold feet'",
        ),
        ("had a look at flats in Boulder, but Denver it is", "kept: continuity: 'denver' stays"),
    ],
)
def test_each_guard_keeps_the_old_fact_with_its_reason(new: str, reason: str) -> None:
    assert judge("I live in Denver and have a dog.", new, sim=0.9) == Decision(False, reason)


def test_a_new_value_replaces_only_one_of_its_kind() -> None:
    """A name is replaced by a name and a number by a number: a measurement of the old thing or a count of
    its troubles ('4th time this month') is news about it, not a new value."""
    measured = judge("I ride a Brompton to work", "the Brompton does 25km a day now, legs of steel", sim=0.6)
    counted = judge(
        "we're on the 100 Mbps fibre deal with Zen", "Zen down again, 4th time this month", sim=0.6
    )
    assert not measured.supersedes and not counted.supersedes
    assert cues.values("the Brompton does 25km a day") == {"brompton", "25"}
    raised = judge("rent is 650 a month for my room", "paying 720 for the room since the increase", sim=0.6)
    assert raised.supersedes
    waited = judge(
        "I take the metro to work, 35 minutes door to door", "metro so packed, I waited for 3 trains"
    )
    assert not waited.supersedes and cues.units("I waited for 3 trains") == {"3": "train"}
    moved = judge("the wedding is on 14 June, save the date", "we had to move the wedding to 6 September")
    assert moved.supersedes and "'14' -> '6'" in moved.reason  # a month is no unit: dates replace dates
    renamed = judge("my PSN is gabi_gol10, add me", "changed my PSN to rafinha_br, the old one was silly")
    assert renamed.supersedes and cues.values("my PSN is gabi_gol10") == {"psn", "gabi_gol10"}
    # a reference's digits are no number of anything; an age group's are
    assert cues.values("complaint ref VF-221908") == {"vf-221908"}
    assert cues.values("I coach the under-11s") == {"11"}
    ref = judge("I'm with Vodafone, the 150Mb one", "Vodafone down again, complaint ref VF-221908", sim=0.6)
    assert not ref.supersedes


def test_selling_out_ends_nothing() -> None:
    d = judge(
        "I run the cake stall at Leith market", "sold out of brownies at the Leith stall by noon", sim=0.6
    )
    assert not d.supersedes


def test_losing_ones_temper_ends_nothing() -> None:
    assert not judge(
        "My manager is Tom, he's fair.", "Tom lost it at the new intern today", sim=0.6
    ).supersedes
    assert judge("My manager is Tom, he's fair.", "lost Tom as my manager in the reorg", sim=0.6).supersedes


def test_a_late_regret_is_no_plan() -> None:
    """'should've done it years ago' says it is done: no hypothetical guard, so the change is read."""
    late = judge("I drive a Honda Civic.", "traded the Civic in, should've done it years ago", sim=0.6)
    plan = judge("I drive a Honda Civic.", "I should trade the Civic in, it's years old", sim=0.6)
    assert late.supersedes and "hypothetical" not in late.reason
    assert plan == Decision(False, "kept: hypothetical cue 'should'")


@pytest.mark.parametrize(
    "new",
    [
        "first week in the Boulder flat, still unpacking boxes",
        "moved to Boulder in May, still learning where everything is",
        "settled in Boulder now, still miss the Denver crowd",
    ],
)
def test_a_newcomers_still_is_no_continuity(new: str) -> None:
    assert "continuity" not in judge("I live in Denver.", new, sim=0.6).reason


@pytest.mark.parametrize(
    "new",
    [
        "sold the Subaru to my cousin last week, the Ioniq 5 is mine now",
        "the Subaru went to my cousin in Reno",
    ],
)
def test_a_party_after_a_preposition_is_no_subject(new: str) -> None:
    assert cues.third_party(new) is None
    assert judge("I drive a Subaru Outback.", new, sim=0.6).supersedes


def test_other_speaker_never_supersedes() -> None:
    d = judge("I live in Atlanta.", "I just moved to Nashville.", sim=0.9, new_by="Mike")
    assert d == Decision.keep("other speaker 'Mike'")


def test_a_bare_party_is_not_one_when_the_speaker_is_the_object_or_the_household() -> None:
    assert cues.third_party("boss moved me to nights") is None
    assert cues.third_party("boss moved to the Leeds office") == "boss"
    assert cues.third_party("the baby's got me going to bed at 9 these days") is None
    assert cues.third_party("baby number three arrived monday") is None
    assert cues.third_party("My boss is Karen.") is None  # 'my' parties are _THIRD_SUBJECT's to read
    d = judge("we have two kids, both under five", "baby number three arrived monday, everyone's fine")
    assert not d.reason.startswith("kept: third person")


def test_an_old_name_said_to_stay_keeps_the_old_fact() -> None:
    new = "bought a little motorbike for the summer, the Volvo stays for family stuff"
    assert judge("I drive a Volvo estate", new, sim=0.9) == Decision.keep("continuity: 'volvo' stays")
    kept = judge("I drive a Volvo estate", "we're keeping the old Volvo, the Vespa is just for fun", 0.9)
    assert kept == Decision.keep("continuity: 'volvo' stays")
    assert judge("I drive a Volvo estate", "sold the Volvo, got a motorbike", sim=0.9).supersedes


def test_same_third_party_subject_can_supersede() -> None:
    d = judge("My brother lives in Denver.", "My brother moved to Austin.", sim=0.5)
    assert d.supersedes and "brother" in d.reason


def test_old_question_and_old_past_event_are_not_facts() -> None:
    assert judge("Did you see the game? What a finish!", "shelved the game now", sim=0.9).reason == (
        "kept: old statement is a question"
    )
    assert judge("My coffee went cold again.", "my coffee is black these days", sim=0.9).reason == (
        "kept: old statement is a past event"
    )


def test_a_narrated_one_off_event_is_never_retired() -> None:
    # What happened once stays true: a later event of the same shape is history too, not a new value.
    old = "Maya repaired a rusty bicycle in Lisbon last week with Omar"
    d = judge(old, "Maya sold a rusty bicycle in Porto on Sunday with Omar", sim=0.9)
    assert d == Decision.keep("old statement is a one-off event ('last week')")
    assert occasions.one_off_event("Chloe photographed a broken guitar in Austin over the holidays") == (
        "over the holidays"
    )


def test_an_event_that_reports_a_change_or_a_standing_fact_is_no_one_off() -> None:
    # 'moved ... in May' establishes where one lives now: a later move still retires it.
    moved = judge("I moved to Seattle in May.", "We moved to Portland last week, Seattle is over.", sim=0.6)
    assert moved.supersedes
    assert (
        occasions.one_off_event("I'm training for a half marathon in April.") is None
    )  # present: a standing plan
    assert occasions.one_off_event("I repaired my bike.") is None  # no occasion named


# --- the pieces --------------------------------------------------------------------------------------
def test_masking_hides_values_and_keeps_the_frame() -> None:
    assert masked("My manager is Tom since March 2023.") == "My manager is someone since someone some"
    assert cues.values("I pay $1,400 for my place in Brooklyn.") >= {"1,400", "1400", "brooklyn"}


def test_compound_modifiers_are_not_the_attribute() -> None:
    assert "phone" not in cues.content_stems("My phone battery dies so fast")
    assert set(cues.content_stems("my number, save it")) >= {"number"}


# --- with the encoder ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def encoder() -> WordLlamaEncoder:
    return WordLlamaEncoder()


def test_masked_similarity_separates_the_attribute_from_chit_chat(encoder: WordLlamaEncoder) -> None:
    old = "I'm training for a half marathon in April."
    update = "skipped the April half, I'm training for the full Chicago marathon in October"
    assert similarity(encoder.encode_batch, old, update) > 0.5
    assert similarity(encoder.encode_batch, old, "Ugh, Mondays are rough.") < 0.3


def _note(content: str, speaker: str, days: int) -> Note:
    at = datetime(2024, 1, 1, tzinfo=UTC) + timedelta(days=days)
    return Note(id=new_id(), tenant="t", content=content, timestamp=at, speaker=speaker, keywords=["k"])


def test_embedded_evolve_records_the_decision_and_vetoes_an_unfounded_llm_claim(
    encoder: WordLlamaEncoder,
) -> None:
    ann = EmbeddedAnnotator(Config(), encoder)
    old = _note("I take lisinopril for my blood pressure.", "Frank", 0)
    new = _note("doc took me off lisinopril, I'm on amlodipine instead", "Frank", 30)
    [[update]] = ann.evolve([EvolveRequest(new, [old])])
    assert update.supersedes and update.reason.startswith("superseded: same attribute")
    chit_chat = _note("The sunset yesterday was unreal.", "Frank", 0)
    claims = [[NeighbourUpdate(target=chit_chat.id, supersedes=True, reason="llm says so")]]
    [[vetted]] = ann.vet_supersessions([EvolveRequest(new, [chit_chat])], claims)
    assert (
        not vetted.supersedes
        and vetted.reason.startswith("kept: ")
        and "overruled: llm says so" in vetted.reason
    )
    good = [[NeighbourUpdate(target=old.id, supersedes=True, reason="new medication")]]
    [[kept]] = ann.vet_supersessions([EvolveRequest(new, [old])], good)
    assert kept.supersedes and kept.reason.endswith("new medication")


def test_the_reason_is_recorded_on_the_retired_version_and_survives_the_record_codec() -> None:
    from engine import Memory
    from engine.model.records import version_from_record, version_to_record

    with Memory() as mem:
        old = mem.add(
            "My manager is Tom, he is hands-off.",
            tenant="x",
            timestamp="2024-01-01T00:00:00+00:00",
            speaker="Lena",
        )
        new = mem.add(
            "Priya is my manager now since the reorg.",
            tenant="x",
            timestamp="2024-03-01T00:00:00+00:00",
            speaker="Lena",
        )
        [version] = [v for v in mem.history(old, tenant="x") if v.stage == "supersede"]
    assert version.cause == new
    assert version.reason == "superseded: same attribute 'my manager', change cue 'now'"
    assert version_from_record(version_to_record(version)).reason == version.reason


# --- v2 signals -----------------------------------------------------------------------------------
def test_the_attribute_word_renewed_is_a_change() -> None:
    d = judge("My plumber is Joe Banks, reliable guy.", "hired a new plumber, Rosa, way faster", sim=0.4)
    assert d == Decision(
        True, "superseded: same attribute 'plumber', attribute renewed 'a new plumber'", "plumber"
    )
    again = judge(
        "I got a new phone case, bright red.", "a new phone case again lol, the red one cracked", sim=0.6
    )
    assert not again.supersedes  # 'a new phone case' in both: nothing was renewed


def test_a_party_named_in_the_old_statement_is_the_same_party() -> None:
    unnamed = judge("My sister lives in Lyon.", "Ana moved to Paris last spring", sim=0.5)
    assert unnamed == Decision.keep("old statement about 'my sister'")
    named = judge("My sister Ana lives in Lyon.", "Ana moved to Paris last spring", sim=0.5)
    assert "old statement about" not in named.reason


def test_a_title_is_not_a_vocative() -> None:
    assert cues.normalise("saw a new dentist, Dr. Alvarez, today") == "saw a new dentist, Dr. Alvarez, today"
    assert cues.normalise("Thanks, John!") == "Thanks!"


@pytest.mark.parametrize(
    ("text", "party"),
    [
        ("i drove my son to school, then work", None),
        ("my wife and I moved to Leeds in May", None),
        ("my mum's dentist appointment got moved to the 12th so i'm driving her", "my mum"),
        ("my brother moved to berlin", "my brother"),
    ],
)
def test_a_party_is_the_subject_only_when_named_before_the_speakers_own_i(
    text: str, party: str | None
) -> None:
    assert cues.third_party(text) == party


def test_someone_elses_change_told_by_a_speaker_who_says_i_later_is_kept() -> None:
    d = decide(
        Statement("my dentist appointment is on the 9th at 2pm", "Maya"),
        Statement("my mum's dentist appointment got moved to the 12th so i'm driving her", "Maya"),
        0.8,
    )
    assert d == Decision.keep("third person 'my mum'")


def test_the_old_statements_party_named_by_its_bare_relation_word_is_the_same_party() -> None:
    d = decide(
        Statement("My mum lives in Valencia, I visit every summer", "Maya"),
        Statement("Mum finally moved back to Seville to be near her sisters", "Maya"),
        0.8,
    )
    assert "old statement about" not in d.reason
