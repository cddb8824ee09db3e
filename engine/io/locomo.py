"""LoCoMo (snap-research/LoCoMo) conversations as chat records.

A file is a list of samples; every turn of every `session_N` (in number order) becomes one record:
tenant = sample_id, speaker, content = text + " [shares a photo: <blip_caption>]" when there is a
caption, timestamp = the session's "1:56 pm on 8 May, 2023" (read as UTC) + LOCOMO_TURN_SECONDS per
turn index so turns keep their order, metadata {"dia_id", "session"}. Positions read
file:sample_id:dia_id; a bad sample or session is one Rejected and its turns are skipped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Generator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from engine.errors import InputError
from engine.io.chatparse import (
    ChatRecord,
    NotStrictJson,
    Rejected,
    check_content,
    check_text,
    json_type,
    no_constant,
    reading,
    source_id_for,
)
from engine.model.note import Interaction
from engine.model.tenant_name import validate_tenant

LOCOMO_TURN_SECONDS = 5
"""Seconds added per turn index to a LoCoMo session's start time, so turns keep their order."""
SESSION_KEY = re.compile(r"session_(\d+)")
_LOCOMO_TIME = re.compile(
    r"\s*(\d{1,2}):(\d{2})\s*([ap])\.?m\.?\s+on\s+(\d{1,2})\s+([A-Za-z]+)\.?,?\s+(\d{4})\s*", re.IGNORECASE
)
_MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]


def load_locomo(path: Path, hint: str = "") -> list[Any]:
    """The list of samples; InputError (with `hint` appended) if the file is not one."""
    with reading(path):
        data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(f"not valid UTF-8{hint}", where=f"{path}:{line}") from exc
    try:
        samples = json.loads(text, parse_constant=no_constant)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"invalid JSON: {exc.msg} (column {exc.colno}){hint}", where=f"{path}:{exc.lineno}"
        ) from exc
    except (NotStrictJson, ValueError, RecursionError) as exc:
        raise InputError(f"invalid JSON: {exc}{hint}", where=str(path)) from exc
    if not isinstance(samples, list):
        raise InputError(
            f"a LoCoMo file is a JSON list of samples, got {json_type(samples)}", where=str(path)
        )
    return samples


def locomo_items(
    path: Path, max_chars: int | None, hint: str = ""
) -> Generator[ChatRecord | Rejected, None, None]:
    for index, sample in enumerate(load_locomo(path, hint)):
        where = f"{path}:sample {index}"
        try:
            if not isinstance(sample, dict):
                raise InputError(f"a sample must be an object, got {json_type(sample)}", where=where)
            sample_id = sample.get("sample_id")  # checked to be a str by validate_tenant
            tenant = validate_tenant(sample_id, where=where, field="sample_id")  # type: ignore[arg-type]
            conversation = sample.get("conversation")
            if not isinstance(conversation, dict):
                raise InputError(
                    "conversation must be an object", where=f"{path}:{tenant}", field="conversation"
                )
        except InputError as exc:
            yield Rejected(exc, None, None)
            continue
        sessions = sorted((int(m[1]), key) for key in conversation if (m := SESSION_KEY.fullmatch(key)))
        for number, key in sessions:
            yield from _session_items(path, tenant, conversation, number, key, max_chars)


def _session_items(
    path: Path, tenant: str, conversation: dict[str, Any], number: int, key: str, max_chars: int | None
) -> Generator[ChatRecord | Rejected, None, None]:
    turns, where = conversation[key], f"{path}:{tenant}:{key}"
    try:
        if not isinstance(turns, list):
            raise InputError(
                f"a session must be a list of turns, got {json_type(turns)}", where=where, field=key
            )
        start = parse_locomo_time(conversation.get(f"{key}_date_time"), where=where, field=f"{key}_date_time")
    except InputError as exc:
        yield Rejected(exc, None, None)
        return
    for index, turn in enumerate(turns):
        at = start + timedelta(seconds=LOCOMO_TURN_SECONDS * index)
        try:
            yield _locomo_record(path, tenant, number, index, turn, at, max_chars)
        except InputError as exc:
            yield Rejected(exc, None, json.dumps(turn).encode())


def _locomo_record(
    path: Path, tenant: str, number: int, index: int, turn: Any, at: datetime, max_chars: int | None
) -> ChatRecord:
    dia_id = turn.get("dia_id") if isinstance(turn, dict) else None
    where = (
        f"{path}:{tenant}:{dia_id}"
        if isinstance(dia_id, str)
        else f"{path}:{tenant}:session_{number}[{index}]"
    )
    if not isinstance(turn, dict):
        raise InputError(f"a turn must be an object, got {json_type(turn)}", where=where)
    for field in ("dia_id", "speaker", "text", "blip_caption"):
        value = turn.get(field)
        if not isinstance(value, str) and (value is not None or field != "blip_caption"):
            raise InputError(f"{field} must be a string, got {json_type(value)}", where=where, field=field)
        check_text(value or "", field, where)
    text, caption = turn["text"], turn.get("blip_caption")
    parts = ([text] if text.strip() else []) + ([f"[shares a photo: {caption}]"] if caption else [])
    content = check_content(" ".join(parts), "text", where, max_chars)
    source_id = source_id_for(path.name, f"{tenant}:{turn['dia_id']}", content, at, turn["speaker"])
    metadata = {"dia_id": turn["dia_id"], "session": number}
    interaction = Interaction(
        content=content, timestamp=at, speaker=turn["speaker"], metadata=metadata, source_id=source_id
    )
    return ChatRecord(interaction, tenant, where)


def parse_locomo_time(value: Any, *, where: str | None = None, field: str = "date_time") -> datetime:
    """LoCoMo's "1:56 pm on 8 May, 2023" as aware UTC (English month names, whatever the locale)."""
    match = _LOCOMO_TIME.fullmatch(value) if isinstance(value, str) else None
    month = _month(match[5]) if match else 0
    if match is None or not month or not 1 <= int(match[1]) <= 12:
        raise InputError(
            f"session time {value!r} is not like '1:56 pm on 8 May, 2023'", where=where, field=field
        )
    hour = int(match[1]) % 12 + (12 if match[3].lower() == "p" else 0)
    try:
        return datetime(int(match[6]), month, int(match[4]), hour, int(match[2]), tzinfo=UTC)
    except ValueError as exc:
        raise InputError(f"session time {value!r}: {exc}", where=where, field=field) from exc


def _month(word: str) -> int:
    """1-12 for an English month name or an abbreviation of 3+ letters ("Sep", "Sept"); 0 otherwise."""
    word = word.lower()
    return next((i for i, name in enumerate(_MONTHS, 1) if len(word) >= 3 and name.startswith(word)), 0)
