"""Pseudo-relevance feedback seeds picked without the query's names (RecallConfig.prf_content_seeds).

A fact question names the speaker; every turn of that speaker matches the name with about the same BM25,
so seeds picked by the whole query are arbitrary chit-chat, and their own keywords lift exactly them.
"""

from datetime import UTC, datetime, timedelta

import numpy as np

from engine import Config, Memory
from engine.recall.query import analyse
from engine.recall.rounds import lexical_scores
from engine.recall.view import view_of

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
CHAT = [
    "Just finished a great book about the ocean, ocean stories are the best.",
    "Traffic was terrible this morning, traffic everywhere downtown.",
    "Watched a documentary about octopuses, octopuses are wild.",
    "My coffee went cold again, cold coffee is sad.",
    "Lol that meme you sent was hilarious.",
]
QUERY = "What is Rachel's job title?"


def _tenant(encoder, fact: str, **levers) -> Memory:
    mem = Memory(config=Config.of(expand_links=False, k_neighbours=0, **levers), encoder=encoder)
    texts = [*CHAT, fact]
    mem.add_many(
        [
            {"content": t, "speaker": "Rachel", "timestamp": T0 + timedelta(days=i)}
            for i, t in enumerate(texts)
        ]
    )
    return mem


def _scores(mem: Memory, query: str, prf_weight: float, content_seeds: bool) -> dict[str, float]:
    """Lexical score (BM25 + feedback) of every note, by content."""
    with mem._pool.use("default") as t:
        tm = t.state
        info = analyse(query, view_of(tm).participants)
        mask = tm.mask(None, False)
        visible = np.flatnonzero(mask)
        out = lexical_scores(tm, info, mask, prf_weight, content_seeds).at(visible)
        return {tm.notes.at(int(s)).content: float(x) for s, x in zip(visible, out, strict=True)}


def test_name_tied_seeds_lifted_chit_chat_and_no_longer_do(encoder) -> None:
    fact = "I'm an associate at the law firm."
    mem = _tenant(encoder, fact, prf_content_seeds=True)
    plain = _scores(mem, QUERY, 0.0, False)
    assert plain == _scores(mem, "Rachel", 0.0, False)  # only the name matched: near-ties
    old = _scores(mem, QUERY, 0.3, False)
    lifted = [c for c in CHAT if old[c] > 2 * plain[c]]
    assert lifted and max(old[c] for c in lifted) > 2 * plain[fact]  # chit-chat seeds lifted themselves
    assert _scores(mem, QUERY, 0.3, True) == plain  # seeds by "job title": none match, no feedback
    assert mem.search(QUERY, k=1)[0].note.content == fact
    mem.close()


def test_a_content_seed_still_feeds_back_bounded_by_its_own_score(encoder) -> None:
    fact = "My job title is associate at the Hartley law firm."
    mem = _tenant(encoder, fact)
    plain, fed = _scores(mem, QUERY, 0.0, False), _scores(mem, QUERY, 0.3, True)
    assert fed[fact] > plain[fact]  # the seed matched "job title": its keywords add to it
    assert all(fed[c] == plain[c] for c in CHAT)  # chit-chat shares no keyword with it: unchanged
    assert fed[fact] - plain[fact] <= 0.3 * plain[fact] + 1e-6  # feedback scaled to the seed's score
    mem.close()
