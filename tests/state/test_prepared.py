"""A write batch's notes prepared before the tenant's lock (record, content columns, lexical terms) leave
the state that each stored note gives by itself: nothing prepared is stale or another note's."""

from __future__ import annotations

import random

import numpy as np

from engine.annotate.facts.decision import is_fixed
from engine.annotate.facts.stance import stance
from engine.model.changes import ChangeSet
from engine.state.lexical import LexicalIndex
from engine.state.prepared import lexical_text, prepare
from engine.state.record import encode
from engine.state.tenant_state import TenantMemory
from engine.text import has_time_expression
from tests.state.test_counts import _random_note
from tests.state.test_packed_state import _vec

TEXTS = [
    "I moved to Denver last month",
    "if I ever get a dog I'd call him Rex",
    "my sister never learned to drive",
    "what time is the game on Sunday?",
    "lunch at noon tomorrow with the team",
]


def _batches(seed: int) -> list[ChangeSet]:
    """New notes, evolved ones (same id and content, new links) and edited ones, a few per batch."""
    rng, content, out = random.Random(seed), {}, []
    for step in range(25):
        batch = ChangeSet()
        for j in range(rng.randint(1, 4)):
            note = _random_note(rng, 10 * step + j, list(content))
            note.content = content[note.id] = f"{rng.choice(TEXTS)} ({step}.{j})"
            note.speaker, note.keywords = rng.choice(["Ana", "Ben"]), rng.sample(["kayak", "visa", "rent"], 2)
            note.context = f"{note.speaker} talks about plans"
            batch.upserts.append((note, _vec(10 * step + j)))
        if step % 3 == 2:
            old = rng.choice(list(content))
            evolved = _random_note(rng, int(old[1:]), [i for i in content if i != old])
            evolved.version = 2  # a later version: its columns come from the table, under the lock
            evolved.content = content[old] = (
                content[old] if step % 6 == 2 else f"{rng.choice(TEXTS)} (edit {step})"
            )
            batch.upserts.append((evolved, _vec(step)))
        out.append(batch)
    return out


def test_prepared_writes_give_what_the_notes_themselves_give() -> None:
    tm, last = TenantMemory("t", 8), {}
    for batch in _batches(11):
        tm.apply(batch, prepared=prepare(batch))
        last.update({n.id: n for n, _ in batch.upserts})
    rebuilt = LexicalIndex()  # tokenised from each stored note's text, not from the prepared terms
    for note_id, note in last.items():
        slot = tm.index.slot_of[note_id]
        assert tm.notes.record(slot) == encode(note), note_id
        text = note.content
        assert tm.notes.chars[slot] == len(text) and tm.notes.timely[slot] == has_time_expression(text)
        assert tm.notes.stance[slot] == stance(text) and tm.notes.fixed[slot] == is_fixed(text)
        rebuilt.upsert(slot, lexical_text(note), *tm.validity_at(slot))
    assert len(last) > 50 and tm.notes.timely.any() and (tm.notes.stance != 0).any()  # texts exercised them
    for query in (
        "Denver",
        "dog Rex",
        "drive sister",
        "game Sunday",
        "lunch team",
        "Ana kayak",
        "visa plans",
    ):
        got, want = tm.lexical.top(query, 20, any_time=True), rebuilt.top(query, 20, any_time=True)
        assert len(want[0]) > 0 and np.array_equal(got[0], want[0]) and np.allclose(got[1], want[1]), query
