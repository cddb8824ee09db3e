"""One tenant's live memory: notes, vector index, lexical index, backlinks, history.

State changes only through `apply(ChangeSet)`; everything else reads.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

import numpy as np

from engine.config import IndexConfig
from engine.errors import NotFound
from engine.model.changes import ChangeSet
from engine.model.note import Note
from engine.state.history import History
from engine.state.lexical import LexicalIndex
from engine.state.vector_index import VectorIndex


class TenantMemory:
    def __init__(
        self, tenant: str, dim: int, use_cuda: bool = False, index_config: IndexConfig | None = None
    ) -> None:
        self.tenant = tenant
        self.use_cuda = use_cuda
        self.notes: dict[str, Note] = {}
        self.index = VectorIndex(dim, use_cuda=use_cuda, config=index_config)
        self.lexical = LexicalIndex()
        self.backlinks: dict[str, set[str]] = defaultdict(set)
        self.history = History()
        self.sources: dict[str, str] = {}
        """Interaction source id -> note id, so re-ingesting a log skips what is stored."""
        self.latest: Note | None = None
        """The note with the newest timestamp: what the next interaction most likely replies to."""
        self._visible_from = np.zeros(0)
        self._invalid_at = np.zeros(0)

    def __len__(self) -> int:
        return len(self.notes)

    def empty_copy(self) -> TenantMemory:
        """A fresh, empty state for the same tenant and index settings."""
        return TenantMemory(self.tenant, self.index.dim, self.use_cuda, self.index.config)

    def get(self, note_id: str) -> Note:
        note = self.notes.get(note_id)
        if note is None:
            raise NotFound(f"no note {note_id!r} in tenant {self.tenant!r}")
        return note

    # --- the only writer ---------------------------------------------------------
    def apply(self, changes: ChangeSet, index_text: bool = True) -> None:
        """`index_text=False` leaves the lexical index alone: a snapshot brings its own (`adopt_lexical`)."""
        for note_id in changes.deletes:
            self._delete(note_id)
        for version in changes.versions:
            self.history.append(version)
        if changes.upserts:
            notes, vectors = [n for n, _ in changes.upserts], np.stack([v for _, v in changes.upserts])
            self._upsert(notes, vectors, index_text)

    def adopt_lexical(self, lexical: LexicalIndex | None) -> None:
        """Take a lexical index built elsewhere for these slots, or (None) rebuild one from the notes."""
        if lexical is not None:
            self.lexical = lexical
            return
        self.lexical = LexicalIndex()
        for note in self.notes.values():
            slot = self.index.slot_of[note.id]
            self.lexical.upsert(slot, lexical_text(note), self._visible_from[slot], self._invalid_at[slot])

    def _upsert(self, notes: list[Note], vectors: np.ndarray, index_text: bool = True) -> None:
        for note in notes:
            old = self.notes.get(note.id)
            if old is not None:
                for target in old.link_targets():
                    self.backlinks[target].discard(note.id)
            self.notes[note.id] = note
            for target in note.link_targets():
                self.backlinks[target].add(note.id)
            for source in note.source_ids:
                self.sources[source] = note.id
            if self.latest is None or note.timestamp >= self.latest.timestamp:
                self.latest = note
        slots = self.index.upsert([n.id for n in notes], vectors)
        self._grow_validity()
        for note, slot in zip(notes, slots, strict=True):
            visible = max(note.timestamp, note.valid_at or note.timestamp).timestamp()
            invalid = note.invalid_at.timestamp() if note.invalid_at else np.inf
            self._visible_from[slot], self._invalid_at[slot] = visible, invalid
            if index_text:
                self.lexical.upsert(slot, lexical_text(note), visible, invalid)

    def _delete(self, note_id: str) -> None:
        note = self.notes.pop(note_id, None)
        if note is None:
            return
        slot = self.index.slot_of.get(note_id)
        if slot is not None:
            self.lexical.remove(slot)
        self.index.remove([note_id])
        for target in note.link_targets():
            self.backlinks[target].discard(note_id)
        for source in note.source_ids:
            self.sources.pop(source, None)
        self.history.drop(note_id)
        for other_id in self.backlinks.pop(note_id, set()):
            other = self.notes.get(other_id)
            if other is not None:
                other.links = [link for link in other.links if link.target != note_id]

    def _grow_validity(self) -> None:
        """Capacity doubles, so growing costs O(1) amortised per note, not a copy per batch."""
        need = self.index.num_slots
        if need > len(self._visible_from):
            cap = max(need, 2 * len(self._visible_from), 1024)
            self._visible_from = _grown(self._visible_from, cap, -np.inf)
            self._invalid_at = _grown(self._invalid_at, cap, np.inf)

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

    def validity(self, note_id: str) -> tuple[float, float]:
        """(visible from, invalid at) of a note, epoch seconds (inf: still valid)."""
        slot = self.index.slot_of[note_id]
        return float(self._visible_from[slot]), float(self._invalid_at[slot])

    def vector(self, note_id: str) -> np.ndarray:
        return self.index.vector(note_id)

    def neighbours_of(self, note_id: str) -> list[tuple[str, str]]:
        """(linked note id, reason) in both directions."""
        note = self.get(note_id)
        out = [(link.target, link.reason) for link in note.links if link.target in self.notes]
        for source in self.backlinks.get(note_id, ()):
            src = self.notes.get(source)
            if src is not None:
                out.extend((source, link.reason) for link in src.links if link.target == note_id)
        return out


def _grown(values: np.ndarray, capacity: int, fill: float) -> np.ndarray:
    out = np.full(capacity, fill)
    out[: len(values)] = values
    return out


def lexical_text(note: Note) -> str:
    return " ".join(
        [note.speaker or "", note.content, " ".join(note.keywords), " ".join(note.tags), note.context]
    )
