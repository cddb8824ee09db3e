"""What the MCP tools take and return (their JSON schemas), and Note -> tool result mapping.

Results are compact on purpose: a tool result lands in an LLM's context window, so a search hit carries
what a model needs to use or cite a memory (id, text, time, validity, why it was recalled) and
`get_memory` carries the rest (keywords, tags, context, links, metadata).
"""

from __future__ import annotations

import base64
import binascii
from datetime import datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt, StrictStr, WithJsonSchema

from engine.errors import InputError
from engine.model.note import Hit, Note, NoteVersion

TimeIn = StrictStr | StrictInt | StrictFloat
MAX_ITEMS = 1000
# Nullable result fields as {"type": [T, "null"]} rather than pydantic's anyOf: the Python MCP client checks
# every result against the output schema with jsonschema, and anyOf branches cost it 2-3x (bench/mcp.py).
OptStr = Annotated[str | None, WithJsonSchema({"type": ["string", "null"]})]
OptTime = Annotated[datetime | None, WithJsonSchema({"type": ["string", "null"], "format": "date-time"})]


class MemoryItem(BaseModel):
    """One interaction to remember."""

    model_config = ConfigDict(extra="forbid")
    content: str = Field(
        min_length=1, description="The text to remember, stored whole (one message or fact)."
    )
    timestamp: TimeIn | None = Field(
        None, description="When it happened: ISO-8601 (2024-05-01T10:00:00Z) or epoch seconds; default now."
    )
    speaker: str | None = Field(None, description="Who said it (a name), if it was said by someone.")
    metadata: dict[str, Any] | None = Field(None, description="Any JSON object to keep with the memory.")
    source_id: str | None = Field(
        None,
        min_length=1,
        description="Your stable id for this input: adding the same source_id again is a no-op.",
    )


class Validity(BaseModel):
    valid_at: OptTime = Field(description="When the fact became true.")
    invalid_at: OptTime = Field(description="When it stopped being true; null while it still holds.")
    superseded_by: OptStr = Field(description="Id of the memory that replaced it, if one did.")


class Link(BaseModel):
    target: str = Field(description="Id of the linked memory.")
    reason: str = Field(description="Why the two are related.")


class MemorySummary(BaseModel):
    id: str
    content: str
    speaker: OptStr
    time: datetime = Field(description="When the interaction happened.")
    validity: Validity


class SearchHit(MemorySummary):
    score: float = Field(description="Relevance, higher is better.")
    superseded: bool = Field(
        description="True if a later memory replaced this one (shown with as_of/include_superseded)."
    )
    via: OptStr = Field(
        None, description="Set when this memory was added because a stronger hit links to it: why."
    )


class MemoryDetail(MemorySummary):
    keywords: list[str]
    tags: list[str]
    context: str = Field(description="One sentence on what the memory is about.")
    links: list[Link]
    metadata: dict[str, Any]
    version: int = Field(description="1 for a new memory; each change adds one (see memory_history).")
    created_at: datetime
    updated_at: datetime


class Version(BaseModel):
    version: int
    stage: str = Field(description="What changed it: evolve, supersede, merge, update, invalidate, rollback.")
    cause: OptStr = Field(description="The memory (or input) whose arrival caused the change, if any.")
    changed_at: datetime
    before: MemoryDetail = Field(description="The memory as it was before this change.")


class Added(BaseModel):
    ids: list[str] = Field(
        description="The memory id of every item, in input order (a repeat returns the id it merged into)."
    )


class SearchResult(BaseModel):
    hits: list[SearchHit]


class History(BaseModel):
    id: str
    versions: list[Version] = Field(
        description="Prior versions, oldest first; the current one is get_memory."
    )


class Page(BaseModel):
    memories: list[MemorySummary]
    next_cursor: OptStr = Field(description="Pass as cursor to get the next page; null on the last page.")


class Deleted(BaseModel):
    id: str
    deleted: bool = True


def validity(note: Note) -> Validity:
    return Validity(valid_at=note.valid_at, invalid_at=note.invalid_at, superseded_by=note.superseded_by)


def summary(note: Note) -> MemorySummary:
    return MemorySummary(
        id=note.id, content=note.content, speaker=note.speaker, time=note.timestamp, validity=validity(note)
    )


def hit(h: Hit) -> SearchHit:
    return SearchHit(**dict(summary(h.note)), score=h.score, superseded=h.is_superseded, via=h.via)


def detail(note: Note) -> MemoryDetail:
    return MemoryDetail(
        **dict(summary(note)),
        keywords=list(note.keywords),
        tags=list(note.tags),
        context=note.context,
        links=[Link(target=x.target, reason=x.reason) for x in note.links],
        metadata=dict(note.metadata),
        version=note.version,
        created_at=note.created_at,
        updated_at=note.updated_at,
    )


def version(v: NoteVersion) -> Version:
    return Version(
        version=v.version, stage=v.stage, cause=v.cause, changed_at=v.changed_at, before=detail(v.note)
    )


# --- list cursor ----------------------------------------------------------------------------
# Pages run in creation order, (created_at, id); the cursor is the last key a page returned, so a note
# added or deleted between two calls never shifts another note onto a second page or off all of them.
def order_key(note: Note) -> tuple[str, str]:
    return note.created_at.isoformat(timespec="microseconds"), note.id


def encode_cursor(key: tuple[str, str]) -> str:
    return base64.urlsafe_b64encode("|".join(key).encode()).decode()


def decode_cursor(cursor: str) -> tuple[str, str]:
    try:
        created, _, note_id = base64.urlsafe_b64decode(cursor.encode()).decode().partition("|")
        datetime.fromisoformat(created)
    except (binascii.Error, UnicodeError, ValueError):
        raise InputError("not a cursor this server returned", field="cursor") from None
    return created, note_id
