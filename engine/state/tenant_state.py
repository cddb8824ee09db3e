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
from engine.state.lexical import BM25
from engine.state.vector_index import VectorIndex


class TenantMemory:
    def __init__(
        self, tenant: str, dim: int, use_cuda: bool = False, index_config: IndexConfig | None = None
    ) -> None:
        self.tenant = tenant
        self.use_cuda = use_cuda
        self.notes: dict[str, Note] = {}
        self.index = VectorIndex(dim, use_cuda=use_cuda, config=index_config)
        self.lexical = BM25()
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
    def apply(self, changes: ChangeSet) -> None:
        for note_id in changes.deletes:
            self._delete(note_id)
        for version in changes.versions:
            self.history.append(version)
        if changes.upserts:
            self._upsert([n for n, _ in changes.upserts], np.stack([v for _, v in changes.upserts]))

    def _upsert(self, notes: list[Note], vectors: np.ndarray) -> None:
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
            self.lexical.upsert(slot, lexical_text(note))
            self._visible_from[slot] = max(note.timestamp, note.valid_at or note.timestamp).timestamp()
            self._invalid_at[slot] = note.invalid_at.timestamp() if note.invalid_at else np.inf

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
        grow = self.index.num_slots - len(self._visible_from)
        if grow > 0:
            self._visible_from = np.concatenate([self._visible_from, np.full(grow, -np.inf)])
            self._invalid_at = np.concatenate([self._invalid_at, np.full(grow, np.inf)])

    # --- reads ---------------------------------------------------------------
    def mask(self, as_of: datetime | None = None, include_superseded: bool = False) -> np.ndarray:
        """Slots visible to a search: valid now, valid at `as_of`, or every live one."""
        if include_superseded:
            return self.index.live.copy()
        if as_of is None:
            return self.index.live & (self._invalid_at == np.inf)
        t = as_of.timestamp()
        return self.index.live & (self._visible_from <= t) & (t < self._invalid_at)

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


def lexical_text(note: Note) -> str:
    return " ".join(
        [note.speaker or "", note.content, " ".join(note.keywords), " ".join(note.tags), note.context]
    )
