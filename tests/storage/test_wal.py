"""engine/wal.py: group commit, sequence numbers, torn tails, corruption, truncate, failed writes."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine.storage.wal
from engine.errors import CorruptStore, InputError, ReadOnlyStore, StoreError
from engine.model.records import decode_vector, encode_vector
from engine.storage.wal import WriteAheadLog
from engine.storage.walformat import HEADER_SIZE

PACKAGE_ROOT = str(Path(engine.storage.wal.__file__).parents[2])


def _write_groups(path: Path, groups: list[list[dict[str, Any]]]) -> list[int]:
    """Append each group; returns the file size after each (so offsets of group boundaries)."""
    ends = []
    with WriteAheadLog(path) as wal:
        for group in groups:
            wal.append(group)
            ends.append(path.stat().st_size)
    return ends


def _records(path: Path, **kwargs: Any) -> list[tuple[int, dict[str, Any]]]:
    with WriteAheadLog(path, read_only=True) as wal:
        return list(wal.replay(**kwargs))


GROUPS = [[{"n": 1}, {"n": 2}], [{"n": 3}], [{"n": 4}, {"n": 5}, {"n": 6}]]
ALL = [(i, {"n": i}) for i in range(1, 7)]


def test_round_trip_with_text_and_vectors(tmp_path: Path) -> None:
    vector = np.linspace(-1, 1, 384, dtype=np.float32)
    record = {
        "text": 'naïve café ☕ \u0000 "quoted"',
        "vector": encode_vector(vector),
        "nested": {"a": [1, 2.5]},
    }
    with WriteAheadLog(tmp_path / "wal.log") as wal:
        assert wal.append([record]) == 1
        [(seq, back)] = list(wal.replay())
    assert (seq, back) == (1, record)
    assert np.array_equal(decode_vector(back["vector"]), vector)


def test_a_missing_log_is_empty_and_created_on_first_append(tmp_path: Path) -> None:
    wal = WriteAheadLog(tmp_path / "wal.log")
    assert list(wal.replay()) == [] and wal.last_seq == 0 and wal.last_problem is None
    assert not (tmp_path / "wal.log").exists()
    wal.append([{"a": 1}])
    assert (tmp_path / "wal.log").exists()
    wal.close()


def test_each_append_is_one_write_and_one_fsync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wal = WriteAheadLog(tmp_path / "wal.log")
    wal.append([{"warm": "up"}])  # creates the file (atomic write: its own fsyncs)
    calls = {"write": 0, "fsync": 0}
    real_write, real_fsync = os.write, os.fsync

    def write(fd: int, data: Any) -> int:
        calls["write"] += 1
        return real_write(fd, data)

    def fsync(fd: int) -> None:
        calls["fsync"] += 1
        real_fsync(fd)

    monkeypatch.setattr(os, "write", write)
    monkeypatch.setattr(os, "fsync", fsync)
    assert wal.append([{"i": i} for i in range(100)]) == 101
    assert calls == {"write": 1, "fsync": 1}
    wal.close()


def test_sequence_numbers_continue_across_reopen(tmp_path: Path) -> None:
    path = tmp_path / "wal.log"
    _write_groups(path, GROUPS)
    with WriteAheadLog(path) as wal:
        assert wal.last_seq == 6
        assert wal.append([{"n": 7}]) == 7
        assert wal.append([]) == 7  # nothing to log: no write
    assert _records(path) == [*ALL, (7, {"n": 7})]
    assert _records(path, after_seq=5) == [(6, {"n": 6}), (7, {"n": 7})]


def test_truncate_drops_the_prefix_and_numbering_continues(tmp_path: Path) -> None:
    path = tmp_path / "wal.log"
    _write_groups(path, GROUPS)
    with WriteAheadLog(path) as wal:
        wal.truncate(upto_seq=4)  # inside the last group: its rest is kept
        assert list(wal.replay()) == ALL[4:]
        assert wal.base_seq == 4 and wal.append([{"n": 7}]) == 7
        wal.truncate(upto_seq=2)  # already dropped: nothing to do
    with WriteAheadLog(path) as wal:
        assert list(wal.replay()) == [*ALL[4:], (7, {"n": 7})] and wal.last_problem is None
        wal.truncate(upto_seq=7)
        assert list(wal.replay()) == [] and wal.last_seq == 7
    assert path.stat().st_size == HEADER_SIZE
    with WriteAheadLog(path) as wal:
        assert wal.last_seq == 7 and wal.append([{"n": 8}]) == 8


def test_truncate_past_the_end_rebases_onto_a_newer_snapshot(tmp_path: Path) -> None:
    path = tmp_path / "wal.log"
    _write_groups(path, GROUPS)
    with WriteAheadLog(path) as wal:
        wal.truncate(upto_seq=500)
        assert wal.last_seq == 500 and wal.append([{"n": 501}]) == 501
    assert _records(path) == [(501, {"n": 501})]


def test_replaying_from_before_the_logs_base_is_a_gap(tmp_path: Path) -> None:
    path = tmp_path / "wal.log"
    _write_groups(path, GROUPS)
    with WriteAheadLog(path) as wal:
        wal.truncate(3)
        assert [s for s, _ in wal.replay()] == [4, 5, 6]  # no claim about what came before
        assert [s for s, _ in wal.replay(after_seq=3)] == [4, 5, 6]
        with pytest.raises(CorruptStore, match=r"1\.\.3 were truncated away"):
            list(wal.replay(after_seq=0))  # e.g. every snapshot lost: the hole must not pass silently
        assert [s for s, _ in wal.replay(after_seq=0, strict=False)] == [4, 5, 6]


def test_a_log_removed_or_replaced_behind_the_writer_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "wal.log"
    with WriteAheadLog(path) as wal:
        wal.append([{"n": 1}])
        path.unlink()
        with pytest.raises(StoreError, match="removed or replaced"):
            wal.append([{"n": 2}])
    _write_groups(path, GROUPS)
    with WriteAheadLog(path) as wal:
        wal.append([{"n": 7}])
        path.rename(tmp_path / "moved.log")
        path.write_bytes(b"")
        with pytest.raises(StoreError, match="removed or replaced"):
            wal.append([{"n": 8}])
    wal = WriteAheadLog(tmp_path / "moved.log")
    (tmp_path / "moved.log").unlink()  # gone before the first write: not silently recreated
    with pytest.raises(StoreError, match="cannot open the log for writing"):
        wal.append([{"n": 8}])


def test_truncate_leaves_no_temp_files(tmp_path: Path) -> None:
    path = tmp_path / "wal.log"
    _write_groups(path, GROUPS)
    with WriteAheadLog(path) as wal:
        wal.truncate(3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["wal.log"]


def test_every_cut_inside_the_final_group_is_a_torn_tail(tmp_path: Path) -> None:
    source = tmp_path / "full.log"
    ends = _write_groups(source, GROUPS)
    data = source.read_bytes()
    for cut in range(ends[1], ends[2]):
        path = tmp_path / f"cut-{cut}.log"
        path.write_bytes(data[:cut])
        wal = WriteAheadLog(path)
        assert wal.last_seq == 3
        if cut > ends[1]:
            assert wal.last_problem is not None and wal.last_problem.kind == "torn-tail"
        assert list(wal.replay()) == ALL[:3]
        assert wal.append([{"n": "new"}]) == 4  # trims the tail first
        wal.close()
        assert _records(path) == [*ALL[:3], (4, {"n": "new"})]
        assert path.stat().st_size == ends[1] + 32 + len(b'{"n":"new"}')  # the torn bytes are gone
        path.unlink()


def test_zeros_or_garbage_after_the_last_group_are_a_torn_tail(tmp_path: Path) -> None:
    path = tmp_path / "wal.log"
    _write_groups(path, GROUPS)
    good = path.read_bytes()
    for junk in (b"\x00" * 4096, b"\xffREC" + b"\x01" * 40, os.urandom(100)):
        path.write_bytes(good + junk)
        wal = WriteAheadLog(path)
        assert wal.last_problem is not None and wal.last_problem.kind == "torn-tail"
        assert list(wal.replay()) == ALL and wal.last_seq == 6
        wal.close()


def test_a_group_is_all_or_nothing(tmp_path: Path) -> None:
    path = tmp_path / "wal.log"
    ends = _write_groups(path, GROUPS)
    # Cut the final group's last record off, leaving its first two records whole.
    data = path.read_bytes()
    path.write_bytes(data[: ends[2] - 3])
    assert _records(path) == ALL[:3]


def test_a_reader_never_changes_a_torn_log(tmp_path: Path) -> None:
    path = tmp_path / "wal.log"
    _write_groups(path, GROUPS)
    path.write_bytes(path.read_bytes()[:-5])
    before = path.read_bytes()
    with WriteAheadLog(path, read_only=True) as wal:
        list(wal.replay())
        with pytest.raises(ReadOnlyStore):
            wal.append([{"x": 1}])
        with pytest.raises(ReadOnlyStore):
            wal.truncate(1)
    WriteAheadLog(path).close()  # a writer that never writes does not touch it either
    assert path.read_bytes() == before


@pytest.mark.parametrize("group", [0, 1])
def test_damage_before_the_final_group_is_corruption(tmp_path: Path, group: int) -> None:
    path = tmp_path / "wal.log"
    ends = _write_groups(path, GROUPS)
    start = HEADER_SIZE if group == 0 else ends[0]
    data = bytearray(path.read_bytes())
    data[start + 34] ^= 0x01  # a payload byte of the group's first record (frame header: 32 bytes)
    path.write_bytes(bytes(data))
    wal = WriteAheadLog(path)
    assert wal.last_problem is not None and wal.last_problem.kind == "corrupt"
    assert wal.last_problem.offset == start
    with pytest.raises(CorruptStore, match=rf"{path}.*offset {start}"):
        list(wal.replay())
    with pytest.raises(CorruptStore, match="strict=False"):
        wal.append([{"n": "refused"}])
    kept = ALL[:2] if group == 1 else []
    assert list(wal.replay(strict=False)) == kept
    assert wal.append([{"n": "after"}]) == len(kept) + 1  # salvages first
    wal.close()
    asides = [p for p in tmp_path.iterdir() if p.name.startswith("wal.log.corrupt-")]
    assert len(asides) == 1 and asides[0].read_bytes() == bytes(data)  # the damaged log is kept
    assert _records(path) == [*kept, (len(kept) + 1, {"n": "after"})]


def test_a_damaged_header_is_corruption(tmp_path: Path) -> None:
    path = tmp_path / "wal.log"
    _write_groups(path, GROUPS)
    data = bytearray(path.read_bytes())
    data[9] ^= 0xFF  # base_seq
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptStore, match="header"):
        WriteAheadLog(path)
    path.write_bytes(b"")
    with pytest.raises(CorruptStore, match="not a write-ahead log"):
        WriteAheadLog(path)


@pytest.mark.parametrize("bad", [{"v": np.float32(1.0)}, {"x": float("nan")}, {"s": "\ud800"}, "not a dict"])
def test_records_that_are_not_json_are_refused_before_anything_is_written(tmp_path: Path, bad: Any) -> None:
    path = tmp_path / "wal.log"
    with WriteAheadLog(path) as wal:
        wal.append([{"ok": 1}])
        size = path.stat().st_size
        with pytest.raises(InputError, match="log record 1"):
            wal.append([{"ok": 2}, bad])
        assert path.stat().st_size == size and wal.last_seq == 1


@pytest.mark.parametrize("fail_on", ["write", "fsync"])
def test_a_failed_append_is_rolled_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail_on: str
) -> None:
    path = tmp_path / "wal.log"
    wal = WriteAheadLog(path)
    wal.append([{"n": 1}])
    size = path.stat().st_size
    real_write, real_fsync = os.write, os.fsync

    def half_write(fd: int, data: Any) -> int:
        real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    def failing_fsync(fd: int) -> None:
        monkeypatch.setattr(os, "fsync", real_fsync)  # fail once: the roll-back's own fsync works
        raise OSError(errno.EIO, "Input/output error")

    if fail_on == "write":
        monkeypatch.setattr(os, "write", half_write)
    else:
        monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(StoreError, match="not committed"):
        wal.append([{"n": "lost"}, {"n": "lost too"}])
    monkeypatch.setattr(os, "write", real_write)
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert path.stat().st_size == size and wal.last_seq == 1
    assert wal.append([{"n": 2}]) == 2
    wal.close()
    assert _records(path) == [(1, {"n": 1}), (2, {"n": 2})]


def test_a_failed_roll_back_stops_the_writer_until_reopened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "wal.log"
    wal = WriteAheadLog(path)
    wal.append([{"n": 1}])

    def failing_fsync(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    with monkeypatch.context() as patch:
        patch.setattr(os, "fsync", failing_fsync)
        with pytest.raises(StoreError, match="reopen the log"):
            wal.append([{"n": "lost"}])
    with pytest.raises(StoreError, match="reopen the log"):
        wal.append([{"n": "refused"}])
    wal.close()
    with WriteAheadLog(path) as again:
        assert list(again.replay()) == [(1, {"n": 1})] and again.append([{"n": 2}]) == 2


def test_concurrent_appends_get_distinct_gap_free_numbers(tmp_path: Path) -> None:
    wal = WriteAheadLog(tmp_path / "wal.log")
    seqs: list[int] = []

    def worker(k: int) -> None:
        for i in range(25):
            seqs.append(wal.append([{"k": k, "i": i}, {"k": k, "i": i, "second": True}]))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(seqs) == list(range(2, 201, 2))
    assert [seq for seq, _ in wal.replay()] == list(range(1, 201))
    wal.close()


def test_closed_log_refuses_work(tmp_path: Path) -> None:
    wal = WriteAheadLog(tmp_path / "wal.log")
    wal.close()
    wal.close()
    with pytest.raises(StoreError, match="closed"):
        wal.append([{"a": 1}])
    with pytest.raises(StoreError, match="closed"):
        list(wal.replay())


CRASHER = """
import sys
from pathlib import Path
from engine.storage.wal import WriteAheadLog
wal = WriteAheadLog(Path(sys.argv[1]))
i = 0
while True:
    seq = wal.append([{"i": i, "pad": "x" * (i % 5000)} for _ in range(1 + i % 7)])
    print(seq, flush=True)
    i += 1
"""


def test_nothing_acknowledged_is_lost_when_the_writer_is_killed(tmp_path: Path) -> None:
    path = tmp_path / "wal.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([PACKAGE_ROOT, os.environ.get("PYTHONPATH", "")])}
    for _ in range(3):  # crash, reopen, crash again on the repaired log
        child = subprocess.Popen(
            [sys.executable, "-c", CRASHER, str(path)], env=env, text=True, stdout=subprocess.PIPE
        )
        assert child.stdout is not None
        first = child.stdout.readline()  # the child is writing: kill it mid-stream, not mid-import
        time.sleep(0.2)
        child.send_signal(signal.SIGKILL)
        out, _ = child.communicate(timeout=60)
        acked = [int(line) for line in (first + out).split()]
        with WriteAheadLog(path, read_only=True) as wal:
            seqs = [seq for seq, _ in wal.replay()]
        assert acked and seqs == list(range(1, len(seqs) + 1))
        assert seqs[-1] >= acked[-1]


@st.composite
def _damage(draw: st.DrawFn) -> tuple[list[list[dict[str, Any]]], str, float, int]:
    groups = draw(
        st.lists(
            st.lists(st.fixed_dictionaries({"t": st.text(max_size=30)}), min_size=1, max_size=4),
            min_size=1,
            max_size=5,
        )
    )
    return (
        groups,
        draw(st.sampled_from(["flip", "cut"])),
        draw(st.floats(0, 1, exclude_max=True)),
        draw(st.integers(1, 255)),
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_damage())
def test_any_single_damage_yields_whole_groups_or_raises(
    tmp_path: Path, case: tuple[list[list[dict[str, Any]]], str, float, int]
) -> None:
    groups, how, where, xor = case
    path = tmp_path / "prop.log"
    path.unlink(missing_ok=True)
    ends = _write_groups(path, groups)
    data = bytearray(path.read_bytes())
    offset = int(where * len(data))
    if how == "flip":
        data[offset] ^= xor
    else:
        del data[offset:]
    path.write_bytes(bytes(data))
    expected = [r for g in groups for r in g]
    final_start = ends[-2] if len(ends) > 1 else HEADER_SIZE
    try:
        got = [r for _, r in WriteAheadLog(path).replay()]
    except CorruptStore:
        assert offset < final_start  # only damage to acknowledged, non-final data may raise
        return
    # Whatever comes back is a prefix made of whole groups, and nothing before the damage is lost.
    boundaries = [0, *np.cumsum([len(g) for g in groups]).tolist()]
    assert got == expected[: len(got)] and len(got) in boundaries
    whole_before = sum(len(g) for g, end in zip(groups, ends, strict=True) if end <= offset)
    assert len(got) >= whole_before
    if how == "flip":
        assert offset >= final_start and len(got) == boundaries[-2]


def test_vectors_round_trip_and_bad_input_is_named() -> None:
    vector = np.array([0.0, -1.5, np.inf, 3.25], dtype=np.float32)
    back = decode_vector(encode_vector(vector))
    assert back.dtype == np.float32 and np.array_equal(back, vector) and back.flags.writeable
    assert np.array_equal(decode_vector(encode_vector(np.arange(3, dtype=np.float64))), [0, 1, 2])
    with pytest.raises(InputError, match="1-D"):
        encode_vector(np.zeros((2, 2)))
    with pytest.raises(InputError, match="base64"):
        decode_vector("not base64!!")
    with pytest.raises(InputError, match="float32"):
        decode_vector("AAA=")
