"""The A-MEM write loop: notes, links, evolution, re-embedding, batch-mates."""

from __future__ import annotations

import numpy as np

from engine import Config, Memory
from engine.text import tokens


def _add(mem: Memory, text: str, day: int, speaker: str = "Alice", tenant: str = "t") -> str:
    return mem.add(text, tenant=tenant, timestamp=f"2024-01-{day:02d}T10:00:00Z", speaker=speaker)


def test_note_has_keywords_tags_context(mem: Memory) -> None:
    nid = _add(mem, "I adopted a golden retriever puppy named Max from the shelter.", 1)
    note = mem.get(nid, tenant="t")
    assert {"retriever", "puppy", "shelter"} <= set(note.keywords)
    assert "pets" in note.tags
    assert "Alice" in note.context and "January 2024" in note.context
    assert note.timestamp.isoformat() == "2024-01-01T10:00:00+00:00"
    assert note.valid_at == note.timestamp and note.version == 1 and note.annotated_by == "embedded"


def test_related_notes_link_with_reason(mem: Memory) -> None:
    a = _add(mem, "I adopted a golden retriever puppy named Max.", 1)
    _add(mem, "My new job at the bank starts next Monday.", 2)
    b = _add(mem, "Max the golden retriever puppy chewed my shoes again.", 3)
    links = mem.get(b, tenant="t").links
    assert [link.target for link in links] == [a]
    assert "retriever" in links[0].reason or "cosine" in links[0].reason


def test_evolution_rewrites_neighbour_and_reembeds_in_place(mem: Memory, encoder) -> None:
    a = _add(mem, "I adopted a golden retriever puppy named Max.", 1)
    before = mem.get(a, tenant="t")
    _add(mem, "Max the golden retriever puppy loves swimming at Lake Tahoe.", 3)
    after = mem.get(a, tenant="t")
    assert after.version == before.version + 1
    assert after.context != before.context and "Related:" in after.context
    assert "tahoe" in after.context.lower() and "tahoe" not in tokens(after.content)
    expected = encoder.encode_batch([after.embedding_text(mem.config.write.max_content_chars)])[0]
    np.testing.assert_allclose(mem.vector(a, tenant="t"), expected, rtol=1e-5, atol=1e-6)
    assert mem.stats()["tenants"]["t"]["index_slots"] == 2  # overwritten where it lay, not appended
    [v1] = mem.history(a, tenant="t")
    assert v1.stage == "evolve" and v1.version == 1 and v1.note.context == before.context


def test_query_matching_only_evolved_context_finds_neighbour(mem: Memory) -> None:
    a = _add(mem, "I adopted a golden retriever puppy named Max.", 1)
    _add(mem, "I am reading a novel about dragons.", 2)
    _add(mem, "Max the golden retriever puppy loves swimming at Lake Tahoe.", 3)
    hits = mem.search("Tahoe", tenant="t", k=2, expand_links=False)
    assert a in [h.note.id for h in hits]


def test_batch_mates_see_each_other_in_time_order(encoder) -> None:
    mem = Memory(config=Config(), encoder=encoder)
    items = [
        {
            "content": "Max the golden retriever puppy chewed my shoes again.",
            "timestamp": "2024-01-03T10:00:00Z",
        },
        {"content": "I adopted a golden retriever puppy named Max.", "timestamp": "2024-01-01T10:00:00Z"},
    ]
    later, earlier = mem.add_many(items, tenant="t")
    assert [x.target for x in mem.get(later, tenant="t").links] == [earlier]
    assert mem.get(earlier, tenant="t").links == []  # a later note is never a candidate for an earlier one
    assert mem.get(earlier, tenant="t").version == 2  # evolved by its batch-mate


def test_several_updates_to_one_neighbour_apply_in_timestamp_order(encoder) -> None:
    mem = Memory(config=Config(), encoder=encoder)
    root = _add(mem, "I adopted a golden retriever puppy named Max.", 1)
    first, second = mem.add_many(
        [
            {
                "content": "Max the golden retriever puppy loves the beach at Santa Cruz.",
                "timestamp": "2024-01-05T10:00:00Z",
            },
            {
                "content": "Max the golden retriever puppy learned to fetch in Golden Gate park.",
                "timestamp": "2024-01-04T10:00:00Z",
            },
        ],
        tenant="t",
    )
    history = mem.history(root, tenant="t")
    assert [v.cause for v in history] == [second, first]
    assert [v.version for v in history] == [1, 2]
    assert mem.get(root, tenant="t").version == 3


def test_add_many_returns_ids_in_input_order_and_validates_first(mem: Memory) -> None:
    ids = mem.add_many([{"content": f"note number {i} about topic {i}"} for i in range(5)], tenant="t")
    assert len(set(ids)) == 5
    assert [mem.get(i, tenant="t").content for i in ids] == [
        f"note number {i} about topic {i}" for i in range(5)
    ]


def test_re_adding_a_source_id_is_skipped(mem: Memory) -> None:
    first = mem.add("I love jazz.", tenant="t", source_id="log.jsonl:1")
    again = mem.add("I love jazz.", tenant="t", source_id="log.jsonl:1")
    assert first == again and len(mem.notes("t")) == 1


def test_the_judge_is_told_which_stored_neighbours_are_fixed(encoder) -> None:
    """A stored neighbour's `fixed` (a question or a narrated event, kept per note) reaches the link judge,
    so the fact decision does not read its text again; a batch-mate's is left to the judge."""
    from engine.annotate.embedded import EmbeddedAnnotator

    seen: dict[str, bool | None] = {}

    class Recording(EmbeddedAnnotator):
        def judge_links(self, requests):  # type: ignore[no-untyped-def]
            seen.update({c.note.content: c.fixed for r in requests for c in r.candidates})
            return super().judge_links(requests)

    config = Config()
    mem = Memory(config=config, encoder=encoder, annotator=Recording(config, encoder))
    stored = ["Did you ever get the golden retriever puppy?", "I have a golden retriever puppy named Max."]
    for day, text in enumerate(stored, 1):
        _add(mem, text, day)
    mem.add_many(
        [
            {
                "content": "Max the golden retriever puppy chewed my shoes.",
                "timestamp": "2024-01-05T10:00:00Z",
            },
            {
                "content": "Max the retriever puppy chewed my shoes again!",
                "timestamp": "2024-01-06T10:00:00Z",
            },
        ],
        tenant="t",
    )
    assert [seen[text] for text in stored] == [True, False]
    assert seen["Max the golden retriever puppy chewed my shoes."] is None  # a batch-mate
