"""Domain models: the note, its links and its past versions.

A note is A-MEM's memory unit {content c, time t, keywords K, tags G, context X, embedding e, links L},
plus bi-temporal validity (Graphiti's naming) and version bookkeeping. Embeddings live in the index and
in snapshots, not on the Note, so notes stay cheap to copy and print.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

import numpy as np

from engine.model.timeutil import utcnow


class Stage(StrEnum):
    """An LLM (or embedded) stage, as counted by the cost meter."""

    NOTE = "note"
    LINK = "link"
    EVOLVE = "evolve"
    EMBED = "embed"


class AnnotatedBy(StrEnum):
    """Which annotator built a note's keywords, tags and context."""

    EMBEDDED = "embedded"
    LLM = "llm"
    FALLBACK = "embedded-fallback"
    """The LLM failed for this note; `amem reannotate` redoes it."""


class VersionCause(StrEnum):
    """What made a note change (kept on each prior version as `stage`)."""

    EVOLVE = "evolve"
    SUPERSEDE = "supersede"
    MERGE = "merge"
    UPDATE = "update"
    INVALIDATE = "invalidate"
    ROLLBACK = "rollback"
    REANNOTATE = "reannotate"


def new_id() -> str:
    return uuid.uuid4().hex


@dataclass(slots=True)
class Link:
    """A directed edge from a note to a related one, with the judge's reason."""

    target: str
    """Id of the linked note (same tenant)."""
    reason: str
    """Why the judge linked them, in words (shown as `via` on graph expansion)."""
    created_at: datetime = field(default_factory=utcnow)


@dataclass(slots=True)
class Note:
    id: str
    tenant: str
    content: str
    """The interaction text, stored whole."""
    timestamp: datetime
    """When the interaction happened (A-MEM's t)."""
    speaker: str | None = None
    keywords: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    context: str = ""
    """One-sentence description of what the note is about; evolution rewrites it."""
    links: list[Link] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    source_ids: list[str] = field(default_factory=list)
    """Ids of every interaction folded into this note (more than one after a near-duplicate merge)."""
    occurrences: list[datetime] = field(default_factory=list)
    """Times of every repeat merged into this note, the first one included."""
    annotated_by: str = AnnotatedBy.EMBEDDED
    """Which annotator built K, G, X: 'embedded', 'llm', or 'embedded-fallback' when the LLM failed."""
    version: int = 1
    created_at: datetime = field(default_factory=utcnow)
    """When the engine stored the note."""
    updated_at: datetime = field(default_factory=utcnow)
    valid_at: datetime | None = None
    """When the fact became true; the interaction time unless stated otherwise."""
    invalid_at: datetime | None = None
    """When the fact stopped being true (a later note superseded it, or it was invalidated)."""
    expired_at: datetime | None = None
    """When the engine retired the fact (wall-clock time of the supersession)."""
    superseded_by: str | None = None

    def __post_init__(self) -> None:
        if self.valid_at is None:
            self.valid_at = self.timestamp

    def embedding_text(self, max_chars: int) -> str:
        """A-MEM's e = enc(c || K || G || X); content truncated with a marker past max_chars."""
        parts = [clip(self.content, max_chars)]
        if self.speaker:
            parts.insert(0, f"{self.speaker}:")
        if self.keywords:
            parts.append("Keywords: " + ", ".join(self.keywords))
        if self.tags:
            parts.append("Tags: " + ", ".join(self.tags))
        if self.context:
            parts.append("Context: " + self.context)
        return " ".join(parts)

    def is_valid_at(self, when: datetime) -> bool:
        assert self.valid_at is not None
        started = self.valid_at <= when or self.timestamp <= when
        return started and (self.invalid_at is None or when < self.invalid_at)

    @property
    def is_current(self) -> bool:
        return self.invalid_at is None

    def copy(self) -> Note:
        """An independent copy (lists and dicts copied one level: their items are immutable or replaced whole).

        Built field by field: `dataclasses.replace` walks the fields' metadata on every call, and the
        write path copies each neighbour it reads (a third of a batch's note handling was copies)."""
        return Note(
            self.id, self.tenant, self.content, self.timestamp, self.speaker, list(self.keywords),
            list(self.tags), self.context, list(self.links), dict(self.metadata), list(self.source_ids),
            list(self.occurrences), self.annotated_by, self.version, self.created_at, self.updated_at,
            self.valid_at, self.invalid_at, self.expired_at, self.superseded_by,
        )  # fmt: skip

    def link_targets(self) -> list[str]:
        return [link.target for link in self.links]


TRUNCATION_MARKER = " …[truncated]"


def clip(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return text
    return text[: max_chars - len(TRUNCATION_MARKER)] + TRUNCATION_MARKER


@dataclass(slots=True)
class NoteVersion:
    """A note as it was before a change, with what caused the change."""

    note_id: str
    version: int
    note: Note
    """The full prior state (a copy)."""
    embedding: np.ndarray | None
    """The vector it had, when known (None: re-encode the restored text, the encoder is deterministic)."""
    stage: str
    """What changed it: a VersionCause value."""
    cause: str | None
    """Id of the note (or interaction) whose arrival caused the change, if any."""
    changed_at: datetime = field(default_factory=utcnow)
    reason: str = ""
    """Why, in words, when a judge said so ("superseded: same attribute 'manager', change cue 'since'")."""


@dataclass(slots=True)
class Interaction:
    """One accepted input, normalised: what a note is built from."""

    content: str
    timestamp: datetime
    speaker: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    source_id: str | None = None
    """Stable id of the input (file+line, or caller-given) so re-ingesting the same log skips it."""
    previous: str | None = None
    """The interaction just before this one in the tenant's conversation ("speaker: text"), set by the
    pipeline so the note stage can say what this one answers."""


@dataclass(slots=True)
class Hit:
    note: Note
    score: float
    via: str | None = None
    """Set on notes that joined through graph expansion: the link reason and the hit it came from."""
    is_superseded: bool = False
