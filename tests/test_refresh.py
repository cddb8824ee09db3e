"""A read-only Memory follows its store's writer: new log records, and snapshots that truncated the log."""

from __future__ import annotations

from engine import Config, Memory


def test_reader_catches_up_with_writer(store, encoder) -> None:
    writer = Memory(store, Config.of(snapshot_every=3), encoder=encoder)
    first = writer.add("I grow chili peppers on my balcony.", tenant="t")
    reader = Memory(store, Config.of(read_only=True), encoder=encoder)
    assert [n.id for n in reader.notes("t")] == [first]
    second = writer.add("My neighbour lends me a ladder for the apple tree.", tenant="t")
    reader.refresh("t")
    assert {n.id for n in reader.notes("t")} == {first, second}
    more = [writer.add(f"Log line {i}: the weather station read {i} degrees.", tenant="t") for i in range(8)]
    writer.checkpoint()  # snapshots and truncates the log past what the reader has seen
    reader.refresh()
    assert {n.id for n in reader.notes("t")} == {first, second, *more}
    assert reader.search("ladder apple tree", tenant="t", k=1)[0].note.id == second
    writer.close()
    reader.close()


def test_refresh_sees_a_tenant_created_after_open(store, encoder) -> None:
    writer = Memory(store, Config(), encoder=encoder)
    writer.add("hello", tenant="a")
    reader = Memory(store, Config.of(read_only=True), encoder=encoder)
    nid = writer.add("a brand new tenant appears", tenant="b")
    assert reader.get(nid, tenant="b").content == "a brand new tenant appears"
    writer.close()
    reader.close()
