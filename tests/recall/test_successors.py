"""A retired note that matches a "now" search hands its place to the note that replaced it."""

from datetime import UTC, datetime, timedelta

import numpy as np

from engine import Config, Memory
from engine.recall.successors import hand_over
from engine.recall.visible import retired_too, visible

T0 = datetime(2024, 1, 8, 9, 0, tzinfo=UTC)
FILLERS = [
    "Did you see the game last night? What a finish!",
    "My coffee went cold again, classic.",
    "Lol that meme you sent was hilarious.",
]
OLD = "I work out at Gold's Gym on Fifth Street"
NEW = "membership at Equinox now, Gold's closed down"
QUERY = "Where does Sam work out?"


def _tenant(encoder, successor_weight: float = 1.0) -> tuple[Memory, str, str]:
    """Fillers, then OLD, then NEW, which the embedded rules judge to supersede it (checked)."""
    mem = Memory(config=Config.of(successor_weight=successor_weight), encoder=encoder)
    mem.add_many(
        [
            {"content": f, "speaker": "Sam", "timestamp": T0 + timedelta(hours=i)}
            for i, f in enumerate(FILLERS)
        ]
    )
    old = mem.add(OLD, speaker="Sam", timestamp=T0 + timedelta(days=2))
    new = mem.add(NEW, speaker="Sam", timestamp=T0 + timedelta(days=40))
    assert mem.get(old).superseded_by == new, "precondition: the rules retire OLD for NEW"
    return mem, old, new


def _slots(mem: Memory, *ids: str) -> list[int]:
    with mem._pool.use("default") as t:
        return [t.state.index.slot_of[i] for i in ids]


def _hand_over(mem: Memory, ranked: list[tuple[str, float]], weight: float = 1.0, k: int = 10) -> list[tuple]:
    slots = np.array(_slots(mem, *[i for i, _ in ranked]), dtype=np.int64)
    with mem._pool.use("default") as t:
        hits = hand_over(t.state, slots, np.array([s for _, s in ranked]), visible(t.state), weight, k)
    return [(h.note.id, round(h.score, 6), h.via) for h in hits]


def test_a_retired_note_hands_its_score_to_its_successor(encoder) -> None:
    mem, old, new = _tenant(encoder)
    filler = mem.search("coffee went cold", k=1)[0].note.id
    got = _hand_over(mem, [(old, 0.9), (filler, 0.5)])
    assert got == [(new, 0.9, f"replaces {old}, retired, which matched the query"), (filler, 0.5, None)]
    assert _hand_over(mem, [(old, 0.9), (filler, 0.5)], weight=0.5) == [
        (filler, 0.5, None),
        (new, 0.45, f"replaces {old}, retired, which matched the query"),
    ]
    # the successor's own, better score stands (once, without a via); k bounds the list
    assert _hand_over(mem, [(new, 0.95), (old, 0.9), (filler, 0.5)]) == [
        (new, 0.95, None),
        (filler, 0.5, None),
    ]
    assert _hand_over(mem, [(old, 0.9), (filler, 0.5)], k=1) == [(new, 0.9, got[0][2])]


def test_a_note_retired_without_a_successor_drops_out(encoder) -> None:
    mem, old, new = _tenant(encoder)
    mem.invalidate(new)  # the update itself stopped being true: nothing is current any more
    assert _hand_over(mem, [(old, 0.9), (new, 0.8)]) == []


def test_the_chain_is_followed_to_the_visible_note(encoder) -> None:
    mem, old, new = _tenant(encoder)
    newest = mem.add(
        "cancelled Equinox, I run in the park now", speaker="Sam", timestamp=T0 + timedelta(days=90)
    )
    assert mem.get(new).superseded_by == newest, "precondition: the rules retire NEW for the third"
    assert [h[0] for h in _hand_over(mem, [(old, 0.9)])] == [newest]


def test_search_now_names_what_the_hit_replaced_and_as_of_is_unchanged(encoder) -> None:
    mem, old, new = _tenant(encoder)
    off, _, _ = _tenant(encoder, successor_weight=0.0)
    hits = mem.search(QUERY, k=3, expand_links=False)
    assert hits[0].note.content == NEW and hits[0].via == f"replaces {old}, retired, which matched the query"
    assert all(h.note.id != old for h in hits)
    mid = T0 + timedelta(days=20)
    for kwargs in ({"as_of": mid}, {"include_superseded": True}):  # what was true is visible itself there
        got = [(h.note.content, h.score, h.via) for h in mem.search(QUERY, k=5, **kwargs)]
        assert got == [(h.note.content, h.score, h.via) for h in off.search(QUERY, k=5, **kwargs)]
    assert mem.search(QUERY, k=1, as_of=mid)[0].note.id == old


def test_retired_too_is_the_live_mask_only_while_a_note_is_retired(encoder) -> None:
    mem = Memory(config=Config.of(successor_weight=1.0), encoder=encoder)
    mem.add_many(
        [
            {"content": f, "speaker": "Sam", "timestamp": T0 + timedelta(hours=i)}
            for i, f in enumerate(FILLERS)
        ]
    )
    with mem._pool.use("default") as t:
        assert retired_too(t.state) is None
    first = mem.search(QUERY, k=1)[0].note.id
    mem.invalidate(first)
    with mem._pool.use("default") as t:
        wide = retired_too(t.state)
        assert wide is not None and wide.sum() == len(FILLERS) and visible(t.state).sum() == len(FILLERS) - 1
