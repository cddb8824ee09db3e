"""On-disk format of the write-ahead log (see engine/wal.py for how it is used).

All integers little-endian.

    file header (20 bytes, written atomically when the file is created or rewritten)
        magic     8s   b"\\xffAMWAL\\x00\\x01"  (format version 1)
        base_seq  u64  every record here has seq > base_seq (what `truncate` dropped)
        crc32     u32  of the 16 bytes before it
    then frames, back to back, one per record:
        magic     4s   b"\\xffREC"
        crc32     u32  of everything after this field: the rest of the header and the payload
        length    u32  payload bytes
        seq       u64  base_seq + 1, + 2, ... with no gaps
        group     u64  seq of the first record of this record's append() call
        count     u32  number of records in that call
        payload   length bytes of UTF-8 JSON

A group is complete when its record with seq == group + count - 1 is present; readers only return
complete groups. 0xFF never occurs in UTF-8, so a frame marker cannot appear inside a payload, which
lets `Scan` resynchronise after damage and decide between a torn tail and corruption.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal

from engine.errors import CorruptStore, InputError

FILE_MAGIC = b"\xffAMWAL\x00\x01"
FRAME_MAGIC = b"\xffREC"
MAX_RECORD_BYTES = 1 << 30
_HEADER = struct.Struct("<8sQI")
HEADER_SIZE = _HEADER.size
_FRAME = struct.Struct("<4sIIQQI")
_CRC_FROM = 8  # frame CRC starts after magic + crc
SCAN_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class WalProblem:
    """Why a read of the log stopped before its end."""

    kind: Literal["torn-tail", "corrupt"]
    offset: int
    """Byte offset of the first bad frame."""
    after_seq: int
    """Last sequence number of the good part before it."""
    reason: str

    def __str__(self) -> str:
        where = f"at offset {self.offset} (after seq {self.after_seq}): {self.reason}"
        if self.kind == "torn-tail":
            return f"torn tail {where}; the unacknowledged final write was dropped"
        return f"corruption {where}; later records exist, so this is damage, not a crash tail"


@dataclass(frozen=True, slots=True)
class Frame:
    offset: int
    end: int
    seq: int
    group: int
    count: int
    payload: bytes

    @property
    def closes_group(self) -> bool:
        return self.seq == self.group + self.count - 1


class Scan:
    """One pass over a log: its complete groups in order, then why it stopped early (if it did)."""

    def __init__(self, f: BinaryIO, base_seq: int, limit: int) -> None:
        self.f, self.limit = f, limit
        self.base_seq = self.last_seq = base_seq
        self.good_end = HEADER_SIZE
        self.problem: WalProblem | None = None

    def groups(self) -> Iterator[list[Frame]]:
        offset, pending = self.good_end, list[Frame]()
        while offset < self.limit:
            frame = read_frame(self.f, offset, self.limit)
            reason = frame if isinstance(frame, str) else self._order_error(frame, pending)
            if reason is not None:
                self._stop(offset, reason)
                return
            assert isinstance(frame, Frame)
            pending.append(frame)
            offset = frame.end
            if frame.closes_group:
                yield pending
                self.last_seq, self.good_end, pending = frame.seq, offset, []
        if pending:
            self._stop(pending[0].offset, "the log ends inside a group")

    def _order_error(self, frame: Frame, pending: list[Frame]) -> str | None:
        expected = (pending[-1].seq if pending else self.last_seq) + 1
        if frame.seq != expected:
            return f"sequence number {frame.seq}, expected {expected}"
        if pending and (frame.group, frame.count) != (pending[0].group, pending[0].count):
            return "group fields change inside a group"
        # The first record after a truncate may finish a group that began before base_seq.
        continues_cut_group = frame.group <= self.base_seq == self.last_seq
        if not pending and frame.group != frame.seq and not continues_cut_group:
            return "record claims a group whose start is missing"
        return None

    def _stop(self, offset: int, reason: str) -> None:
        later = later_group(self.f, offset + 1, self.limit, self.last_seq + 1)
        kind: Literal["torn-tail", "corrupt"] = "corrupt" if later is not None else "torn-tail"
        self.problem = WalProblem(kind, offset, self.last_seq, reason)


def read_frame(f: BinaryIO, offset: int, limit: int) -> Frame | str:
    """The frame at `offset`, or why there is no valid one there."""
    f.seek(offset)
    head = f.read(_FRAME.size) if limit - offset >= _FRAME.size else b""
    if len(head) < _FRAME.size:
        return "incomplete frame header"
    magic, crc, length, seq, group, count = _FRAME.unpack(head)
    if magic != FRAME_MAGIC:
        return "no frame marker"
    end = offset + _FRAME.size + length
    payload = f.read(length) if length <= MAX_RECORD_BYTES and end <= limit else b""
    if len(payload) < length:
        return f"a frame of {length} payload bytes runs past the end of the log"
    if zlib.crc32(payload, zlib.crc32(head[_CRC_FROM:])) != crc:
        return "checksum mismatch"
    if not group <= seq < group + count:
        return "inconsistent group fields"
    return Frame(offset, end, seq, group, count, payload)


def later_group(f: BinaryIO, start: int, limit: int, damaged_group: int) -> int | None:
    """Offset of a valid frame past `start` that belongs to a group after `damaged_group`."""
    pos = start
    while pos < limit:
        f.seek(pos)
        chunk = f.read(min(SCAN_CHUNK, limit - pos))
        hit = chunk.find(FRAME_MAGIC)
        if hit < 0:
            pos += max(1, len(chunk) - len(FRAME_MAGIC) + 1)
            continue
        frame = read_frame(f, pos + hit, limit)
        if isinstance(frame, Frame) and frame.group > damaged_group:
            return pos + hit
        pos += hit + 1
    return None


def pack_frame(seq: int, group: int, count: int, payload: bytes) -> bytes:
    rest = _FRAME.pack(FRAME_MAGIC, 0, len(payload), seq, group, count)[_CRC_FROM:]
    crc = zlib.crc32(payload, zlib.crc32(rest))
    return FRAME_MAGIC + struct.pack("<I", crc) + rest + payload


def pack_header(base_seq: int) -> bytes:
    head = struct.pack("<8sQ", FILE_MAGIC, base_seq)
    return head + struct.pack("<I", zlib.crc32(head))


def read_header(f: BinaryIO, path: Path) -> int:
    data = f.read(HEADER_SIZE)
    if len(data) < HEADER_SIZE:
        raise CorruptStore(f"{path}: not a write-ahead log (only {len(data)} bytes, no header)")
    magic, base_seq, crc = _HEADER.unpack(data)
    if magic != FILE_MAGIC or zlib.crc32(data[:16]) != crc:
        raise CorruptStore(f"{path}: not a write-ahead log, or its header is damaged (offset 0)")
    return int(base_seq)


def encode_record(record: dict[str, Any], index: int) -> bytes:
    if not isinstance(record, dict):
        raise InputError(f"log record {index} must be a dict, got {type(record).__name__}")
    try:
        payload = json.dumps(record, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()
    except (TypeError, ValueError, RecursionError) as exc:  # UnicodeEncodeError is a ValueError
        raise InputError(f"log record {index} is not JSON-able: {exc} (vectors: use encode_vector)") from exc
    if len(payload) > MAX_RECORD_BYTES:
        raise InputError(f"log record {index} is {len(payload)} bytes; the limit is {MAX_RECORD_BYTES}")
    return payload


def decode_record(frame: Frame, path: Path) -> dict[str, Any]:
    try:
        record = json.loads(frame.payload)
    except ValueError as exc:
        raise CorruptStore(
            f"{path}: record at offset {frame.offset} passed its checksum but is not JSON: {exc}"
        ) from exc
    if not isinstance(record, dict):
        raise CorruptStore(f"{path}: record at offset {frame.offset} is not a JSON object")
    return record
