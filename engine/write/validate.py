"""Argument checks of the public write API: a mapping -> an Interaction, or an InputError naming the field."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from engine.errors import InputError, TooLarge
from engine.model.note import Interaction
from engine.model.timeutil import parse_time, utcnow

FIELDS = frozenset({"content", "timestamp", "speaker", "metadata", "source_id"})


def check_text(value: Any, field: str, where: str | None = None) -> None:
    """Strings must be encodable as UTF-8 (lone surrogates are not) to be hashed, stored and logged."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise InputError("text is not valid Unicode (lone surrogate)", where=where, field=field) from None


def check_size(text: str, limit: int, field: str, where: str | None = None) -> None:
    """Refuse `text` past `limit` UTF-8 bytes; cheap (no encoding) when it cannot be past it."""
    if len(text) * 4 <= limit:
        return
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise TooLarge(f"{size} bytes, more than the limit of {limit}", where=where, field=field)


def _keys(value: Any) -> list[Any]:
    """Every mapping key, at any depth."""
    if isinstance(value, Mapping):
        return [*value, *(k for v in value.values() for k in _keys(v))]
    if isinstance(value, list | tuple):
        return [k for v in value for k in _keys(v)]
    return []


def to_interaction(item: Mapping[str, Any], where: str | None = None) -> Interaction:
    if not isinstance(item, Mapping):
        raise InputError(f"expected a mapping with 'content', got {type(item).__name__}", where=where)
    unknown = set(item) - FIELDS
    if unknown:
        raise InputError(f"unknown field; allowed: {sorted(FIELDS)}", where=where, field=sorted(unknown)[0])
    content = item.get("content")
    if not isinstance(content, str) or not content.strip():
        raise InputError("content must be a non-empty string", where=where, field="content")
    speaker = item.get("speaker")
    if speaker is not None and not isinstance(speaker, str):
        raise InputError("speaker must be a string", where=where, field="speaker")
    metadata = item.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise InputError("metadata must be a mapping", where=where, field="metadata")
    source_id = item.get("source_id")
    if source_id is not None and (not isinstance(source_id, str) or not source_id):
        raise InputError("source_id must be a non-empty string", where=where, field="source_id")
    for name in ("content", "speaker", "source_id"):
        check_text(item.get(name), name, where)
    if metadata:
        try:
            if not all(isinstance(key, str) for key in _keys(metadata)):
                raise TypeError("keys must be strings (JSON would turn them into strings)")
            json.dumps(metadata, allow_nan=False, ensure_ascii=False).encode("utf-8")
        except (TypeError, ValueError) as exc:  # UnicodeEncodeError is a ValueError
            raise InputError(
                f"metadata must be JSON (strings, numbers, lists, objects): {exc}",
                where=where,
                field="metadata",
            ) from None
    timestamp = parse_time(item.get("timestamp"), where=where) or utcnow()
    return Interaction(
        content=content,
        timestamp=timestamp,
        speaker=speaker or None,
        metadata=dict(metadata or {}),
        source_id=source_id,
    )
