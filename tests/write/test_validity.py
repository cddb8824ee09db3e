"""Fact validity, versions, near-duplicates and explicit edits (issue 4)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from engine import Config, Memory
from engine.errors import NotFound

FILLER = [
    "I watched a documentary about whales last night.",
    "The new bakery downtown has great croissants.",
    "My laptop battery keeps dying.",
    "We played board games until midnight.",
]


def _seed(mem: Memory, old: str, speaker: str = "Alice") -> str:
    mem.add_many(
        [
            {"content": f, "speaker": speaker, "timestamp": f"2023-01-0{i + 1}T09:00:00Z"}
            for i, f in enumerate(FILLER)
        ],
        tenant="t",
    )
    return mem.add(old, tenant="t", speaker=speaker, timestamp="2023-02-01T09:00:00Z")


def test_moved_supersedes_lived_and_as_of_sees_the_past(mem: Memory) -> None:
    old = _seed(mem, "I live in New York.")
    new = mem.add(
        "I moved to Seattle last month.", tenant="t", speaker="Alice", timestamp="2023-06-01T09:00:00Z"
    )
    retired = mem.get(old, tenant="t")
    assert retired.invalid_at == datetime(2023, 6, 1, 9, tzinfo=UTC) and retired.superseded_by == new
    assert retired.expired_at is not None and mem.history(old, "t")[-1].stage == "supersede"
    now = [h.note.id for h in mem.search("Where does Alice live?", tenant="t", k=5)]
    assert now[0] == new and old not in now
    then = [
        h.note.id for h in mem.search("Where does Alice live?", tenant="t", k=5, as_of="2023-03-01T00:00:00Z")
    ]
    assert then[0] == old and new not in then
    every = mem.search("Where does Alice live?", tenant="t", k=5, include_superseded=True)
    flags = {h.note.id: h.is_superseded for h in every}
    assert flags[old] is True and flags[new] is False


def test_additive_fact_does_not_supersede(mem: Memory) -> None:
    old = _seed(mem, "I have a dog named Rex.")
    mem.add("I also adopted a cat named Luna.", tenant="t", speaker="Alice", timestamp="2023-06-01T09:00:00Z")
    assert mem.get(old, tenant="t").invalid_at is None
    assert old in [h.note.id for h in mem.search("What pets does Alice have?", tenant="t", k=5)]


def test_third_person_fact_does_not_supersede(mem: Memory) -> None:
    old = _seed(mem, "I live in New York.")
    mem.add("My brother moved to Denver.", tenant="t", speaker="Alice", timestamp="2023-06-01T09:00:00Z")
    assert mem.get(old, tenant="t").invalid_at is None


def test_other_speaker_does_not_supersede(mem: Memory) -> None:
    old = _seed(mem, "I live in New York.")
    mem.add("I moved to Seattle last month.", tenant="t", speaker="Bob", timestamp="2023-06-01T09:00:00Z")
    assert mem.get(old, tenant="t").invalid_at is None


def test_rollback_restores_text_fields_and_vector(mem: Memory) -> None:
    nid = mem.add(
        "I adopted a golden retriever puppy named Max.", tenant="t", timestamp="2024-01-01T00:00:00Z"
    )
    v1_vec, v1 = mem.vector(nid, "t"), mem.get(nid, "t")
    mem.update(nid, tenant="t", context="A note about a dog and a lake", keywords=["dog", "lake"])
    assert not np.allclose(mem.vector(nid, "t"), v1_vec)
    restored = mem.rollback(nid, 1, tenant="t")
    assert (restored.context, restored.keywords, restored.version) == (v1.context, v1.keywords, 3)
    np.testing.assert_array_equal(mem.vector(nid, "t"), v1_vec)
    assert [v.stage for v in mem.history(nid, "t")] == ["update", "rollback"]
    with pytest.raises(NotFound):
        mem.rollback(nid, 99, tenant="t")


def test_invalidate_hides_from_default_search(mem: Memory) -> None:
    nid = mem.add("The office wifi password is tulip42.", tenant="t", timestamp="2024-01-01T00:00:00Z")
    mem.invalidate(nid, tenant="t", at="2024-02-01T00:00:00Z")
    assert nid not in [h.note.id for h in mem.search("wifi password", tenant="t")]
    assert nid in [h.note.id for h in mem.search("wifi password", tenant="t", as_of="2024-01-15T00:00:00Z")]


def test_near_duplicate_is_merged_with_occurrences(mem: Memory) -> None:
    first = mem.add(
        "I love hiking in the mountains!", tenant="t", speaker="Alice", timestamp=1_700_000_000, source_id="a"
    )
    again = mem.add(
        "I love hiking in the mountains!!",
        tenant="t",
        speaker="Alice",
        timestamp=1_700_100_000,
        source_id="b",
    )
    other = mem.add("I love hiking in the mountains!", tenant="t", speaker="Bob", timestamp=1_700_200_000)
    note = mem.get(first, "t")
    assert again == first and other != first
    assert note.source_ids == ["a", "b"] and len(note.occurrences) == 2
    assert "merge" in [v.stage for v in mem.history(first, "t")]


def test_delete_leaves_no_trace_after_reopen(store, encoder) -> None:
    with Memory(store, Config(), encoder=encoder) as mem:
        keep = mem.add("I like green tea.", tenant="t")
        gone = mem.add("My social security number is 123-45-6789.", tenant="t")
        mem.update(gone, tenant="t", context="sensitive identifier")
        mem.delete(gone, tenant="t")
        with pytest.raises(NotFound):
            mem.get(gone, "t")
    for path in (store / "tenants" / "t").rglob("*"):
        if path.is_file():
            assert b"123-45-6789" not in path.read_bytes(), path
    with Memory(store, Config(), encoder=encoder) as mem:
        assert [n.id for n in mem.notes("t")] == [keep]
        assert all(h.note.id != gone for h in mem.search("social security number", tenant="t"))
        assert mem.stats()["tenants"]["t"]["indexed"] == 1
        with pytest.raises(NotFound):
            mem.history(gone, tenant="t")


def test_versions_and_validity_persist(store, encoder) -> None:
    with Memory(store, Config(), encoder=encoder) as mem:
        nid = mem.add("The launch is on Friday.", tenant="t", timestamp="2024-01-01T00:00:00Z")
        mem.update(nid, tenant="t", context="launch date")
        mem.invalidate(nid, tenant="t", at="2024-01-05T00:00:00Z")
    with Memory(store, Config(), encoder=encoder) as mem:
        note = mem.get(nid, "t")
        assert note.invalid_at == datetime(2024, 1, 5, tzinfo=UTC) and note.version == 3
        assert [v.stage for v in mem.history(nid, "t")] == ["update", "invalidate"]


def test_a_supersession_reason_survives_the_snapshot(store, encoder) -> None:
    with Memory(store, Config(), encoder=encoder) as mem:
        old = mem.add("I live in New York.", tenant="t", timestamp="2023-02-01T09:00:00Z", speaker="Alice")
        mem.add("I moved to Seattle last month.", tenant="t", timestamp="2023-06-01", speaker="Alice")
        [retired] = [v for v in mem.history(old, "t") if v.reason.startswith("superseded")]
    with Memory(store, Config(), encoder=encoder) as mem:  # versions now come from the snapshot
        assert [v.reason for v in mem.history(old, "t") if v.reason] == [retired.reason]


def test_history_spans_snapshot_and_new_versions(store, encoder) -> None:
    with Memory(store, Config(), encoder=encoder) as mem:
        keep = mem.add("The garden needs watering on Mondays.", tenant="t", timestamp="2024-01-01T00:00:00Z")
        gone = mem.add("My locker code is 9911.", tenant="t", timestamp="2024-01-01T00:00:00Z")
        mem.update(keep, tenant="t", context="garden chores")
        mem.update(gone, tenant="t", context="locker")
    with Memory(store, Config(), encoder=encoder) as mem:  # history now comes from the snapshot
        mem.update(keep, tenant="t", context="garden chores, weekly")
        assert [(v.version, v.stage) for v in mem.history(keep, "t")] == [(1, "update"), (2, "update")]
        assert mem.history(keep, "t")[1].note.context == "garden chores"
        mem.delete(gone, tenant="t")
    with Memory(store, Config(), encoder=encoder) as mem:
        assert [v.version for v in mem.history(keep, "t")] == [1, 2]
        with pytest.raises(NotFound):
            mem.history(gone, "t")
        assert mem.stats()["tenants"]["t"]["versions"] == 2
