"""Record-level parsing of chat logs: JSONL lines into `ChatRecord`s, and the shared field checks.

A parser yields a ChatRecord or a `Rejected` (the InputError, naming file:line and the field at
fault, plus the raw input), never raises for one bad record, and raises InputError only when the
file as a whole cannot be read. LoCoMo lives in engine/locomo.py; the formats are described in
engine/chatlog.py.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from engine.errors import InputError
from engine.model.note import Interaction
from engine.model.tenant_name import validate_tenant
from engine.model.timeutil import parse_time

INT_ID = "int:"
"""How an integer id is kept as a source id, so that 7 and "7" stay two ids."""
FIELDS = frozenset({"content", "timestamp", "speaker", "tenant", "metadata", "id"})
"""The top-level fields a JSONL line may have."""
BOM = b"\xef\xbb\xbf"
_MAX_TIMESTAMP_CHARS = 64


@dataclass(slots=True)
class ChatRecord:
    interaction: Interaction
    tenant: str | None
    """Tenant the line names (JSONL) or the LoCoMo sample_id; None means the caller's default."""
    where: str
    """file:line (JSONL) or file:sample_id:dia_id (LoCoMo), for messages."""


@dataclass(slots=True)
class Rejected:
    error: InputError
    line: int | None
    """Line number in the file (JSONL); None for LoCoMo."""
    raw: bytes | None
    """The rejected line (JSONL) or turn (LoCoMo, re-encoded as JSON)."""


@contextmanager
def reading(path: Path) -> Iterator[None]:
    """Turn OSError while reading the input into InputError naming the file."""
    try:
        yield
    except OSError as exc:
        raise InputError(f"cannot read the file: {exc.strerror or exc}", where=str(path)) from exc


def source_id_for(name: str, position: str, content: str, timestamp: datetime, speaker: str | None) -> str:
    """Stable id of an input record: where it sits plus a hash of what it says."""
    what = json.dumps([content, timestamp.isoformat(), speaker]).encode()
    return f"{name}:{position}:{hashlib.sha256(what).hexdigest()[:16]}"


# --- JSONL ---------------------------------------------------------------------------
def jsonl_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(line number, line without its end) of every non-blank line; a BOM on line 1 is dropped."""
    with reading(path), open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            line = raw.rstrip(b"\n").rstrip(b"\r")
            line = line.removeprefix(BOM) if number == 1 else line
            if line.strip():
                yield number, line


def jsonl_items(path: Path, max_chars: int | None) -> Generator[ChatRecord | Rejected, None, None]:
    for number, line in jsonl_lines(path):
        try:
            yield _jsonl_record(line, path, number, max_chars)
        except InputError as exc:
            yield Rejected(exc, number, line)


def _jsonl_record(line: bytes, path: Path, number: int, max_chars: int | None) -> ChatRecord:
    where = f"{path}:{number}"
    obj = _load_object(line, where)
    content = check_content(obj.get("content"), "content", where, max_chars)
    timestamp = _timestamp(obj.get("timestamp"), where)
    speaker = _optional_text(obj.get("speaker"), "speaker", where)
    tenant = obj.get("tenant")
    tenant = None if tenant is None else validate_tenant(tenant, where=where)
    metadata = obj.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise InputError(
            f"metadata must be an object, got {json_type(metadata)}", where=where, field="metadata"
        )
    source_id = _caller_id(obj.get("id"), where) or source_id_for(
        path.name, str(number), content, timestamp, speaker
    )
    interaction = Interaction(
        content=content,
        timestamp=timestamp,
        speaker=speaker,
        metadata=dict(metadata or {}),
        source_id=source_id,
    )
    return ChatRecord(interaction, tenant, where)


def _load_object(line: bytes, where: str) -> dict[str, Any]:
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"line is not valid UTF-8 (byte 0x{line[exc.start]:02x} at byte {exc.start + 1})", where=where
        ) from exc
    obj = _strict_json(text, where)
    if not isinstance(obj, dict):
        raise InputError(f"each line must be a JSON object, got {json_type(obj)}", where=where)
    unknown = [key for key in obj if key not in FIELDS]
    if unknown:
        raise InputError(
            f"unknown field {unknown[0][:60]!r}; put extra fields under 'metadata'",
            where=where,
            field=_printable(unknown[0]),
        )
    if "\\u" in text:  # only a \\u escape can smuggle in an unpaired surrogate (decoding was strict)
        for key, value in obj.items():
            check_text(json.dumps(value, ensure_ascii=False), key, where)
    return obj


class NotStrictJson(Exception):
    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


def _strict_json(text: str, where: str) -> Any:
    try:
        return json.loads(text, object_pairs_hook=_unique_keys, parse_constant=no_constant)
    except NotStrictJson as exc:
        raise InputError(str(exc), where=where, field=exc.field) from exc
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg} (column {exc.colno})", where=where) from exc
    except (ValueError, RecursionError) as exc:  # e.g. an integer over Python's 4300-digit limit
        raise InputError(f"invalid JSON: {exc}", where=where) from exc


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) < len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise NotStrictJson(f"duplicate key {key[:60]!r}", field=_printable(key))
            seen.add(key)
    return obj


def no_constant(name: str) -> Any:
    raise NotStrictJson(f"{name} is not valid JSON")


def check_content(value: Any, field: str, where: str, max_chars: int | None) -> str:
    if value is None:
        raise InputError("content is required", where=where, field=field)
    if not isinstance(value, str):
        raise InputError(f"content must be a string, got {json_type(value)}", where=where, field=field)
    if not value.strip():
        raise InputError("content is empty", where=where, field=field)
    if max_chars is not None and len(value) > max_chars:
        raise InputError(
            f"content has {len(value)} characters, over max_content_chars={max_chars}",
            where=where,
            field=field,
        )
    return value


def _timestamp(value: Any, where: str) -> datetime:
    if value is None:
        raise InputError(
            "timestamp is required: ISO-8601 (2024-05-01T14:30:00Z) or epoch seconds",
            where=where,
            field="timestamp",
        )
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise InputError(
            f"timestamp must be an ISO-8601 string or epoch seconds, got {json_type(value)}",
            where=where,
            field="timestamp",
        )
    if isinstance(value, str) and len(value) > _MAX_TIMESTAMP_CHARS:
        raise InputError(
            f"timestamp string of {len(value)} characters is not a timestamp", where=where, field="timestamp"
        )
    parsed = parse_time(value, where=where)
    assert parsed is not None
    return parsed


def _optional_text(value: Any, field: str, where: str) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InputError(f"{field} must be a string, got {json_type(value)}", where=where, field=field)
    return value


def _caller_id(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{INT_ID}{value}"  # ids are compared as given: 7 and "7" are two ids
    if not isinstance(value, str) or not value:
        raise InputError(
            f"id must be a non-empty string or an integer, got {json_type(value)}", where=where, field="id"
        )
    if value.startswith(INT_ID):
        raise InputError(
            f"a string id may not start with {INT_ID!r} (integer ids are stored so)", where=where, field="id"
        )
    return value


def check_text(value: str, field: str, where: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(
            "contains an unpaired surrogate escape (\\ud800-\\udfff), which is not text",
            where=where,
            field=field,
        ) from None


def _printable(key: str) -> str:
    short = key[:60]
    return short if short.isprintable() else short.encode("unicode_escape").decode("ascii")


def json_type(value: Any) -> str:
    names = {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "an array",
        dict: "an object",
        type(None): "null",
    }
    return names.get(type(value), type(value).__name__)
