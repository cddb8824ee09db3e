"""One tenant's live memory: notes, vector index, lexical index, backlinks, history.

State changes only through `apply(ChangeSet)`; everything else reads. Everything kept per note is
compact (see note_table.py): a record, a vector row, a few array cells, slot-numbered backlinks.
A state packed into a snapshot's state file (packed.py) is adopted whole: records, backlinks and
source keys are then read from the file, and RAM holds only what changed since (an overlay).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import numpy as np

from engine.config import IndexConfig
from engine.errors import NotFound
from engine.model.changes import ChangeSet
from engine.model.note import Note
from engine.state.history import History
from engine.state.lexical import LexicalIndex
from engine.state.note_table import MIN_CAPACITY, NoteTable, grown
from engine.state.packed import Packed, Records, source_key
from engine.state.prepared import Prepared, indexed_text, prepare
from engine.state.vector_index import VectorIndex

_NO_LINKS = (np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int32))
SEARCHED_S = 2.0
"""A bigger tenant's write commits its lexical writes itself when a search came within this long."""
SETTLE_MAX = 16_384
"""Up to this many notes a write batch leaves its lexical writes committed (`settle`); a bigger tenant's
bulk ingest keeps gathering them into fewer, larger commits."""


class TenantMemory:
    def __init__(
        self,
        tenant: str,
        dim: int,
        use_cuda: bool = False,
        index_config: IndexConfig | None = None,
        scratch: Path | None = None,
    ) -> None:
        self.tenant = tenant
        self.scratch = scratch
        """Where working files go (history spills, the lexical index's working copy); None: system temp."""
        self.use_cuda = use_cuda
        self.index = VectorIndex(dim, use_cuda=use_cuda, config=index_config)
        self.notes = NoteTable(self.index)
        self.lexical = LexicalIndex()
        self.backlinks: dict[int, tuple[int, ...]] = {}
        """Target slot -> slots of the notes linking to it (derived from the links in the records); an
        overlay over `_base_links` (CSR offsets, slots) for the targets changed since it was packed. Tuples
        of ints, replaced on each edit: a process that grew a tenant holds one per linked note, and the
        collector walks every list on each full pass, where it stops tracking a tuple of ints."""
        self._base_links = _NO_LINKS
        self.history = History(scratch)
        self._sources: dict[int, int] = {}
        """source_key(interaction source id) -> slot (-1: removed), over the packed sorted keys, so
        re-ingesting a log skips what is stored (verified on hit)."""
        self._base_sources = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int32))
        self._num_sources = 0
        self._latest = -1
        """Slot of the note with the newest timestamp: what the next interaction most likely replies to."""
        self._visible_from = np.zeros(0)
        self._invalid_at = np.zeros(0)

    def __len__(self) -> int:
        return len(self.notes)

    def empty_copy(self) -> TenantMemory:
        """A fresh, empty state for the same tenant and index settings."""
        return TenantMemory(self.tenant, self.index.dim, self.use_cuda, self.index.config, self.scratch)

    def get(self, note_id: str) -> Note:
        try:
            return self.notes[note_id]
        except KeyError:
            raise NotFound(f"no note {note_id!r} in tenant {self.tenant!r}") from None

    @property
    def latest(self) -> Note | None:
        return self.notes.at(self._latest) if self._latest >= 0 else None

    def note_of_source(self, source_id: str) -> str | None:
        """Id of the note an interaction with this source id was folded into, if stored."""
        slot = self._source_slot(source_key(source_id))
        if slot is None or self.notes.record(slot) is None:
            return None
        note = self.notes.at(slot)
        return note.id if source_id in note.source_ids else None

    @property
    def num_sources(self) -> int:
        return self._num_sources

    def _source_slot(self, key: int) -> int | None:
        slot = self._sources.get(key)
        if slot is None:
            keys, slots = self._base_sources
            at = int(np.searchsorted(keys, key))
            slot = int(slots[at]) if at < len(keys) and keys[at] == key else -1
        return slot if slot >= 0 else None

    def _set_source(self, key: int, slot: int) -> None:
        self._num_sources += self._source_slot(key) is None
        self._sources[key] = slot

    def _drop_source(self, key: int, slot: int) -> None:
        if self._source_slot(key) == slot:
            self._sources[key] = -1
            self._num_sources -= 1

    def backlinks_of(self, slot: int) -> list[int]:
        """Slots of the notes linking to `slot` (a fresh list)."""
        if slot in self.backlinks:
            return list(self.backlinks[slot])
        offsets, slots = self._base_links
        return slots[offsets[slot] : offsets[slot + 1]].tolist() if slot + 1 < len(offsets) else []

    def _linking(self, slot: int) -> tuple[int, ...]:
        if slot in self.backlinks:
            return self.backlinks[slot]
        return tuple(self.backlinks_of(slot))

    # --- packing (snapshots) ----------------------------------------------------------------
    def pack(self) -> Packed:
        """The state as the state file stores it (records copied out of the map and the overlay)."""
        n = self.index.num_slots
        offsets, linked = self._packed_backlinks(n)
        notes = self.notes
        notes.fill_unknown(n)
        columns: dict[str, np.ndarray] = {"timestamp": notes.timestamp, "speaker": notes.speaker}
        columns |= {
            "chars": notes.chars,
            "timely": notes.timely,
            "stance": notes.stance,
            "fixed": notes.fixed,
            "links": notes.links,
            "fallback": notes.fallback,
            "created": notes.created,
        }
        columns |= {"visible_from": self._visible_from, "invalid_at": self._invalid_at}
        keys, key_slots = self._merged_sources()
        return Packed(
            records=Records(notes.record_column(n)),
            columns={k: v[:n] for k, v in columns.items()},
            speakers=notes.speakers,
            backlink_offsets=offsets,
            backlink_slots=linked,
            source_keys=keys,
            source_slots=key_slots,
        )

    def _packed_backlinks(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Backlinks of slots 0..n-1 as CSR: the previous state file's runs copied by one gather, the
        edited slots' lists written over them (a Python loop over every slot took ~1 s at 400k notes)."""
        offsets, slots = self._base_links
        counts = np.zeros(n, dtype=np.int64)
        m = max(0, min(n, len(offsets) - 1))
        counts[:m] = np.diff(offsets[: m + 1])
        edited = {s: links for s, links in self.backlinks.items() if s < n}
        at = np.fromiter(edited, dtype=np.int64, count=len(edited))
        counts[at] = np.fromiter((len(x) for x in edited.values()), dtype=np.int64, count=len(edited))
        packed_offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=packed_offsets[1:])
        out = np.empty(int(packed_offsets[-1]), dtype=np.int32)
        kept = np.ones(m, dtype=bool)
        kept[at[at < m]] = False
        runs = np.flatnonzero(kept & (counts[:m] > 0))
        lengths = counts[runs]
        step = np.arange(int(lengths.sum())) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        out[np.repeat(packed_offsets[runs], lengths) + step] = slots[np.repeat(offsets[runs], lengths) + step]
        for s, links in edited.items():
            out[packed_offsets[s] : packed_offsets[s] + len(links)] = links
        return packed_offsets, out

    def _merged_sources(self) -> tuple[np.ndarray, np.ndarray]:
        keys, slots = self._base_sources
        changed = np.fromiter(self._sources, dtype=np.int64, count=len(self._sources))
        keep = ~np.isin(keys, changed)
        new = [(k, s) for k, s in self._sources.items() if s >= 0]
        keys = np.concatenate([keys[keep], np.array([k for k, _ in new], dtype=np.int64)])
        slots = np.concatenate([slots[keep], np.array([s for _, s in new], dtype=np.int32)])
        order = np.argsort(keys, kind="stable")
        return keys[order], slots[order]

    def adopt(self, packed: Packed) -> None:
        """Take a packed state for the notes of the (already adopted) index: records stay in the file."""
        self.notes.adopt(packed.records, packed.columns, packed.speakers)
        self._visible_from = packed.columns["visible_from"].astype(np.float64)
        self._invalid_at = packed.columns["invalid_at"].astype(np.float64)
        self.backlinks, self._base_links = {}, (packed.backlink_offsets, packed.backlink_slots)
        self._sources, self._base_sources = {}, (packed.source_keys, packed.source_slots)
        self._num_sources = len(packed.source_keys)
        self._latest = self._newest_slot()

    # --- the only writer ---------------------------------------------------------
    def apply(
        self, changes: ChangeSet, index_text: bool = True, prepared: list[Prepared] | None = None
    ) -> None:
        """`index_text=False` leaves the lexical index alone: a snapshot brings its own (`adopt_lexical`).
        `prepared`: `prepare(changes)`, computed by the caller before it took the lock."""
        self.notes.bump()
        for note_id in changes.deletes:
            self._delete(note_id)
        for version in changes.versions:  # prepared by a caller that also seals the history unlocked
            self.history.append(version, seal=prepared is None)
        if changes.upserts:
            notes, vectors = [n for n, _ in changes.upserts], np.stack([v for _, v in changes.upserts])
            self._upsert(notes, vectors, index_text, prepared or prepare(changes))

    def settle(self) -> None:
        """Commit the batch's lexical writes now (the caller has released the tenant's lock), on a tenant
        of up to SETTLE_MAX notes or one searched in the last SEARCHED_S: a write is followed by a read in
        an agent's loop, and the commit (~10 ms on a small tenant, ~0.1 s at 400k notes) belongs to the
        write, not to the next search's latency. A bulk ingest that nobody searches keeps gathering its
        writes into fewer, larger commits. A failed commit stays buffered for the next read (OSError)."""
        if len(self) <= SETTLE_MAX or self.lexical.read_recently(SEARCHED_S):
            self.lexical.flush()

    def adopt_index(self, index: VectorIndex) -> None:
        """Take a persisted vector index (before any note is applied): its slots number the notes."""
        self.index = self.notes.index = index

    def adopt_lexical(self, lexical: LexicalIndex | None) -> None:
        """Take a lexical index built elsewhere for these slots, or (None) rebuild one from the notes."""
        if lexical is not None:
            self.lexical = lexical
            return
        self.lexical = LexicalIndex()
        for slot in self.index.slot_of.values():
            self.lexical.upsert_terms(slot, indexed_text(self.notes.at(slot)), *self.validity_at(slot))

    def _upsert(
        self, notes: list[Note], vectors: np.ndarray, index_text: bool, prepared: list[Prepared]
    ) -> None:
        olds = {n.id: old for n in notes if (old := self.notes.peek(n.id)) is not None}
        slots = self.index.upsert([n.id for n in notes], vectors)
        self._grow_validity()
        for note, slot, ready in zip(notes, slots, prepared, strict=True):
            old = olds.pop(note.id, None)
            if old is not None:
                self._unlink(slot, old)
            self.notes.put(slot, note, ready, same_content=old is not None and old.content == note.content)
            self._link(slot, note)
            if self._latest < 0 or note.timestamp.timestamp() >= self.notes.timestamp[self._latest]:
                self._latest = slot
            visible = max(note.timestamp, note.valid_at or note.timestamp).timestamp()
            invalid = note.invalid_at.timestamp() if note.invalid_at else np.inf
            self._visible_from[slot], self._invalid_at[slot] = visible, invalid
            if index_text:
                self.lexical.upsert_terms(slot, ready.indexed, visible, invalid)

    def _link(self, slot: int, note: Note) -> None:
        for target in note.link_targets():
            at = self.index.slot_of.get(target)
            if at is not None:
                self.backlinks[at] = (*self._linking(at), slot)
        for source in note.source_ids:
            self._set_source(source_key(source), slot)

    def _unlink(self, slot: int, note: Note) -> None:
        for target in note.link_targets():
            at = self.index.slot_of.get(target)
            if at is not None and slot in (linking := self._linking(at)):
                i = linking.index(slot)
                self.backlinks[at] = linking[:i] + linking[i + 1 :]
        for source in note.source_ids:
            self._drop_source(source_key(source), slot)

    def _delete(self, note_id: str) -> None:
        slot = self.index.slot_of.get(note_id)
        if slot is None or self.notes.record(slot) is None:
            return
        self._unlink(slot, self.notes.at(slot))
        self.lexical.remove(slot)
        self.history.drop(note_id)
        others, self.backlinks[slot] = self.backlinks_of(slot), ()
        for other in others:
            note = self.notes.at(other)
            note.links = [link for link in note.links if link.target != note_id]
            self.notes.put(other, note)
        self.notes.clear(slot)
        self.index.remove([note_id])
        if slot == self._latest:
            self._latest = self._newest_slot()

    def _newest_slot(self) -> int:
        live = np.flatnonzero(self.index.live)
        return int(live[np.argmax(self.notes.timestamp[live])]) if len(live) else -1

    def _grow_validity(self) -> None:
        """Capacity doubles, so growing costs O(1) amortised per note, not a copy per batch."""
        need = self.index.num_slots
        if need > len(self._visible_from):
            cap = max(need, 2 * len(self._visible_from), MIN_CAPACITY)
            self._visible_from = grown(self._visible_from, cap, -np.inf)
            self._invalid_at = grown(self._invalid_at, cap, np.inf)

    # --- reads ---------------------------------------------------------------
    def mask(self, as_of: datetime | None = None, include_superseded: bool = False) -> np.ndarray:
        """Slots visible to a search: valid now, valid at `as_of`, or every live one."""
        n = self.index.num_slots
        if include_superseded:
            return self.index.live.copy()
        if as_of is None:
            return self.index.live & (self._invalid_at[:n] == np.inf)
        t = as_of.timestamp()
        return self.index.live & (self._visible_from[:n] <= t) & (t < self._invalid_at[:n])

    def counts(self) -> tuple[int, int, int]:
        """(links, superseded notes, notes annotated by the fallback) over the live notes, from the columns."""
        live = self.index.live
        links, fallbacks = self.notes.totals(live)
        return links, int((live & (self._invalid_at[: len(live)] != np.inf)).sum()), fallbacks

    def validity(self, note_id: str) -> tuple[float, float]:
        """(visible from, invalid at) of a note, epoch seconds (inf: still valid)."""
        return self.validity_at(self.index.slot_of[note_id])

    def validity_at(self, slot: int) -> tuple[float, float]:
        """(visible from, invalid at) of the note in `slot`."""
        return float(self._visible_from[slot]), float(self._invalid_at[slot])

    def vector(self, note_id: str) -> np.ndarray:
        return self.index.vector(note_id)

    def neighbours_of(self, note_id: str) -> list[tuple[str, str]]:
        """(linked note id, reason) in both directions."""
        note = self.get(note_id)
        out = [(link.target, link.reason) for link in note.links if link.target in self.notes]
        for source in self.backlinks_of(self.index.slot_of[note_id]):
            src = self.notes.at(source)
            out.extend((src.id, link.reason) for link in src.links if link.target == note_id)
        return out
