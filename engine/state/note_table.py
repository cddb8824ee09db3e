"""One tenant's notes, stored by index slot: a compact record per note, hot fields in arrays.

A `Note` object with its lists, datetimes and link objects costs several KB of Python heap; held per
note it was a large share of a tenant's memory. Here each note is one `bytes` (record.py: ~300 bytes
for a chat turn). A `Note` is built when it is read: recall reads tens per query and the write path a
few per new note, never all of them. What is read across every note (time, speaker, content length,
time words, stance, link count, annotator) lives in numpy columns by slot, so views and counts over the
whole tenant never decode a record.

After a snapshot the records live in its state file (packed.py), memory-mapped: RAM keeps only the
records written since (an overlay by slot) and the columns.

The table is a read-only `Mapping[str, Note]` to the rest of the engine; `TenantMemory` writes it.
Every read returns a fresh Note: changing it changes nothing stored.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from itertools import islice

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.annotate.facts.decision import is_fixed
from engine.model.note import AnnotatedBy, Note
from engine.state.packed import Records
from engine.state.prepared import Content, Prepared
from engine.state.record import decode, encode, micros
from engine.state.vector_index import VectorIndex

MIN_CAPACITY = 64
"""First column size: a store of many small tenants pays this per tenant (it doubles from there)."""
_CHUNK = 8192
"""Records converted to Arrow at a time (`record_column`)."""
_RECENT = 4096
"""Decoded notes kept for repeated reads (see `_decoded`)."""
_GONE = b""
"""Overlay entry of a slot deleted since the base was written (a real record is never empty)."""


class NoteTable(Mapping[str, Note]):
    def __init__(self, index: VectorIndex) -> None:
        self.index = index
        """Owns the id <-> slot mapping; replaced with it when a persisted index is adopted."""
        self._records: dict[int, bytes] = {}
        """Overlay: slot -> a record written since the base, or _GONE; a slot not in it reads the base. A
        dict, not a list over every slot: the garbage collector walks a list's cells on every full pass (a
        1M-slot list of Nones added ~10 ms to each after a reopen), and the overlay is empty then."""
        self._extent = 0
        """Slots the table knows of (the base's and any written since)."""
        self._base: Records | None = None
        self._recent: dict[int, Note] = {}
        """Slot -> the note last decoded from it (oldest first); a write to the slot drops it."""
        self._holds = 0
        """Open `holding` blocks: while one is, nothing decoded is evicted."""
        self._cache_lock = threading.Lock()
        """Guards `_recent` against a search and the writer's batch decoding at once."""
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
        self.fixed = np.zeros(0, dtype=np.int8)
        """Slot -> the content is never retired by a later statement (engine.annotate.facts.decision
        `is_fixed`): 1 / 0, -1 not known (a state file written before the column, a cleared slot)."""
        self.links = np.zeros(0, dtype=np.int32)
        """Slot -> how many links the note has (-1 not known, as for `fixed`)."""
        self.fallback = np.zeros(0, dtype=np.int8)
        """Slot -> annotated by the fallback annotator, the LLM having failed: 1 / 0, -1 not known."""
        self.created = np.zeros(0, dtype=np.int64)
        """Slot -> when the note was created, epoch microseconds (-1 not known; a time before 1970 is
        negative too): the order of `page`."""
        self.speakers: list[str] = []
        self._speaker_code: dict[str, int] = {}
        self.generation = 0
        """Counts write batches (views over the columns are rebuilt when it moves)."""

    # --- reads (the Mapping) --------------------------------------------------------------
    def __getitem__(self, note_id: str) -> Note:
        slot = self.index.slot_of.get(note_id)
        record = self.record(slot) if slot is not None else None
        if record is None:
            raise KeyError(note_id)
        return self._decoded(slot, record)  # type: ignore[arg-type]

    def peek(self, note_id: str) -> Note | None:
        """The note itself, not a copy: for the writer's own reads, which never change it."""
        slot = self.index.slot_of.get(note_id)
        record = self.record(slot) if slot is not None else None
        if record is None:
            return None
        return self._decoded(slot, record, copy=False)  # type: ignore[arg-type]

    def __contains__(self, note_id: object) -> bool:
        slot = self.index.slot_of.get(note_id) if isinstance(note_id, str) else None
        return slot is not None and self.record(slot) is not None

    def __iter__(self) -> Iterator[str]:
        return (i for i in list(self.index.slot_of) if i in self)

    def __len__(self) -> int:
        return len(self.index.slot_of)

    def at(self, slot: int) -> Note:
        record = self.record(slot)
        if record is None:
            raise KeyError(slot)
        return self._decoded(slot, record)

    def _decoded(self, slot: int, record: bytes | memoryview, copy: bool = True) -> Note:
        """The note (a copy, unless `copy` is False), decoded once while its slot is not written: one write
        batch reads a neighbour in the pipeline, the log and the apply step (a copy costs a twentieth of a
        decode).

        Keyed by slot alone, dropped by every write (`put`, `clear`, `adopt`): comparing records instead
        never matched a snapshot's (a view of Arrow memory is not equal to bytes), so every read of a
        note from the state file decoded it again."""
        note = self._recent.get(slot)
        if note is None:
            note = decode(record)
            with self._cache_lock:  # searches decode while a write batch reads its neighbours
                if len(self._recent) >= _RECENT and not self._holds:
                    self._recent.pop(next(iter(self._recent)), None)
                note = self._recent.setdefault(slot, note)
        return note.copy() if copy else note

    @contextmanager
    def holding(self) -> Iterator[None]:
        """Keep every note decoded inside the block until it ends (then the oldest past _RECENT go).

        A write batch reads each neighbour in the pipeline, again to log the change and again to apply
        it; neighbours are shared by many new notes, and a batch of 1,000 reads more than _RECENT of them,
        so the plain cache evicted notes before their last read and decoded them again."""
        self._holds += 1
        try:
            yield
        finally:
            self._holds -= 1
            if not self._holds:
                with self._cache_lock:
                    for slot in list(islice(self._recent, max(0, len(self._recent) - _RECENT))):
                        del self._recent[slot]

    def record(self, slot: int) -> bytes | memoryview | None:
        """The stored record (None: no note in that slot)."""
        record = self._records.get(slot)
        if record is None:
            return self._base.get(slot) if self._base is not None else None
        return record or None

    @property
    def held(self) -> int:
        """Records held in RAM (written since the base): what a snapshot would move to disk."""
        return len(self._records)

    def written(self, num_slots: int) -> np.ndarray:
        """Slot -> written or cleared since the base (every slot when there is no base): what a snapshot's
        notes file must write anew; the rest it may take from the base's snapshot."""
        out = np.ones(num_slots, dtype=bool)
        if self._base is not None:
            out[: min(num_slots, self._extent)] = False
            out[[s for s in self._records if s < num_slots]] = True
        return out

    def fill_unknown(self, num_slots: int) -> None:
        """Read the columns a state file written before them lacks (-1) from the records: once, at the
        first snapshot after (or the first `totals`), so they are then in the file."""
        n = num_slots
        unknown = (
            (self.fixed[:n] < 0) | (self.links[:n] < 0) | (self.fallback[:n] < 0) | (self.created[:n] == -1)
        )
        for slot in np.flatnonzero(unknown).tolist():
            record = self.record(slot)
            if record is not None:
                note = decode(record)
                self.fixed[slot] = is_fixed(note.content)
                self._read_standing(slot, note)

    def totals(self, live: np.ndarray) -> tuple[int, int]:
        """(links, notes annotated by the fallback) over the slots `live` marks, without decoding a record
        (but those of a state file written before the columns, once)."""
        n = len(live)
        self.fill_unknown(n)
        return int(self.links[:n][live].sum()), int((self.fallback[:n][live] == 1).sum())

    def page(self, after: tuple[int, str] | None, limit: int) -> tuple[list[Note], bool]:
        """Up to `limit` notes in creation order (created microseconds, then id) after the key `after`, and
        whether more follow: a sort of the column's live cells, then `limit` decodes, whatever the size."""
        live, ids = self.index.live, self.index.ids
        self.fill_unknown(len(live))
        created, ok = self.created[: len(live)], live.copy()
        if after is not None:
            ok &= created >= after[0]
            for slot in np.flatnonzero(ok & (created == after[0])).tolist():
                ok[slot] = str(ids[slot]) > after[1]
        found = np.flatnonzero(ok)
        if len(found) > limit:  # the `limit` earliest and whatever ties with the last of them
            found = found[created[found] <= np.partition(created[found], limit - 1)[limit - 1]]
        slots = sorted(found.tolist(), key=lambda s: (int(created[s]), str(ids[s])))[:limit]
        return [self.at(s) for s in slots], int(np.count_nonzero(ok)) > limit

    def fallback_notes(self, num_slots: int) -> list[Note]:
        """The notes the fallback annotator built (the LLM having failed for them), found by their column."""
        self.fill_unknown(num_slots)
        return [self.at(s) for s in np.flatnonzero(self.fallback[:num_slots] == 1).tolist()]

    def record_column(self, num_slots: int) -> pa.Array:
        """Every slot's record (null: empty) as one column, for the state file. Converted _CHUNK slots at
        a time: a snapshot packs with the tenant's lock released, and one whole-tenant conversion held the
        GIL for 0.8 s at 270k notes, stalling every search beside it (converting in chunks: 0.1 s)."""
        chunks = [pa.array([], pa.large_binary())]
        overlay = np.fromiter(sorted(self._records), dtype=np.int64, count=len(self._records))
        for start in range(0, num_slots, _CHUNK):
            end = min(start + _CHUNK, num_slots)
            written = overlay[np.searchsorted(overlay, start) : np.searchsorted(overlay, end)]
            chunks.append(self._record_chunk(start, end, written))
        return pa.concat_arrays(chunks)

    def _record_chunk(self, start: int, end: int, written: np.ndarray) -> pa.Array:
        """Slots start..end: the base's column where the overlay holds nothing (a slice of the map, not a
        copy per record: 1.4 s of a 414k-note snapshot went to those), the overlay's records (`written`,
        its slots in the range) elsewhere."""
        if self._base is None or end > len(self._base):
            records = (self.record(s) for s in range(start, end))
            return pa.array(
                [bytes(r) if isinstance(r, memoryview) else r for r in records], pa.large_binary()
            )
        column = self._base.column.slice(start, end - start)
        if not len(written):
            return column
        mask = np.zeros(end - start, dtype=bool)
        mask[written - start] = True
        # _GONE reads as null
        values = pa.array([self._records[s] or None for s in written.tolist()], pa.large_binary())
        return pc.replace_with_mask(column, pa.array(mask), values)

    def adopt(self, base: Records, columns: dict[str, np.ndarray], speakers: list[str]) -> None:
        """Read records from `base` (a state file's), with its columns; the overlay starts empty."""
        self._base, self._records, self._extent = base, {}, len(base)
        self._recent.clear()
        self.timestamp, self.speaker = columns["timestamp"], columns["speaker"].astype(np.int32)
        self.chars, self.timely = columns["chars"].astype(np.int32), columns["timely"].astype(bool)
        self.stance = columns["stance"].astype(np.int16)
        self.fixed = columns["fixed"].astype(np.int8)
        self.links, self.fallback = columns["links"].astype(np.int32), columns["fallback"].astype(np.int8)
        self.created = columns["created"].astype(np.int64)
        self.speakers, self._speaker_code = list(speakers), {s: i for i, s in enumerate(speakers)}
        self.bump()

    # --- writes (TenantMemory only) ---------------------------------------------------------
    def bump(self) -> None:
        self.generation += 1

    def put(self, slot: int, note: Note, ready: Prepared | None = None, same_content: bool = False) -> None:
        """Store `note` at `slot`; `same_content`: the slot's note had this content (an evolved note), so
        the columns read from the content stand. `ready`: what the note alone gives, computed before."""
        ready = ready or Prepared(encode(note), None, "")
        self._reserve(slot + 1)
        self._records[slot] = ready.record
        self._recent.pop(slot, None)
        self.timestamp[slot] = note.timestamp.timestamp()
        self.speaker[slot] = self._code(note.speaker)
        self._read_standing(slot, note)
        if same_content:
            return
        content = ready.content or Content.of(note.content)
        self.chars[slot], self.timely[slot], self.stance[slot] = content.chars, content.timely, content.stance
        self.fixed[slot] = content.fixed

    def _read_standing(self, slot: int, note: Note) -> None:
        """The columns read from a note's links, annotator and creation time (not its content)."""
        self.links[slot], self.fallback[slot] = len(note.links), note.annotated_by == AnnotatedBy.FALLBACK
        self.created[slot] = micros(note.created_at) or 0

    def clear(self, slot: int) -> None:
        if slot < self._extent:
            self._records[slot] = _GONE
            self._recent.pop(slot, None)
            self.speaker[slot], self.chars[slot], self.timely[slot], self.stance[slot] = -1, 0, False, 0
            self.fixed[slot] = self.links[slot] = self.fallback[slot] = self.created[slot] = -1

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
        self._extent = max(self._extent, need)
        if need > len(self.timestamp):
            cap = max(need, 2 * len(self.timestamp), MIN_CAPACITY)
            self.timestamp = grown(self.timestamp, cap, 0.0)
            self.speaker = grown(self.speaker, cap, -1)
            self.chars = grown(self.chars, cap, 0)
            self.timely = grown(self.timely, cap, False)
            self.stance = grown(self.stance, cap, 0)
            self.fixed = grown(self.fixed, cap, -1)
            self.links = grown(self.links, cap, -1)
            self.fallback = grown(self.fallback, cap, -1)
            self.created = grown(self.created, cap, -1)


def grown(values: np.ndarray, capacity: int, fill: float) -> np.ndarray:
    """`values` copied into a larger array of the same dtype, the new cells set to `fill`."""
    out = np.full(capacity, fill, dtype=values.dtype)
    out[: len(values)] = values
    return out
