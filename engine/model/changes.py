"""A ChangeSet: everything one write did to a tenant, computed first, then logged, then applied.

The pipeline produces ChangeSets without touching the live state; the write-ahead log persists them;
`TenantMemory.apply` makes them visible. Replaying the log after a crash is applying them again.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from engine.model.note import Note, NoteVersion


@dataclass(slots=True)
class ChangeSet:
    upserts: list[tuple[Note, np.ndarray]] = field(default_factory=list)
    """Full new state of every created or changed note, with its vector."""
    versions: list[NoteVersion] = field(default_factory=list)
    """Prior states kept for history and rollback."""
    deletes: list[str] = field(default_factory=list)
    """Hard deletes: note, vector, links to it and its history all go."""

    def __bool__(self) -> bool:
        return bool(self.upserts or self.versions or self.deletes)

    def extend(self, other: ChangeSet) -> None:
        self.upserts.extend(other.upserts)
        self.versions.extend(other.versions)
        self.deletes.extend(other.deletes)
