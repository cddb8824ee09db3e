"""Request and response bodies of the recall service (what /docs shows), and Note -> response mapping.

Request models forbid unknown fields, so a misspelt field is a 422 naming it rather than a silent
default. They check shapes only; the engine checks meaning (a timestamp that does not parse, an empty
query) and its InputError becomes the same kind of 422.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr

from engine.model.note import Hit, Note, NoteVersion

TimeIn = StrictStr | StrictInt | StrictFloat


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MemoryIn(_Request):
    content: StrictStr = Field(min_length=1, description="The interaction text, stored whole.")
    timestamp: TimeIn | None = Field(None, description="ISO-8601 or epoch seconds; default now.")
    speaker: StrictStr | None = None
    metadata: dict[str, Any] | None = None
    source_id: StrictStr | None = Field(
        None, min_length=1, description="Your stable id: adding the same source_id again is a no-op."
    )


class AddRequest(_Request):
    memories: list[MemoryIn] = Field(
        min_length=1,
        description="One or many interactions, written as one batch (at most Config.write.max_batch_items).",
    )


class AddResponse(BaseModel):
    ids: list[str] = Field(description="The note id of every memory, in input order.")


class _SearchOptions(_Request):
    k: StrictInt = Field(10, ge=1, le=1000, description='An integer: true and "5" are refused.')
    as_of: TimeIn | None = Field(None, description="What was true at this time (ISO-8601 or epoch seconds).")
    include_superseded: StrictBool = False
    expand_links: StrictBool | None = Field(
        None, description="Add linked notes of strong hits (default: server config)."
    )


class SearchRequest(_SearchOptions):
    query: StrictStr = Field(min_length=1)


class BatchSearchRequest(_SearchOptions):
    queries: list[StrictStr] = Field(min_length=1, description="Searched together: one pass over the tenant.")


class LinkOut(BaseModel):
    target: str
    reason: str


class NoteOut(BaseModel):
    id: str
    content: str
    speaker: str | None
    timestamp: datetime
    keywords: list[str]
    tags: list[str]
    context: str
    links: list[LinkOut]
    metadata: dict[str, Any]
    source_ids: list[str]
    version: int
    annotated_by: str
    valid_at: datetime | None
    invalid_at: datetime | None
    superseded_by: str | None
    created_at: datetime
    updated_at: datetime


class HitOut(BaseModel):
    note: NoteOut
    score: float
    via: str | None = Field(None, description="Set when the note joined through a link of a stronger hit.")
    superseded: bool


class SearchResponse(BaseModel):
    hits: list[HitOut]


class BatchSearchResponse(BaseModel):
    results: list[SearchResponse] = Field(description="One per query, in request order.")


class VersionOut(BaseModel):
    version: int
    stage: str = Field(description="What changed it: evolve, supersede, merge, update, invalidate, rollback.")
    cause: str | None
    changed_at: datetime
    note: NoteOut = Field(description="The note as it was before the change.")


class HistoryResponse(BaseModel):
    id: str
    versions: list[VersionOut] = Field(description="Prior versions, oldest first (the current one is GET).")


class KeyRequest(_Request):
    tenant: str
    key: str | None = Field(None, description="Omit to get a new random key.")


class KeyOut(BaseModel):
    id: str
    tenant: str
    key: str | None = Field(None, description="Shown once, when the key is created.")


def note_out(note: Note) -> NoteOut:
    """The note's wire form, built without validation: every value comes from a Note the engine made,
    and validating ten of them took a third of the event loop's time per search (py-spy, bench/service.py).
    tests/service/test_schemas.py checks it dumps the same JSON as a validated build."""
    return NoteOut.model_construct(
        id=note.id,
        content=note.content,
        speaker=note.speaker,
        timestamp=note.timestamp,
        keywords=list(note.keywords),
        tags=list(note.tags),
        context=note.context,
        links=[LinkOut.model_construct(target=x.target, reason=x.reason) for x in note.links],
        metadata=dict(note.metadata),
        source_ids=list(note.source_ids),
        version=note.version,
        annotated_by=str(note.annotated_by),
        valid_at=note.valid_at,
        invalid_at=note.invalid_at,
        superseded_by=note.superseded_by,
        created_at=note.created_at,
        updated_at=note.updated_at,
    )


def hit_out(hit: Hit) -> HitOut:
    return HitOut.model_construct(
        note=note_out(hit.note), score=hit.score, via=hit.via, superseded=hit.is_superseded
    )


def version_out(v: NoteVersion) -> VersionOut:
    return VersionOut(
        version=v.version, stage=v.stage, cause=v.cause, changed_at=v.changed_at, note=note_out(v.note)
    )
