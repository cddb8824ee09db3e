"""A tenant's counts (links, superseded, fallback-annotated notes) come from columns kept by slot: they
must equal what decoding every note gives, through links gained and lost, supersession, deletes,
snapshots, and state files written before the columns."""

from __future__ import annotations

import random
from datetime import timedelta
from pathlib import Path

from engine.model.changes import ChangeSet
from engine.model.note import AnnotatedBy, Link, Note
from engine.state import packed
from engine.state.tenant_state import TenantMemory
from engine.storage.snapshot import write_snapshot
from tests.state.test_packed_state import T0, _note, _vec, reopen, state_file_without


def decoded_counts(tm: TenantMemory) -> tuple[int, int, int]:
    notes = [tm.notes[i] for i in tm.notes]
    return (
        sum(len(n.links) for n in notes),
        sum(n.invalid_at is not None for n in notes),
        sum(n.annotated_by == AnnotatedBy.FALLBACK for n in notes),
    )


def _random_note(rng: random.Random, i: int, ids: list[str]) -> Note:
    note = _note(i, content=f"note {i} {rng.choice(['about work', 'about the bike', 'a trip'])}")
    targets = rng.sample(ids, k=min(len(ids), rng.randint(0, 3)))
    note.links = [Link(t, "related", T0) for t in targets]
    note.annotated_by = rng.choice(list(AnnotatedBy))
    if rng.random() < 0.3:
        note.invalid_at = T0 + timedelta(days=i + 1)
    return note


def test_counts_follow_every_kind_of_write_and_survive_a_snapshot(tmp_path: Path) -> None:
    rng, tm, ids = random.Random(7), TenantMemory("t", 8), []
    for step in range(40):
        if ids and rng.random() < 0.2:  # a delete drops the links others had to it
            tm.apply(ChangeSet(deletes=[ids.pop(rng.randrange(len(ids)))]))
        elif ids and rng.random() < 0.4:  # an evolved note: same id and content, new links / annotator
            old = tm.notes[rng.choice(ids)]
            again = _random_note(rng, int(old.id[1:]), [i for i in ids if i != old.id])
            again.content = old.content
            tm.apply(ChangeSet(upserts=[(again, _vec(step))]))
        else:
            note = _random_note(rng, 100 + step, ids)
            tm.apply(ChangeSet(upserts=[(note, _vec(step))]))
            ids.append(note.id)
        assert tm.counts() == decoded_counts(tm), step
    links, superseded, fallbacks = tm.counts()
    assert links > 0 and superseded > 0 and fallbacks > 0  # the walk exercised each count
    write_snapshot(tmp_path, tm, 1, "enc")
    assert reopen(tmp_path).counts() == decoded_counts(tm)


def test_a_state_file_without_the_count_columns_reads_them_from_the_records_once(tmp_path: Path) -> None:
    rng, tm, ids = random.Random(3), TenantMemory("t", 8), []
    for i in range(12):
        note = _random_note(rng, i, ids)
        tm.apply(ChangeSet(upserts=[(note, _vec(i))]))
        ids.append(note.id)
    expected = decoded_counts(tm)
    fallback = {n.id for n in (tm.notes[i] for i in ids) if n.annotated_by == AnnotatedBy.FALLBACK}
    tm.adopt(packed.read(state_file_without(tmp_path, tm, ["links", "fallback"])))
    assert (tm.notes.links[: len(ids)] == -1).all() and (tm.notes.fallback[: len(ids)] == -1).all()
    assert tm.counts() == expected
    assert {n.id for n in tm.notes.fallback_notes(len(ids))} == fallback
    assert (tm.pack().columns["links"][: len(ids)] >= 0).all()
