"""One tenant's notes, stored by index slot: a compact record per note, hot fields in arrays.

A `Note` object with its lists, datetimes and link objects costs several KB of Python heap; held per
note it was a large share of a tenant's memory. Here each note is one `bytes`: the Note pickled, then
zlib level 1 (exact datetimes, half the bytes, ~20 us to load; it never leaves the process: snapshots
and the log keep their own record form). A `Note` is built when it is read: recall reads tens per
query and the write path a few per new note, never all of them. What is read across every note (time,
speaker, content length, time words, stance) lives in numpy columns by slot, so views over the whole tenant
never decode a record.

The table is a read-only `Mapping[str, Note]` to the rest of the engine; `TenantMemory` writes it.
Every read returns a fresh Note: changing it changes nothing stored.
"""

from __future__ import annotations

import pickle
import zlib
from collections.abc import Iterator, Mapping

import numpy as np

from engine.annotate.facts.stance import stance
from engine.model.note import Note
from engine.state.vector_index import VectorIndex
from engine.text import has_time_expression

_MIN_CAPACITY = 1024


class NoteTable(Mapping[str, Note]):
    def __init__(self, index: VectorIndex) -> None:
        self.index = index
        """Owns the id <-> slot mapping; replaced with it when a persisted index is adopted."""
        self._records: list[bytes | None] = []
        self.timestamp = np.zeros(0)
        """Slot -> note time (POSIX seconds)."""
        self.speaker = np.zeros(0, dtype=np.int32)
        """Slot -> index into `speakers` (-1: none)."""
        self.chars = np.zeros(0, dtype=np.int32)
        """Slot -> content length."""
        self.timely = np.zeros(0, dtype=bool)
        """Slot -> the content says when (a time expression), for temporal questions."""
        self.stance = np.zeros(0, dtype=np.int16)
        """Slot -> asserted (0) or hedged: hypothetical, negated, another party's (engine.annotate.facts.stance)."""
        self.speakers: list[str] = []
        self._speaker_code: dict[str, int] = {}
        self.generation = 0
        """Counts write batches (views over the columns are rebuilt when it moves)."""

    # --- reads (the Mapping) --------------------------------------------------------------
    def __getitem__(self, note_id: str) -> Note:
        slot = self.index.slot_of.get(note_id)
        record = self._records[slot] if slot is not None and slot < len(self._records) else None
        if record is None:
            raise KeyError(note_id)
        return pickle.loads(zlib.decompress(record))

    def __contains__(self, note_id: object) -> bool:
        slot = self.index.slot_of.get(note_id) if isinstance(note_id, str) else None
        return slot is not None and slot < len(self._records) and self._records[slot] is not None

    def __iter__(self) -> Iterator[str]:
        return (i for i in list(self.index.slot_of) if i in self)

    def __len__(self) -> int:
        return len(self.index.slot_of)

    def at(self, slot: int) -> Note:
        record = self._records[slot]
        if record is None:
            raise KeyError(slot)
        return pickle.loads(zlib.decompress(record))

    def record(self, slot: int) -> bytes | None:
        """The stored record (None: no note in that slot)."""
        return self._records[slot] if slot < len(self._records) else None

    # --- writes (TenantMemory only) ---------------------------------------------------------
    def bump(self) -> None:
        self.generation += 1

    def put(self, slot: int, note: Note) -> None:
        self._reserve(slot + 1)
        self._records[slot] = zlib.compress(pickle.dumps(note, pickle.HIGHEST_PROTOCOL), 1)
        self.timestamp[slot] = note.timestamp.timestamp()
        self.speaker[slot] = self._code(note.speaker)
        self.chars[slot] = len(note.content)
        self.timely[slot] = has_time_expression(note.content)
        self.stance[slot] = stance(note.content)

    def clear(self, slot: int) -> None:
        if slot < len(self._records):
            self._records[slot] = None
            self.speaker[slot], self.chars[slot], self.timely[slot], self.stance[slot] = -1, 0, False, 0

    def _code(self, speaker: str | None) -> int:
        if not speaker:
            return -1
        code = self._speaker_code.get(speaker)
        if code is None:
            code = self._speaker_code[speaker] = len(self.speakers)
            self.speakers.append(speaker)
        return code

    def _reserve(self, need: int) -> None:
        """Columns grow by doubling: O(1) amortised per note, never a copy per batch."""
        if need > len(self._records):
            self._records.extend([None] * (need - len(self._records)))
        if need > len(self.timestamp):
            cap = max(need, 2 * len(self.timestamp), _MIN_CAPACITY)
            self.timestamp = grown(self.timestamp, cap, 0.0)
            self.speaker = grown(self.speaker, cap, -1)
            self.chars = grown(self.chars, cap, 0)
            self.timely = grown(self.timely, cap, False)
            self.stance = grown(self.stance, cap, 0)


def grown(values: np.ndarray, capacity: int, fill: float) -> np.ndarray:
    """`values` copied into a larger array of the same dtype, the new cells set to `fill`."""
    out = np.full(capacity, fill, dtype=values.dtype)
    out[: len(values)] = values
    return out
