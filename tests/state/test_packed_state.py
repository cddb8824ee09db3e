"""The snapshot's state file: a reopened tenant reads its notes from the map, and changes after it land in
an overlay; a damaged state file falls back to the Parquet notes with a warning."""

from __future__ import annotations

import gc
import logging
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from engine.config import Config
from engine.model.changes import ChangeSet
from engine.model.note import Hit, Link, Note
from engine.recall.search import Recipe, expand
from engine.state import note_table, packed
from engine.state.record import decode, encode
from engine.state.tenant_state import TenantMemory
from engine.storage.snapshot import STATE, read_snapshot, write_snapshot

T0 = datetime(2024, 5, 1, tzinfo=UTC)
DIM = 8


def _note(i: int, **kw: object) -> Note:
    note = Note(id=f"n{i}", tenant="t", content=f"note {i} about topic {i % 3}", timestamp=T0 + timedelta(i))
    note.source_ids = [f"src-{i}"]
    for key, value in kw.items():
        setattr(note, key, value)
    return note


def _vec(i: int) -> np.ndarray:
    return np.random.default_rng(i).standard_normal(DIM).astype(np.float32)


def tenant() -> TenantMemory:
    tm = TenantMemory("t", DIM)
    notes = [_note(i) for i in range(6)]
    notes[4].links = [Link(target="n1", reason="same topic"), Link(target="n2", reason="near")]
    notes[5].links = [Link(target="n1", reason="again")]
    notes[2].invalid_at, notes[2].superseded_by = T0 + timedelta(days=9), "n5"
    tm.apply(ChangeSet(upserts=[(n, _vec(i)) for i, n in enumerate(notes)]))
    tm.apply(ChangeSet(deletes=["n3"]))
    return tm


def reopen(folder: Path, seq: int = 1) -> TenantMemory:
    tm = TenantMemory("t", DIM)
    read_snapshot(folder / f"snap-{seq:012d}", tm, "enc")
    return tm


def _view(tm: TenantMemory) -> dict[str, object]:
    return {
        "notes": {i: tm.notes[i] for i in sorted(tm.notes)},
        "links": {i: sorted(tm.neighbours_of(i)) for i in sorted(tm.notes)},
        "sources": {s: tm.note_of_source(s) for s in (f"src-{i}" for i in range(8))},
        "num_sources": tm.num_sources,
        "mask": tm.mask().tolist(),
        "as_of": tm.mask(T0 + timedelta(days=3, hours=1)).tolist(),
        "latest": tm.latest,
    }


def test_the_codec_round_trips_a_note_exactly() -> None:
    note = _note(1, links=[Link("n2", "why", T0)], metadata={"a": [1, "b"], "c": None}, speaker="Maya")
    note.occurrences, note.invalid_at = [T0, T0 + timedelta(microseconds=7)], T0 + timedelta(seconds=1.5)
    assert decode(encode(note)) == note
    odd = _note(2, metadata={"when": T0})  # not marshal-able: kept through the fallback
    assert decode(encode(odd)) == odd


def test_a_reopened_tenant_reads_the_state_file_and_equals_the_written_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    tm = tenant()
    before = _view(tm)
    write_snapshot(tmp_path, tm, 1, "enc")
    assert tm.notes.held == 0 and _view(tm) == before  # the writer itself now reads from the file
    with caplog.at_level(logging.WARNING, logger="amem"):
        back = reopen(tmp_path)
    assert not caplog.records
    assert back.notes.held == 0 and _view(back) == before


def test_changes_after_the_state_file_land_in_the_overlay_and_survive_the_next_snapshot(
    tmp_path: Path,
) -> None:
    tm = tenant()
    write_snapshot(tmp_path, tm, 1, "enc")
    tm.apply(ChangeSet(deletes=["n1"]))  # drops the backlinks to it and its source
    tm.apply(ChangeSet(upserts=[(_note(7, links=[Link("n4", "reply")]), _vec(7))]))
    tm.apply(ChangeSet(upserts=[(_note(0, content="note 0 rewritten"), _vec(0))]))
    assert tm.notes.held == 4  # n0, the rewritten n4 and n5 (links to n1 dropped), n7 in n1's freed slot
    assert tm.note_of_source("src-1") is None and tm.note_of_source("src-7") == "n7"
    assert ("n7", "reply") in tm.neighbours_of("n4") and tm.notes["n0"].content == "note 0 rewritten"
    expected = _view(tm)
    write_snapshot(tmp_path, tm, 2, "enc")
    assert _view(tm) == expected and _view(reopen(tmp_path, 2)) == expected


@pytest.mark.parametrize("damage", ["flip", "remove"])
def test_a_damaged_state_file_reads_the_parquet_notes_instead(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: str
) -> None:
    tm = tenant()
    expected = _view(tm)
    write_snapshot(tmp_path, tm, 1, "enc")
    state = tmp_path / "snap-000000000001" / STATE
    if damage == "remove":
        state.unlink()
    else:
        data = bytearray(state.read_bytes())
        data[len(data) // 2] ^= 0xFF
        state.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, logger="amem"):
        back = reopen(tmp_path)
    assert any("state file" in r.getMessage() and "unusable" in r.getMessage() for r in caplog.records)
    assert _view(back) == expected and back.notes.held == len(back.notes)


def test_link_expansion_reads_the_backlinks_a_reopened_tenant_keeps_in_the_state_file(tmp_path: Path) -> None:
    tm = tenant()
    recipe = Recipe.from_config(Config(), k=5, expand_links=True)

    def expanded(state: TenantMemory) -> list[tuple[str, str | None]]:
        hits = expand(state, [Hit(state.notes["n1"], 1.0)], state.mask(), recipe)
        return [(h.note.id, h.via) for h in hits]

    before = expanded(tm)
    assert before == [("n1", None), ("n4", "linked from n1: same topic"), ("n5", "linked from n1: again")]
    write_snapshot(tmp_path, tm, 1, "enc")
    back = reopen(tmp_path)
    assert back.backlinks == {}  # every backlink is in the map, none in the overlay
    assert expanded(back) == before


def test_a_note_read_from_the_state_file_is_decoded_once_until_its_slot_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tm = tenant()
    stored, record = tm.notes["n4"], tm.notes.record(tm.index.slot_of["n4"])
    write_snapshot(tmp_path, tm, 1, "enc")
    back = reopen(tmp_path)
    decoded: list[object] = []
    monkeypatch.setattr(note_table, "decode", lambda record: decoded.append(record) or decode(record))
    back.notes["n4"].keywords.append("changed")  # a read is a copy: the cached note stays as stored
    assert back.notes["n4"] == back.get("n4") == stored and len(decoded) == 1
    assert back.notes.record(back.index.slot_of["n4"]) == record  # a view that equals its bytes
    back.apply(ChangeSet(upserts=[(_note(4, content="rewritten"), _vec(4))]))
    assert back.notes["n4"].content == "rewritten" and len(decoded) == 2


def test_backlinks_follow_link_changes_and_stand_when_only_the_text_evolves() -> None:
    tm = tenant()
    slot = tm.index.slot_of
    source = _note(9, links=[Link("n1", "r", T0), Link("n2", "r", T0)], source_ids=["src-9"])
    tm.apply(ChangeSet(upserts=[(source, _vec(9))]))
    before = {t: tm.backlinks_of(slot[t]) for t in ("n1", "n2")}
    evolved = source.copy()
    evolved.keywords, evolved.context = ["new", "words"], "evolved by a later note"
    tm.apply(ChangeSet(upserts=[(evolved, _vec(9))]))
    assert {t: tm.backlinks_of(slot[t]) for t in ("n1", "n2")} == before
    assert before["n1"].count(slot["n9"]) == 1
    moved = evolved.copy()
    moved.links, moved.source_ids = [Link("n0", "r", T0)], ["src-9b"]
    tm.apply(ChangeSet(upserts=[(moved, _vec(9))]))
    assert slot["n9"] not in tm.backlinks_of(slot["n1"]) and slot["n9"] in tm.backlinks_of(slot["n0"])
    assert tm.note_of_source("src-9b") == "n9" and tm.note_of_source("src-9") is None


def test_the_fixed_column_follows_the_content_and_persists(tmp_path: Path) -> None:
    tm = tenant()
    assert tm.notes.fixed[3] == -1  # n3's slot, deleted: not known
    told = [
        _note(6, content="Went to the lake last weekend with my sister."),
        _note(7, content="I drive a Camry."),
    ]
    tm.apply(ChangeSet(upserts=[(n, _vec(6 + i)) for i, n in enumerate(told)]))
    slot = tm.index.slot_of
    assert (tm.notes.fixed[slot["n6"]], tm.notes.fixed[slot["n7"]]) == (1, 0)
    evolved = tm.notes["n6"]
    evolved.context = "a trip"
    tm.apply(ChangeSet(upserts=[(evolved, _vec(6))]))  # the same content: the column stands
    assert tm.notes.fixed[slot["n6"]] == 1
    write_snapshot(tmp_path, tm, 1, "enc")
    again = reopen(tmp_path)
    assert [again.notes.fixed[again.index.slot_of[i]] for i in ("n6", "n7", "n0")] == [1, 0, 0]


def test_a_state_file_without_the_fixed_column_reads_unknown_and_the_next_pack_fills_it(
    tmp_path: Path,
) -> None:
    tm = tenant()
    tm.adopt(packed.read(state_file_without(tmp_path, tm, ["fixed"])))
    live = [tm.index.slot_of[i] for i in sorted(tm.notes)]
    assert (tm.notes.fixed[live] == -1).all()
    assert (tm.pack().columns["fixed"][live] == 0).all()  # "note i about topic j": standing statements


def state_file_without(folder: Path, tm: TenantMemory, columns: list[str]) -> Path:
    """A state file of `tm` as written before `columns` existed (snapshotted into `folder` first)."""
    write_snapshot(folder, tm, 1, "enc")
    path = folder / "snap-000000000001" / STATE
    before = folder / "before" / STATE
    before.parent.mkdir()
    shutil.copy(path.with_name("state-sources.arrow"), before.with_name("state-sources.arrow"))
    with pa.memory_map(str(path)) as source:
        old = pa.ipc.open_file(source).get_batch(0).drop_columns(columns)
        with pa.OSFile(str(before), "wb") as sink, pa.ipc.new_file(sink, old.schema) as out:
            out.write_batch(old)
    return before


def test_records_packed_in_chunks_equal_the_table_slot_by_slot(monkeypatch) -> None:
    tm = tenant()  # six slots, one of them emptied by a delete
    whole = tm.pack().records
    monkeypatch.setattr(note_table, "_CHUNK", 4)  # chunks of 4 + 2 slots
    chunked = tm.pack().records
    n = tm.index.num_slots
    assert len(chunked) == len(whole) == n == 6
    for slot in range(n):
        expected = tm.notes.record(slot)
        got = chunked.get(slot)
        assert (None if got is None else bytes(got)) == (None if expected is None else bytes(expected)), slot
        assert (chunked.get(slot) is None) == (whole.get(slot) is None)
    assert chunked.get(3) is None  # the deleted note's slot


def test_records_packed_from_the_state_file_and_the_overlay_equal_them_slot_by_slot(
    tmp_path: Path, monkeypatch
) -> None:
    """After a snapshot the base's records are taken as slices of its column, the overlay's in their place."""
    monkeypatch.setattr(note_table, "_CHUNK", 4)  # a clean chunk, mixed ones, and one past the base
    tm = TenantMemory("t", DIM)
    tm.apply(ChangeSet(upserts=[(_note(i), _vec(i)) for i in range(10)]))
    write_snapshot(tmp_path, tm, 1, "enc")
    assert tm.notes.held == 0
    tm.apply(ChangeSet(deletes=["n5"]))
    tm.apply(ChangeSet(upserts=[(_note(6, content="note 6 rewritten"), _vec(6))]))
    tm.apply(ChangeSet(upserts=[(_note(i), _vec(i)) for i in (10, 11, 12)]))  # n10 takes n5's freed slot
    records = tm.pack().records
    assert len(records) == tm.index.num_slots == 12
    for slot in range(12):
        expected, got = tm.notes.record(slot), records.get(slot)
        assert (None if got is None else bytes(got)) == (None if expected is None else bytes(expected)), slot
    assert decode(records.get(tm.index.slot_of["n6"])).content == "note 6 rewritten"  # type: ignore[arg-type]


def test_packed_backlinks_equal_the_lists_slot_by_slot_after_edits_over_a_state_file() -> None:
    rng = np.random.default_rng(3)
    tm = TenantMemory("t", DIM)
    notes = [_note(i) for i in range(40)]
    for i, note in enumerate(notes[1:], 1):
        note.links = [Link(target=f"n{j}", reason="r") for j in rng.choice(i, size=min(i, 3), replace=False)]
    tm.apply(ChangeSet(upserts=[(n, _vec(i)) for i, n in enumerate(notes)]))
    tm.adopt(tm.pack())  # the backlinks now come from packed CSR, the overlay empty
    assert tm.backlinks == {}
    later = [_note(i, links=[Link(target=f"n{j}", reason="r") for j in (0, 5, i - 1)]) for i in range(40, 50)]
    notes[7].links = [Link(target="n2", reason="moved")]  # an edit: n7 leaves its old targets' lists
    tm.apply(ChangeSet(upserts=[(n, _vec(i)) for i, n in enumerate([*later, notes[7]], 40)]))
    tm.apply(ChangeSet(deletes=["n5", "n44"]))
    assert tm.backlinks  # edited targets are in the overlay
    gc.collect()
    assert not any(gc.is_tracked(linking) for linking in tm.backlinks.values())  # no work for the collector
    p = tm.pack()
    n = tm.index.num_slots
    assert len(p.backlink_offsets) == n + 1
    for s in range(n):
        got = p.backlink_slots[p.backlink_offsets[s] : p.backlink_offsets[s + 1]].tolist()
        assert got == tm.backlinks_of(s), s
