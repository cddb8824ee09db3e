"""The three A-MEM stage prompts and their bounded output schemas (one module, versioned; answers.py checks).

Every prompt is [system, user]: the system message is fixed per stage (identical across requests, so
vLLM's prefix cache serves it), the user message is the variable JSON input, last. The model refers
to candidates and neighbours by small integer handles (0..k-1) that we map back to note ids; the
reference A-MEM code writes evolution back by result rank, which changes the wrong notes.
"""

from __future__ import annotations

import json
from typing import Any

from engine.annotate.schemas import EvolveRequest, LinkRequest
from engine.config import Dialect, WriteConfig
from engine.errors import LLMBadOutput
from engine.model.note import Interaction, Note, clip

PROMPT_VERSION = "amem-prompts-4"
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
- "context": one sentence saying what the interaction is about, who is involved and why it matters
  (a sentence in words, not a date and not the content copied).""",
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
  "keywords": the neighbour's new full keyword list (keep its own keywords first), or null to keep it;
  "tags": the neighbour's new full tag list, or null to keep it;
  "supersedes": true only if the new note gives a new value for the same attribute of the same
    subject as the neighbour's fact (neighbour "Ana lives in Lisbon", new "Ana moved to Porto").
    false if the new fact adds to the old one, is about someone or something else, or you are unsure;
  "reason": short phrase.""",
}

KEYWORD_CHARS = 40
TAG_CHARS = 24
CONTEXT_CHARS = 300
REASON_CHARS = 80
"""Bounds on every string: under grammar-constrained decoding an unbounded list or string lets a small
model repeat itself until max_tokens. With them a note answer is at most ~250 tokens at the defaults."""


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _strings(most: int, chars: int) -> dict[str, Any]:
    item = {"type": "string", "minLength": 1, "maxLength": chars}
    return {"type": "array", "items": item, "minItems": 1, "maxItems": most}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def stage_schemas(write: WriteConfig) -> dict[str, dict[str, Any]]:
    """The JSON schema of each stage's answer; every list and string bounded (from `write`'s limits)."""
    context = {"type": "string", "minLength": 1, "maxLength": CONTEXT_CHARS}
    reason = {"type": "string", "maxLength": REASON_CHARS}
    handle = {"type": "integer", "minimum": 0, "maximum": max(write.k_neighbours - 1, 0)}
    keywords, tags = _strings(write.max_keywords, KEYWORD_CHARS), _strings(write.max_tags, TAG_CHARS)
    update = _object(
        {
            "handle": handle,
            "context": _nullable(context),
            "keywords": _nullable(keywords),
            "tags": _nullable(tags),
            "supersedes": {"type": "boolean"},
            "reason": reason,
        }
    )
    most = max(write.k_neighbours, 1)
    return {
        "note": _object({"keywords": keywords, "tags": tags, "context": context}),
        "link": _object(
            {
                "links": {
                    "type": "array",
                    "items": _object({"handle": handle, "reason": reason}),
                    "maxItems": most,
                }
            }
        ),
        "evolve": _object({"updates": {"type": "array", "items": update, "maxItems": most}}),
    }


SCHEMAS: dict[str, dict[str, Any]] = stage_schemas(WriteConfig())
"""The schemas at the default limits."""


def response_format(
    stage: str, schema: dict[str, Any], dialect: Dialect = Dialect.JSON_SCHEMA
) -> dict[str, Any] | None:
    """`response_format` in a server's dialect (None: send none); the name tells servers the stage."""
    if dialect is Dialect.JSON_OBJECT:
        return {"type": "json_object", "schema": schema}
    if dialect is Dialect.NONE:
        return None
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
