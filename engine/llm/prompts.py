"""The three A-MEM stage prompts, their output schemas, and strict validators (one module, versioned).

Every prompt is [system, user]: the system message is fixed per stage (identical across requests, so
vLLM's prefix cache serves it), the user message is the variable JSON input, last. The model refers
to candidates and neighbours by small integer handles (0..k-1) that we map back to note ids; the
reference A-MEM code writes evolution back by result rank, which changes the wrong notes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from engine.annotate.schemas import (
    Annotation,
    Candidate,
    EvolveRequest,
    LinkChoice,
    LinkRequest,
    NeighbourUpdate,
)
from engine.errors import LLMBadOutput
from engine.model.note import Interaction, Note, clip

PROMPT_VERSION = "amem-prompts-3"
NEIGHBOUR_CHARS = 1000
"""Candidates and neighbours are clipped harder than the new note: k of them share one prompt."""

Message = dict[str, str]
Prompt = list[Message]

_JSON_ONLY = "Answer with one JSON object and nothing else: no prose, no code fences."

SYSTEM: dict[str, str] = {
    "note": f"""You build notes for an AI agent's long-term memory ({PROMPT_VERSION}, stage note).
The user message is a JSON object {{"content": interaction text, "time": ISO-8601, "speaker": name or null}}.
{_JSON_ONLY} It has exactly these fields:
- "keywords": 1 to 12 salient terms from the content, most important first (people, places, objects,
  events, dates, numbers); no stopwords, no generic words.
- "tags": 1 to 5 broad categories for retrieval, lowercase (e.g. "travel", "health", "work", "family").
- "context": one sentence saying what the interaction is about, who is involved and why it matters.""",
    "link": f"""You connect notes in an AI agent's long-term memory ({PROMPT_VERSION}, stage link).
The user message is a JSON object {{"note": the new note, "candidates": [{{"handle": integer, ...}}]}}; every
note has content, time, speaker, keywords, tags and context.
Link the new note to the candidates it is genuinely related to: the same people, events, plans or
topics, or facts that refine, update or contradict each other. Similar wording alone is not enough.
{_JSON_ONLY} It has exactly one field:
- "links": a list of {{"handle": integer, "reason": short phrase}}, one per linked candidate. Use only
  handles that appear in "candidates". An empty list is a valid answer.""",
    "evolve": f"""You maintain an AI agent's long-term memory ({PROMPT_VERSION}, stage evolve).
The user message is a JSON object {{"note": the new note, "neighbours": [{{"handle": integer, ...}}]}}: notes
already linked to the new one, with content, time, speaker, keywords, tags and context.
Decide how each neighbour's description changes now that the new note exists.
{_JSON_ONLY} It has exactly one field:
- "updates": a list with one object per neighbour that changes (omit the others), with fields
  "handle": integer from "neighbours";
  "context": the neighbour's new one-sentence context, or null to keep it;
  "keywords": the neighbour's new full keyword list, or null to keep it;
  "tags": the neighbour's new full tag list, or null to keep it;
  "supersedes": true only if the new note gives a new value for the same attribute of the same
    subject as the neighbour's fact (neighbour "Ana lives in Lisbon", new "Ana moved to Porto").
    false if the new fact adds to the old one, is about someone or something else, or you are unsure;
  "reason": short phrase.""",
}

_STR_LIST = {"type": "array", "items": {"type": "string"}}
_NULLABLE_STR_LIST = {"anyOf": [_STR_LIST, {"type": "null"}]}


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


SCHEMAS: dict[str, dict[str, Any]] = {
    "note": _object({"keywords": _STR_LIST, "tags": _STR_LIST, "context": {"type": "string"}}),
    "link": _object(
        {
            "links": {
                "type": "array",
                "items": _object({"handle": {"type": "integer", "minimum": 0}, "reason": {"type": "string"}}),
            }
        }
    ),
    "evolve": _object(
        {
            "updates": {
                "type": "array",
                "items": _object(
                    {
                        "handle": {"type": "integer", "minimum": 0},
                        "context": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                        "keywords": _NULLABLE_STR_LIST,
                        "tags": _NULLABLE_STR_LIST,
                        "supersedes": {"type": "boolean"},
                        "reason": {"type": "string"},
                    }
                ),
            }
        }
    ),
}


def response_format(stage: str, schema: dict[str, Any]) -> dict[str, Any]:
    """OpenAI `response_format` for a stage; the schema name tells servers (and our stand-in) the stage."""
    return {"type": "json_schema", "json_schema": {"name": f"amem_{stage}", "schema": schema, "strict": True}}


# --- prompts -------------------------------------------------------------------------------------------


def _prompt(stage: str, payload: dict[str, Any]) -> Prompt:
    user = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return [{"role": "system", "content": SYSTEM[stage]}, {"role": "user", "content": user}]


def _note_view(note: Note, max_chars: int) -> dict[str, Any]:
    return {
        "content": clip(note.content, max_chars),
        "time": note.timestamp.isoformat(),
        "speaker": note.speaker,
        "keywords": note.keywords,
        "tags": note.tags,
        "context": note.context,
    }


def note_prompt(item: Interaction, max_chars: int) -> Prompt:
    payload = {
        "content": clip(item.content, max_chars),
        "time": item.timestamp.isoformat(),
        "speaker": item.speaker,
    }
    return _prompt("note", payload)


def link_prompt(request: LinkRequest, max_chars: int) -> Prompt:
    limit = min(max_chars, NEIGHBOUR_CHARS)
    candidates = [{"handle": c.handle, **_note_view(c.note, limit)} for c in request.candidates]
    return _prompt("link", {"note": _note_view(request.note, max_chars), "candidates": candidates})


def evolve_prompt(request: EvolveRequest, max_chars: int) -> Prompt:
    limit = min(max_chars, NEIGHBOUR_CHARS)
    neighbours = [{"handle": h, **_note_view(n, limit)} for h, n in enumerate(request.neighbours)]
    return _prompt("evolve", {"note": _note_view(request.note, max_chars), "neighbours": neighbours})


def repair_prompt(prompt: Prompt, answer: str, error: LLMBadOutput) -> Prompt:
    """Re-ask once: the same conversation (same cached prefix), the rejected answer, and why."""
    complaint = (
        f"Your answer was rejected: {error}. Reply again with only the JSON object the instructions ask for."
    )
    return [*prompt, {"role": "assistant", "content": answer}, {"role": "user", "content": complaint}]


# --- validators ------------------------------------------------------------------------------------------


def parse_object(raw: str) -> dict[str, Any]:
    """JSON object from a model answer; tolerates code fences or prose around it (a free repair)."""
    text = raw.strip()
    if not text.startswith("{"):
        start, end = text.find("{"), text.rfind("}")
        text = text[start : end + 1] if 0 <= start < end else text
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LLMBadOutput(f"answer is not valid JSON ({exc.msg} at char {exc.pos})") from None
    if not isinstance(value, dict):
        raise LLMBadOutput(f"answer is a JSON {type(value).__name__}, expected an object")
    return value


def _field(obj: dict[str, Any], name: str, where: str) -> Any:
    if name not in obj:
        raise LLMBadOutput(f"missing field '{where}{name}'")
    return obj[name]


def _expect(value: Any, kind: type | tuple[type, ...], path: str, *, nullable: bool = False) -> Any:
    if value is None and nullable:
        return None
    # bool is an int subclass in Python; a handle of `true` is a wrong type, not handle 1.
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise LLMBadOutput(
            f"field '{path}': expected {getattr(kind, '__name__', kind)}, got {type(value).__name__}"
        )
    return value


def _terms(value: Any, path: str, limit: int, *, nullable: bool = False) -> list[str] | None:
    if _expect(value, list, path, nullable=nullable) is None:
        return None
    seen: dict[str, str] = {}
    for i, item in enumerate(value):
        term = " ".join(_expect(item, str, f"{path}[{i}]").split())
        if term and term.lower() not in seen:
            seen[term.lower()] = term
    return list(seen.values())[:limit]


def parse_annotation(raw: str, *, max_keywords: int, max_tags: int) -> Annotation:
    obj = parse_object(raw)
    keywords = _terms(_field(obj, "keywords", ""), "keywords", max_keywords) or []
    tags = _terms(_field(obj, "tags", ""), "tags", max_tags) or []
    context = " ".join(_expect(_field(obj, "context", ""), str, "context").split())
    if not keywords:
        raise LLMBadOutput("field 'keywords': empty")
    if not context:
        raise LLMBadOutput("field 'context': empty")
    return Annotation(keywords=keywords, tags=tags, context=context, annotated_by="llm")


def _items(obj: dict[str, Any], name: str) -> list[dict[str, Any]]:
    items = _expect(_field(obj, name, ""), list, name)
    for i, item in enumerate(items):
        _expect(item, dict, f"{name}[{i}]")
    return items


def parse_links(raw: str, candidates: Sequence[Candidate]) -> tuple[list[LinkChoice], int]:
    """Chosen links mapped from handles to note ids, and how many named a handle never offered."""
    by_handle = {c.handle: c.note.id for c in candidates}
    choices: dict[str, LinkChoice] = {}
    dropped = 0
    for i, item in enumerate(_items(parse_object(raw), "links")):
        path = f"links[{i}]."
        handle = _expect(_field(item, "handle", path), int, f"{path}handle")
        reason = _expect(_field(item, "reason", path), str, f"{path}reason")
        if handle not in by_handle:
            dropped += 1
        elif (target := by_handle[handle]) not in choices:
            choices[target] = LinkChoice(target=target, reason=reason.strip())
    return list(choices.values()), dropped


def _update(
    item: dict[str, Any], path: str, target: str, max_keywords: int, max_tags: int
) -> NeighbourUpdate:
    context = _expect(_field(item, "context", path), str, f"{path}context", nullable=True)
    keywords = _terms(_field(item, "keywords", path), f"{path}keywords", max_keywords, nullable=True)
    tags = _terms(_field(item, "tags", path), f"{path}tags", max_tags, nullable=True)
    return NeighbourUpdate(
        target=target,
        # An empty rewrite would erase the neighbour's description: treat it as "keep".
        context=(" ".join(context.split()) or None) if context else None,
        keywords=keywords or None,
        tags=tags or None,
        supersedes=_expect(_field(item, "supersedes", path), bool, f"{path}supersedes"),
        reason=_expect(_field(item, "reason", path), str, f"{path}reason").strip(),
    )


def parse_updates(
    raw: str, neighbours: Sequence[Note], *, max_keywords: int, max_tags: int
) -> tuple[list[NeighbourUpdate], int]:
    """Updates mapped from handles (positions in `neighbours`) to note ids, and how many were unknown."""
    updates: dict[str, NeighbourUpdate] = {}
    dropped = 0
    for i, item in enumerate(_items(parse_object(raw), "updates")):
        path = f"updates[{i}]."
        handle = _expect(_field(item, "handle", path), int, f"{path}handle")
        if not 0 <= handle < len(neighbours):
            dropped += 1
        elif (target := neighbours[handle].id) not in updates:
            updates[target] = _update(item, path, target, max_keywords, max_tags)
    return list(updates.values()), dropped
