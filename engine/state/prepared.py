"""What storing a note computes from the note alone, done before the tenant's lock is taken.

Applying a write batch holds the tenant's state lock, so every search of that tenant waits for it. Most
of an apply's time went to work that reads only the note: its record (encoded and compressed), the
columns read from its content, and its lexical index terms (~45% of applying the ~4,000 notes a batch
writes at 200k notes). `prepare` does that work while searches still run (engine.memory, `_commit`);
`TenantMemory.apply` takes the result, and computes it itself when given none (log replay, snapshots).
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.annotate.facts.decision import is_fixed
from engine.annotate.facts.stance import stance
from engine.model.changes import ChangeSet
from engine.model.note import Note
from engine.state.record import encode
from engine.text import has_time_expression, terms


@dataclass(slots=True, frozen=True)
class Content:
    """The note table's columns read from a note's content."""

    chars: int
    timely: bool
    stance: int
    fixed: bool

    @classmethod
    def of(cls, text: str) -> Content:
        return cls(len(text), has_time_expression(text), stance(text), is_fixed(text))


@dataclass(slots=True, frozen=True)
class Prepared:
    record: bytes
    content: Content | None
    """None for a note's later versions: most are evolutions, whose content (and columns) stand; the
    table reads the rest under the lock (an edit's new text)."""
    indexed: str
    """The lexical index's text: the note's terms, joined."""


def lexical_text(note: Note) -> str:
    return " ".join(
        [note.speaker or "", note.content, " ".join(note.keywords), " ".join(note.tags), note.context]
    )


def indexed_text(note: Note) -> str:
    return " ".join(terms(lexical_text(note)))


def prepare(changes: ChangeSet) -> list[Prepared]:
    """One Prepared per upsert of `changes`, in order."""
    return [
        Prepared(encode(n), Content.of(n.content) if n.version == 1 else None, indexed_text(n))
        for n, _ in changes.upserts
    ]
