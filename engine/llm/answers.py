"""Validators of stage answers: strict shape checks, then semantic checks (engine.annotate.sanity).

Shape errors raise LLMBadOutput naming the field (the answer is re-asked once with the reason); an
answer that is well-formed but not sensible raises LLMRejected with the reason it is counted under.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from engine.annotate import sanity
from engine.annotate.schemas import Annotation, Candidate, LinkChoice, NeighbourUpdate
from engine.errors import LLMBadOutput, LLMRejected
from engine.model.note import Note


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


def parse_annotation(raw: str, *, max_keywords: int, max_tags: int, content: str | None = None) -> Annotation:
    """The note-stage answer; with `content`, keywords must come from (or near) it and the context must be
    a sentence about it (not a timestamp, not a copy). Ungrounded keywords are dropped."""
    obj = parse_object(raw)
    keywords = _terms(_field(obj, "keywords", ""), "keywords", max_keywords) or []
    tags = _terms(_field(obj, "tags", ""), "tags", max_tags) or []
    context = " ".join(_expect(_field(obj, "context", ""), str, "context").split())
    if not keywords:
        raise LLMRejected("empty_keywords", "field 'keywords': empty")
    if not context:
        raise LLMBadOutput("field 'context': empty")
    if content is not None:
        keywords = _check_note(content, keywords, tags, context)
    return Annotation(keywords=keywords, tags=tags, context=context, annotated_by="llm")


def _check_note(content: str, keywords: list[str], tags: list[str], context: str) -> list[str]:
    grounded = sanity.ground_keywords(keywords, content)
    if not grounded:
        raise LLMRejected("ungrounded_keywords", f"none of {keywords[:4]} occurs in the text")
    if problem := sanity.tags_problem(tags):
        raise LLMRejected(problem, f"field 'tags': {tags}")
    if problem := sanity.context_problem(context, content):
        raise LLMRejected(problem, f"field 'context': {context[:80]!r}")
    return grounded


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
            update = _update(item, path, target, max_keywords, max_tags)
            # A superseded neighbour keeps its own words; any other bad rewrite rejects the answer
            # (the fallback redoes the whole item).
            if not update.supersedes and (problem := sanity.off_subject(neighbours[handle], update)):
                raise LLMRejected(problem, f"update of neighbour {handle} replaces its subject")
            updates[target] = update
    return list(updates.values()), dropped
