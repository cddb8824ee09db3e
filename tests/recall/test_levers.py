"""Each shipped lever changes a ranking it should, on constructed notes (levers off: it does not)."""

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from engine import Config, Memory
from engine.annotate.embedded import EmbeddedAnnotator
from engine.recall.view import view_of

T0 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
PLAIN = {
    "k_neighbours": 0,
    "expand_links": False,
    "speaker_boost": 0.0,
    "temporal_boost": 0.0,
    "lexical_weight": 0.7,
}
PLAIN |= {
    "neighbour_weight": 0.0,
    "neighbour_window": 1,
    "second_round_weight": 0.0,
    "prf_weight": 0.0,
    "short_turn_penalty": 0.0,
    "hedged_penalty": 0.0,
    "center_queries": 0.0,
    "event_penalty": 0.0,
}


def _memory(encoder, turns: list[tuple[str, str, float]], **levers) -> Memory:
    """One note per (speaker, text, hours after T0)."""
    mem = Memory(config=Config.of(**(PLAIN | levers)), encoder=encoder)
    items = [
        {"content": text, "speaker": who, "timestamp": T0 + timedelta(hours=h), "metadata": {"n": i}}
        for i, (who, text, h) in enumerate(turns)
    ]
    mem.add_many(items)
    return mem


def _chat_then_fact(encoder, who: str, chat: list[str], fact: str, **levers) -> Memory:
    """One speaker's chit-chat, an hour apart, then the fact (note number len(chat))."""
    return _memory(encoder, [(who, t, i) for i, t in enumerate([*chat, fact])], **levers)


def _ranked(mem: Memory, query: str, k: int = 5) -> list[int]:
    return [h.note.metadata["n"] for h in mem.search(query, k=k)]


def _with(mem: Memory, **levers) -> Memory:
    mem.config = mem.config.with_(**levers)
    return mem


def test_speaker_boost_ranks_the_named_speakers_turn_first(encoder) -> None:
    turns = [
        ("Melanie", "Caroline, which class did you sign up for? The pottery class?", 0),
        ("Caroline", "Yes, pottery downtown, I signed up for it.", 0.001),
        ("Melanie", "Kids are at school today.", 2),
    ]
    mem = _memory(encoder, turns)
    query = "Which class did Caroline sign up for?"
    assert _ranked(mem, query)[0] == 0
    assert _ranked(_with(mem, speaker_boost=0.5), query)[0] == 1


def test_temporal_boost_favours_the_turn_that_says_when(encoder) -> None:
    turns = [
        ("Melanie", "Did Caroline do the charity run? The charity run for the shelter!", 0),
        ("Caroline", "Yes, I did the run last weekend.", 0.001),
        ("Melanie", "My garden is blooming.", 2),
    ]
    mem = _memory(encoder, turns, temporal_boost=0.3)
    assert _ranked(mem, "When did Caroline do the charity run?")[0] == 1
    assert _ranked(mem, "Did Caroline do the charity run?")[0] == 0  # not a "when" question
    assert _ranked(_with(mem, temporal_boost=0.0), "When did Caroline do the charity run?")[0] == 0


def test_short_turn_penalty_sinks_a_bare_greeting(encoder) -> None:
    turns = [
        ("Gina", "Go, Jon! Dance!", 0),
        ("Gina", "Jon, your dance studio opening night was a huge success.", 1),
        ("Gina", "I bought groceries at the market this morning, nothing special.", 2),
    ]
    mem = _memory(encoder, turns)
    assert _ranked(mem, "What did Gina say to Jon about dance?")[0] == 0
    assert _ranked(_with(mem, short_turn_penalty=1.0), "What did Gina say to Jon about dance?")[0] == 1


def test_hedged_penalty_prefers_the_asserted_fact_unless_asked_about_plans(encoder) -> None:
    # A plain question about the speaker wants what they assert, not what they only wish for.
    turns = [
        ("Kendra", "I drive a 2015 Camry to work.", 0),
        ("Kendra", "someday I want to drive an EV, maybe when the Camry dies", 24),
        ("Kendra", "The sunset yesterday was unreal.", 48),
    ]
    mem = _memory(encoder, turns)
    plain, plans = "What car does Kendra drive?", "What car does Kendra want to drive someday?"
    assert _ranked(mem, plain)[0] == 1
    assert _ranked(_with(mem, hedged_penalty=0.5), plain)[0] == 0
    assert _ranked(mem, plans)[0] == _ranked(_with(mem, hedged_penalty=0.5), plans)[0] == 1


def test_centred_queries_lift_the_fact_over_chit_chat_close_to_every_question(encoder) -> None:
    chat = [
        "Can you believe it's already the end of the month?",
        "Does anyone know a good taco place around here?",
        "The neighbours' dog was barking again last night.",
        "Trying a new bread recipe this weekend.",
        "Ugh, Mondays are the worst.",
        "Did you catch the match yesterday? Unreal ending!",
        "My tea went cold again, typical.",
        "Saw a film about whales, so good.",
    ]
    mem = _chat_then_fact(
        encoder, "Ana", chat, "I work out at the climbing gym on Fifth street.", lexical_weight=0.0
    )
    query = "Where does Ana work out?"
    assert _ranked(mem, query, k=1) != [len(chat)]  # the raw cosine prefers a line of chit-chat
    assert _ranked(_with(mem, center_queries=1.0), query, k=1) == [len(chat)]


def test_event_penalty_prefers_a_standing_fact_for_a_present_tense_question(encoder) -> None:
    # "What does Suki do?" asks what holds; a question or a narrated event states nothing that holds.
    chat = [
        "Went for a long walk by the river after lunch.",
        "Did anyone watch the match? What a finish!",
        "The neighbours' kids were loud again last night.",
        "Watched a documentary about octopuses, wild stuff.",
    ]
    fact = "i freelance as a copywriter, mostly for tech startups"
    mem = _chat_then_fact(encoder, "Suki", chat, fact, center_queries=1.0)
    now, then = "What does Suki do for a living?", "What did Suki do after lunch?"
    assert _ranked(mem, now, k=1) != [len(chat)]
    assert _ranked(_with(mem, event_penalty=0.2), now, k=1) == [len(chat)]
    assert _ranked(mem, then, k=1) == _ranked(_with(mem, event_penalty=0.2), then, k=1) == [0]


def test_neighbours_lift_the_answer_after_a_matching_question(encoder) -> None:
    turns = [("Melanie", f"Filler remark number {i} about the weather and the traffic.", i) for i in range(6)]
    turns += [
        ("Melanie", "What activities does your family enjoy doing together?", 10),
        ("Caroline", "Hiking in the hills and board games at home!", 10 + 5 / 3600),
        ("Caroline", "Family activities are important, I enjoy them together with my friends.", 20),
    ]
    mem = _memory(encoder, turns)
    query = "What activities does Caroline's family enjoy doing together?"
    assert 7 not in _ranked(mem, query, k=2)
    assert 7 in _ranked(_with(mem, neighbour_weight=0.5), query, k=2)


def test_session_neighbours_are_adjacent_and_close_in_time(encoder) -> None:
    mem = _memory(encoder, [("A", "one", 0), ("B", "two", 0.001), ("A", "three", 5)])
    with mem._pool.use("default") as t:
        view = view_of(t.state)
        slots = [
            t.state.index.slot_of[n.id] for n in sorted(t.state.notes.values(), key=lambda n: n.timestamp)
        ]
        near = view.neighbours(slots, gap_s=600).tolist()
    assert near[0] == [-1, slots[1]] and near[1] == [slots[0], -1] and near[2] == [-1, -1]
    assert set(view.participants) == {"A", "B"}


class _NoContext(EmbeddedAnnotator):
    """The embedded annotator without its context sentence (which names the previous turn's keywords)."""

    def annotate(self, items):
        return [replace(a, context="") for a in super().annotate(items)]


def test_second_round_reaches_a_note_only_linked_through_an_entity(encoder) -> None:
    config = Config.of(**PLAIN)
    mem = Memory(config=config, encoder=encoder, annotator=_NoContext(config, encoder))
    turns = [
        ("Caroline", "I adopted a puppy from the shelter, his name is Bingo.", 0),
        ("Melanie", "Bingo chased frisbees at the park all afternoon.", 5),
        ("Melanie", "Did you adopt from the shelter downtown?", 10),
        ("Melanie", "Shelter puppies adopted young settle in fast.", 15),
        ("Caroline", "My puppy's shelter adoption took weeks.", 20),
    ]
    mem.add_many([{"content": t, "speaker": w, "timestamp": T0 + timedelta(hours=h)} for w, t, h in turns])
    query = "What does Caroline's adopted shelter puppy do?"

    def bingo_score() -> float:
        return next(h.score for h in mem.search(query, k=5) if h.note.content.startswith("Bingo"))

    assert bingo_score() == 0.0  # no word of the query, and far from it in embedding space
    mem.config = config.with_(second_round_weight=0.4)
    lifted = bingo_score()
    mem.config = config.with_(second_round_weight=1.0)
    assert 0.0 < lifted < bingo_score()  # reached through "Bingo", a keyword of the top hit


def test_prf_adds_the_top_hits_keywords_to_the_lexical_query(encoder) -> None:
    turns = [
        ("Caroline", "My grandma gave me this necklace in Sweden.", 0),
        ("Melanie", "Sweden has long winters and midsummer feasts.", 5),
        ("Melanie", "I bought groceries.", 10),
        ("Melanie", "Necklaces are pretty; my mom gave me one too.", 15),
        ("Caroline", "I gave my old bike to a friend.", 20),
    ]
    mem = _memory(encoder, turns, lexical_weight=1.0)
    query = "Who gave Caroline the necklace?"

    def scores() -> dict[int, float]:
        return {h.note.metadata["n"]: h.score for h in mem.search(query, k=5)}

    plain = scores()
    assert max(plain, key=plain.__getitem__) == 0
    fed = scores() if _with(mem, prf_weight=1.0) else {}
    assert fed[1] / fed[0] > plain[1] / plain[0]  # "Sweden", a keyword of the top hit, now counts


@pytest.mark.parametrize("fusion", ["rrf", "zscore"])
def test_other_fusions_still_rank_an_exact_match_first(encoder, fusion: str) -> None:
    turns = [("A", "The violin recital is on Sunday.", 0), ("B", "I bought new running shoes.", 1)]
    assert _ranked(_memory(encoder, turns, fusion=fusion), "When is the violin recital?")[0] == 0


def test_session_neighbours_reach_two_turns_when_the_chain_is_unbroken(encoder) -> None:
    mem = _memory(encoder, [("A", "one", 0), ("B", "two", 0.001), ("A", "three", 0.002), ("B", "four", 5)])
    with mem._pool.use("default") as t:
        view = view_of(t.state)
        s = [t.state.index.slot_of[n.id] for n in sorted(t.state.notes.values(), key=lambda n: n.timestamp)]
        near = view.neighbours(s, gap_s=600, window=2).tolist()  # columns: -1, +1, -2, +2
    assert near[0] == [-1, s[1], -1, s[2]]
    assert near[2] == [s[1], -1, s[0], -1]  # "four" is 5 h later: no +1, so no +2 either
    assert near[3] == [-1, -1, -1, -1]


def test_session_neighbours_follow_a_write_and_name_no_slot_past_the_tenant(encoder) -> None:
    mem = _memory(encoder, [("A", "one", 0), ("B", "three", 0.002)])
    with mem._pool.use("default") as t:
        first, third = (
            t.state.index.slot_of[n.id] for n in sorted(t.state.notes.values(), key=lambda n: n.timestamp)
        )
        assert view_of(t.state).neighbours([first, third + 5], gap_s=600).tolist() == [[-1, third], [-1, -1]]
    mem.add_many([{"content": "two", "speaker": "C", "timestamp": T0 + timedelta(hours=0.001)}])
    with mem._pool.use("default") as t:
        second = next(s for s in t.state.index.slot_of.values() if s not in (first, third))
        near = view_of(t.state).neighbours([first, second, third], gap_s=600).tolist()
    assert near == [[-1, second], [first, third], [second, -1]]  # the new turn sits between the two


def test_neighbour_window_two_lets_an_answer_two_turns_later_share_the_score(encoder) -> None:
    config = Config.of(**PLAIN)
    mem = Memory(config=config, encoder=encoder, annotator=_NoContext(config, encoder))
    turns = [("Melanie", f"Filler remark number {i} about the weather and the traffic.", i) for i in range(6)]
    turns += [
        ("Melanie", "What activities does your family enjoy doing together?", 10),
        ("Caroline", "Sorry, the doorbell rang, the delivery guy brought a parcel.", 10 + 5 / 3600),
        ("Caroline", "Hiking in the hills and board games at home!", 10 + 10 / 3600),
    ]
    mem.add_many(
        [
            {"content": t, "speaker": w, "timestamp": T0 + timedelta(hours=h), "metadata": {"n": i}}
            for i, (w, t, h) in enumerate(turns)
        ]
    )
    query = "What activities does Caroline's family enjoy doing together?"

    def answer_score(window: int) -> float:
        _with(mem, neighbour_weight=0.5, neighbour_window=window)
        return next(h.score for h in mem.search(query, k=9) if h.note.metadata["n"] == 8)

    assert answer_score(2) > answer_score(1) + 0.05  # half the question turn's score beats the doorbell's


def test_prf_leaves_out_keywords_that_most_notes_of_a_big_tenant_hold(encoder, monkeypatch) -> None:
    import engine.recall.rounds as rounds

    turns = [("Caroline", "My grandma gave me this necklace in Sweden.", 0)]
    turns += [("Melanie", f"Sweden trip number {i} was lovely.", 1 + i) for i in range(6)]
    mem = _memory(encoder, turns, lexical_weight=1.0)
    with mem._pool.use("default") as t:
        seed = [t.state.index.slot_of[next(n.id for n in t.state.notes.values() if n.metadata["n"] == 0)]]
        words = rounds._new_keywords(t.state, seed, "Who gave Caroline the necklace?")
        assert "sweden" in words.lower()  # a small tenant: every keyword feeds back
        monkeypatch.setattr(rounds, "PRF_COMMON_MIN", 2)  # as if the tenant were big: 7 notes > 2
        monkeypatch.setattr(rounds, "PRF_COMMON", 0.5)  # "Sweden" is in all 7 notes, over the bar of 3.5
        fewer = rounds._new_keywords(t.state, seed, "Who gave Caroline the necklace?")
    assert "sweden" not in fewer.lower() and set(fewer.split()) < set(words.split())
