"""The LLM-stage swap point: one protocol, every stage batched.

Implementations: `engine.annotate.embedded.EmbeddedAnnotator` (offline default) and
`engine.llm.annotator.LLMAnnotator` (OpenAI-compatible server or in-process vLLM).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from engine.annotate.schemas import Annotation, EvolveRequest, LinkChoice, LinkRequest, NeighbourUpdate
from engine.model.note import Interaction


@runtime_checkable
class Annotator(Protocol):
    name: str

    def annotate(self, items: Sequence[Interaction]) -> list[Annotation]:
        """Build keywords, tags and context for every interaction (same order)."""
        ...

    def judge_links(self, requests: Sequence[LinkRequest]) -> list[list[LinkChoice]]:
        """For every new note, which offered candidates deserve a link. Only offered ids may appear."""
        ...

    def evolve(self, requests: Sequence[EvolveRequest]) -> list[list[NeighbourUpdate]]:
        """For every new note, how its linked neighbours change (and which it supersedes)."""
        ...

    def close(self) -> None: ...
