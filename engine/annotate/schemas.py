"""Typed requests to, and answers from, the three LLM stages (note, link, evolve).

Stored models live in note.py; these are what a stage is asked and what it must answer. An annotator
never returns a free dict: backends validate raw model output into these before the pipeline sees it.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.model.note import Note, Stage

STAGES = tuple(Stage)


@dataclass(slots=True)
class Annotation:
    """Stage 'note': K, G, X for one interaction."""

    keywords: list[str]
    tags: list[str]
    context: str
    annotated_by: str = "embedded"


@dataclass(slots=True)
class Candidate:
    """A neighbour offered to the link judge. `handle` is the small integer the LLM sees."""

    handle: int
    note: Note
    score: float
    fixed: bool | None = None
    """The note's content is never retired by a later statement (a question, a narrated event), as the
    note table keeps it; None: not known (a batch-mate), the judge reads it."""


@dataclass(slots=True)
class LinkRequest:
    note: Note
    candidates: list[Candidate]


@dataclass(slots=True)
class LinkChoice:
    """Stage 'link': one chosen candidate, mapped back from its handle to a note id."""

    target: str
    reason: str


@dataclass(slots=True)
class EvolveRequest:
    note: Note
    """The new note."""
    neighbours: list[Note]
    """The notes it was linked to, in their current state."""


@dataclass(slots=True)
class NeighbourUpdate:
    """Stage 'evolve': how one neighbour changes in the light of the new note.

    None keeps a field as it is. `supersedes` says the new note replaces this neighbour's fact.
    """

    target: str
    context: str | None = None
    keywords: list[str] | None = None
    tags: list[str] | None = None
    supersedes: bool = False
    reason: str = ""
