"""Damaged stores open on their last good state and say what was wrong; one writer, many readers.

The template store (built once by tests/storage/crash_child.py, which dies without closing) holds three
batches: snap-1 has batch 0, snap-2 has batches 0-1, and the log holds records 2 and 3 (batches 1
and 2): the newest state is only in the log, and the previous snapshot is the fallback.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine import Config, Memory
from engine.encode import Encoder
from engine.errors import ReadOnlyStore, StoreLocked
from engine.storage.walformat import FRAME_MAGIC
from tests.storage.damaged import (
    ALL,
    NEWEST,
    TENANT,
    batches_present,
    flip,
    folder,
    open_store,
    own_segment,
    problems,
    sources,
    truncate,
)


def test_the_template_opens_whole_with_no_problems(victim: Path, encoder: Encoder) -> None:
    with open_store(victim, encoder) as mem:
        assert batches_present(mem) == ALL
        assert problems(mem) == []
        assert mem.stats()["tenants"][TENANT]["indexed"] == len(mem.notes(TENANT))


SNAPSHOT_DAMAGE: dict[str, tuple[Callable[[Path], None], str]] = {
    "flipped notes.parquet": (lambda s: flip(s / "notes.parquet"), "notes.parquet: checksum mismatch"),
    "truncated notes.parquet": (lambda s: truncate(s / "notes.parquet"), "notes.parquet: checksum mismatch"),
    "empty notes.parquet": (
        lambda s: truncate(s / "notes.parquet", 0.0),
        "notes.parquet: checksum mismatch",
    ),
    "flipped versions segment": (
        lambda s: flip(own_segment(s), 0.9, 2),
        ".arrow: checksum mismatch",
    ),
    "deleted notes.parquet": (lambda s: (s / "notes.parquet").unlink(), "notes.parquet: checksum mismatch"),
    "deleted meta.json": (lambda s: (s / "meta.json").unlink(), "meta.json: unreadable snapshot metadata"),
    "truncated meta.json": (lambda s: truncate(s / "meta.json"), "meta.json: unreadable snapshot metadata"),
}


@pytest.mark.parametrize("damage", SNAPSHOT_DAMAGE, ids=list(SNAPSHOT_DAMAGE))
def test_a_damaged_newest_snapshot_falls_back_to_the_previous_one_and_the_log(
    victim: Path, encoder: Encoder, caplog: pytest.LogCaptureFixture, damage: str
) -> None:
    harm, expected = SNAPSHOT_DAMAGE[damage]
    harm(folder(victim) / NEWEST)
    with caplog.at_level(logging.WARNING), open_store(victim, encoder, read_only=True) as mem:
        assert batches_present(mem) == ALL  # snap-1 + log records 2 and 3
        [problem] = problems(mem)
    assert NEWEST in problem and expected in problem and "falling back to an older snapshot" in problem
    assert any(expected in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)


def test_after_a_fallback_the_writer_carries_on_and_the_next_open_is_clean(
    victim: Path, encoder: Encoder
) -> None:
    flip(folder(victim) / NEWEST / "notes.parquet")
    extra = {"content": "A brand new line written after the damage.", "source_id": "after-damage"}
    with open_store(victim, encoder) as mem:
        mem.add_many([extra], tenant=TENANT)
    with open_store(victim, encoder) as mem:
        assert batches_present(mem) == ALL and "after-damage" in sources(mem)
        assert problems(mem) == []


def test_a_truncated_log_tail_drops_only_the_cut_record(victim: Path, encoder: Encoder) -> None:
    wal = folder(victim) / "wal.log"
    wal.write_bytes(wal.read_bytes()[:-10])
    with open_store(victim, encoder, read_only=True) as mem:
        assert batches_present(mem) == {0, 1}  # record 3 (batch 2) was cut
        [problem] = problems(mem)
    assert "wal.log" in problem and "torn tail" in problem


@pytest.mark.parametrize(
    "garbage",
    [b"\x00" * 64, random.Random(0).randbytes(200), FRAME_MAGIC + b"\x01" * 40],
    ids=["zeros", "random", "frame-marker"],
)
def test_garbage_after_the_log_is_a_torn_tail_and_loses_nothing(
    victim: Path, encoder: Encoder, garbage: bytes
) -> None:
    wal = folder(victim) / "wal.log"
    wal.write_bytes(wal.read_bytes() + garbage)
    with open_store(victim, encoder) as mem:
        assert batches_present(mem) == ALL
        [problem] = problems(mem)
        assert "torn tail" in problem
        mem.add_many([{"content": "Written over the trimmed tail.", "source_id": "over-tail"}], tenant=TENANT)
    with open_store(victim, encoder) as mem:
        assert batches_present(mem) == ALL and "over-tail" in sources(mem)
        assert problems(mem) == []


def _frame_offsets(wal: Path) -> list[int]:
    data = wal.read_bytes()
    offsets, at = [], data.find(FRAME_MAGIC)
    while at >= 0:
        offsets.append(at)
        at = data.find(FRAME_MAGIC, at + 1)
    return offsets


def _damage_record(wal: Path, index: int) -> None:
    """Flip one payload byte of the log's index-th record (0: record 2, 1: record 3)."""
    data = bytearray(wal.read_bytes())
    data[_frame_offsets(wal)[index] + 40] ^= 0xFF
    wal.write_bytes(bytes(data))


def test_damage_to_the_last_record_is_a_torn_tail(victim: Path, encoder: Encoder) -> None:
    _damage_record(folder(victim) / "wal.log", 1)
    with open_store(victim, encoder, read_only=True) as mem:
        assert batches_present(mem) == {0, 1}
        [problem] = problems(mem)
    assert "torn tail" in problem and "offset" in problem


def test_damage_before_the_last_record_is_corruption_and_replay_stops_there(
    victim: Path, encoder: Encoder
) -> None:
    flip(folder(victim) / NEWEST / "notes.parquet")  # fall back to snap-1, which needs records 2 and 3
    _damage_record(folder(victim) / "wal.log", 0)
    with open_store(victim, encoder, read_only=True) as mem:
        assert batches_present(mem) == {0}  # snap-1 only: the log is unusable from record 2 on
        snapshot_problem, log_problem = problems(mem)
    assert NEWEST in snapshot_problem
    assert "wal.log" in log_problem and "corruption at offset 20" in log_problem


def test_a_writer_opens_a_log_damaged_below_its_snapshot_and_salvages_it(
    victim: Path, encoder: Encoder
) -> None:
    wal = folder(victim) / "wal.log"
    _damage_record(wal, 0)  # record 2: snap-2 holds it already
    with open_store(victim, encoder) as mem:
        assert batches_present(mem) >= {0, 1}
        [problem] = problems(mem)
        assert "corruption" in problem
        mem.add_many([{"content": "Written after the salvage.", "source_id": "after-salvage"}], tenant=TENANT)
    assert len(list(wal.parent.glob("wal.log.corrupt-*"))) == 1  # the damaged log is kept aside
    with open_store(victim, encoder) as mem:
        assert "after-salvage" in sources(mem) and problems(mem) == []


@pytest.mark.xfail(
    strict=True,
    reason="proposal (engine/walformat.py Scan): replay(after_seq) stops at the "
    "first damage even when every damaged record is <= after_seq, dropping intact later ones",
)
def test_an_intact_record_after_damage_the_snapshot_covers_is_kept(victim: Path, encoder: Encoder) -> None:
    _damage_record(folder(victim) / "wal.log", 0)
    with open_store(victim, encoder, read_only=True) as mem:
        assert batches_present(mem) == ALL


def test_a_damaged_log_header_still_opens_on_the_snapshot(victim: Path, encoder: Encoder) -> None:
    wal = folder(victim) / "wal.log"
    data = bytearray(wal.read_bytes())
    data[3] ^= 0xFF
    wal.write_bytes(bytes(data))
    with open_store(victim, encoder, read_only=True) as mem:
        assert batches_present(mem) == {0, 1}
        assert any("header" in p for p in problems(mem))


def test_every_snapshot_damaged_is_reported_and_the_gap_is_logged(
    victim: Path, encoder: Encoder, caplog: pytest.LogCaptureFixture
) -> None:
    for snap in ("snap-000000000001", NEWEST):
        flip(folder(victim) / snap / "notes.parquet")
    with caplog.at_level(logging.WARNING), open_store(victim, encoder, read_only=True) as mem:
        mem.notes(TENANT)
        found = problems(mem)
    assert sum("falling back" in p for p in found) == 2 and any("missing" in p for p in found)
    assert any("1..1 were truncated away" in r.getMessage() for r in caplog.records)


def test_every_snapshot_damaged_puts_the_missing_records_in_problems(victim: Path, encoder: Encoder) -> None:
    for snap in ("snap-000000000001", NEWEST):
        flip(folder(victim) / snap / "notes.parquet")
    with open_store(victim, encoder, read_only=True) as mem:
        mem.notes(TENANT)
        assert any("truncated away" in p or "missing" in p for p in problems(mem))


def _edit_meta(change: Callable[[dict[str, Any]], Any]) -> Callable[[Path, bool], None]:
    def harm(snap: Path, legacy: bool) -> None:
        meta = json.loads((snap / "meta.json").read_text())
        if legacy:  # as written before meta.json had a checksum of its own
            del meta["meta_sha256"]
        out = change(meta)
        (snap / "meta.json").write_text(json.dumps(meta if out is None else out, indent=1))

    return harm


META_DAMAGE: dict[str, Callable[[Path, bool], None]] = {
    "seq off by one": _edit_meta(lambda m: m.update(seq=m["seq"] + 1)),
    "sha256 key renamed": _edit_meta(lambda m: m.update(sha257=m.pop("sha256"))),
    "seq key renamed": _edit_meta(lambda m: m.update(seg=m.pop("seq"))),
    "seq not a number": _edit_meta(lambda m: m.update(seq="2")),
    "not an object": _edit_meta(lambda m: [m]),
    "row count changed": _edit_meta(lambda m: m["rows"].update({"notes.parquet": 1})),
    "dim changed": _edit_meta(lambda m: m.update(dim=m["dim"] + 100)),
    "encoder changed": _edit_meta(lambda m: m.update(encoder="wordllamb")),
}
# Without its own checksum a changed dim or encoder reads as the caller's encoder mismatch (ConfigError).
LEGACY_DETECTABLE = [name for name in META_DAMAGE if name not in ("dim changed", "encoder changed")]


@pytest.mark.parametrize(
    "damage, legacy",
    [(d, False) for d in META_DAMAGE] + [(d, True) for d in LEGACY_DETECTABLE],
    ids=[*META_DAMAGE, *(f"legacy {d}" for d in LEGACY_DETECTABLE)],
)
def test_damaged_snapshot_metadata_falls_back_instead_of_failing_or_losing_records(
    victim: Path, encoder: Encoder, damage: str, legacy: bool
) -> None:
    META_DAMAGE[damage](folder(victim) / NEWEST, legacy)
    with open_store(victim, encoder, read_only=True) as mem:
        assert batches_present(mem) == ALL  # snap-1 + log records 2 and 3
        [problem] = problems(mem)
    assert f"{NEWEST}/meta.json" in problem and "falling back" in problem


def test_metadata_has_a_checksum_of_its_own(victim: Path) -> None:
    meta = json.loads((folder(victim) / NEWEST / "meta.json").read_text())
    assert len(meta["meta_sha256"]) == 64 and meta["seq"] == 2


def _tree_digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_a_second_writer_gets_store_locked_naming_the_holder(victim: Path, encoder: Encoder) -> None:
    with open_store(victim, encoder), pytest.raises(StoreLocked) as err:
        open_store(victim, encoder)  # the victim-level lock: refused at open, before any tenant is touched
    message = str(err.value)
    assert str(victim / "LOCK") in message and f"process {os.getpid()}" in message
    assert "only one writer" in message


def test_without_the_store_lock_the_tenant_lock_still_guards(victim: Path, encoder: Encoder) -> None:
    shard = Config.of(store_lock=False)  # how Ray ingest shards open the victim (their driver holds LOCK)
    with Memory(victim, shard, encoder=encoder) as writer:
        writer.notes(TENANT)  # the writer holds the tenant's lock from its first touch
        other = Memory(victim, shard, encoder=encoder)
        with pytest.raises(StoreLocked) as err:
            other.add("A second writer must not get in.", tenant=TENANT)
        other.close()
    assert str(folder(victim) / "LOCK") in str(err.value)


def test_a_reader_opens_while_the_writer_holds_the_lock_and_sees_what_was_committed(
    victim: Path, encoder: Encoder
) -> None:
    with open_store(victim, encoder) as writer:
        writer.add_many(
            [{"content": "Committed while the reader is away.", "source_id": "live-1"}], tenant=TENANT
        )
        before = _tree_digest(victim)
        with open_store(victim, encoder, read_only=True) as reader:
            assert batches_present(reader) == ALL
            assert "live-1" in sources(reader)
            assert reader.search("reader is away", tenant=TENANT, k=3)[0].note.source_ids == ["live-1"]
            with pytest.raises(ReadOnlyStore):
                reader.add("Readers cannot write.", tenant=TENANT)
        assert _tree_digest(victim) == before  # the reader changed no file
        writer.add_many(
            [{"content": "Committed after the first reader left.", "source_id": "live-2"}], tenant=TENANT
        )
        with open_store(victim, encoder, read_only=True) as reader:
            assert {"live-1", "live-2"} <= sources(reader)
