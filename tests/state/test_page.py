"""Paging a tenant's notes in creation order from the `created` column: every live note exactly once, in
(created_at, id) order, across ties at page edges, deletes, notes added while paging, snapshots, and
state files written before the column."""

from __future__ import annotations

import random
from datetime import timedelta
from pathlib import Path

import pytest

from engine import Memory
from engine.encode import Encoder
from engine.errors import InputError
from engine.model.changes import ChangeSet
from engine.state import packed
from engine.state.record import micros
from engine.state.tenant_state import TenantMemory
from engine.storage.snapshot import write_snapshot
from tests.state.test_packed_state import T0, _note, _vec, reopen, state_file_without


def _tenant(n: int, seed: int) -> TenantMemory:
    """`n` notes whose creation times collide often (ties the id must order) and whose slots are not
    in creation order (a deleted note's slot is reused)."""
    rng, tm = random.Random(seed), TenantMemory("t", 8)
    notes = [_note(i) for i in range(n)]
    for note in notes:
        note.created_at = T0 + timedelta(seconds=rng.randrange(n // 3 + 1))
    rng.shuffle(notes)
    notes[2].created_at = T0.replace(year=1960)  # before the epoch: negative microseconds, still known
    for i in range(0, n, 5):
        tm.apply(ChangeSet(upserts=[(x, _vec(j)) for j, x in enumerate(notes[i : i + 5])]))
    tm.apply(ChangeSet(deletes=[notes[0].id, notes[7].id]))
    return tm


def _all_pages(tm: TenantMemory, limit: int, after: tuple[int, str] | None = None) -> list[str]:
    seen: list[str] = []
    while True:
        page, more = tm.notes.page(after, limit)
        seen += [n.id for n in page]
        if not more:
            return seen
        after = (micros(page[-1].created_at), page[-1].id)


def _expected(tm: TenantMemory) -> list[str]:
    notes = [tm.notes[i] for i in tm.notes]
    return [n.id for n in sorted(notes, key=lambda n: (n.created_at, n.id))]


@pytest.mark.parametrize("limit", [1, 2, 3, 7, 100])
def test_pages_give_every_live_note_once_in_creation_order(limit: int) -> None:
    tm = _tenant(40, seed=limit)
    assert _all_pages(tm, limit) == _expected(tm)


def test_a_note_added_while_paging_comes_on_a_later_page(tmp_path: Path) -> None:
    tm = _tenant(30, seed=1)
    first, more = tm.notes.page(None, 10)
    assert more
    late = _note(99)
    late.created_at = T0 + timedelta(days=1)
    tm.apply(ChangeSet(upserts=[(late, _vec(99))]))
    rest = _all_pages(tm, 10, after=(micros(first[-1].created_at), first[-1].id))
    assert [n.id for n in first] + rest == _expected(tm) and rest[-1] == "n99"
    write_snapshot(tmp_path, tm, 1, "enc")
    assert _all_pages(reopen(tmp_path), 4) == _expected(tm)


def test_a_state_file_without_the_created_column_pages_from_the_records(tmp_path: Path) -> None:
    tm = _tenant(25, seed=4)
    expected = _expected(tm)
    tm.adopt(packed.read(state_file_without(tmp_path, tm, ["created"])))
    assert (tm.notes.created[: tm.index.num_slots] == -1).all()
    assert _all_pages(tm, 6) == expected


def test_memory_page_takes_the_cursor_as_a_time_and_an_id(tmp_path: Path, encoder: Encoder) -> None:
    with Memory(tmp_path / "s", encoder=encoder) as mem:
        mem.add_many([{"content": f"line {i} about the garden"} for i in range(9)], tenant="t")
        first, more = mem.page("t", limit=4)
        last = first[-1]
        rest, done = mem.page("t", after=(last.created_at.isoformat(), last.id), limit=10)
        by_order = sorted(mem.notes("t"), key=lambda n: (n.created_at, n.id))
        assert more and not done and [n.id for n in first + rest] == [n.id for n in by_order]
        assert mem.page("nobody") == ([], False) and mem.count("t") == 9 and mem.count("nobody") == 0
        with pytest.raises(InputError, match="limit"):
            mem.page("t", limit=0)
