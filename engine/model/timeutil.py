"""Timestamps: everything inside amem is timezone-aware UTC `datetime`."""

from __future__ import annotations

import math
from datetime import UTC, datetime

from engine.errors import InputError

TimeLike = datetime | str | int | float

# Epoch seconds outside this window are almost certainly milliseconds or garbage.
_MIN_EPOCH, _MAX_EPOCH = -62_135_596_800, 253_402_300_799


def utcnow() -> datetime:
    return datetime.now(UTC)


def parse_time(
    value: TimeLike | None, *, field: str = "timestamp", where: str | None = None
) -> datetime | None:
    """datetime, ISO-8601 string or epoch seconds -> aware UTC datetime; None stays None."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise InputError(f"expected a timestamp, got {value!r}", where=where, field=field)
    if isinstance(value, datetime):
        try:
            return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
        except OverflowError:
            raise InputError(f"timestamp out of range: {value!r}", where=where, field=field) from None
    if isinstance(value, int | float):
        if not _MIN_EPOCH <= value <= _MAX_EPOCH or not math.isfinite(value):
            raise InputError(f"epoch seconds out of range: {value!r}", where=where, field=field)
        return datetime.fromtimestamp(value, UTC)
    if isinstance(value, str):
        text = value.strip()
        if not text:
            raise InputError("empty timestamp", where=where, field=field)
        try:
            parsed = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
        except ValueError:
            raise InputError(
                f"timestamp {value!r} is not ISO-8601 (e.g. 2024-05-01T14:30:00Z) or epoch seconds",
                where=where,
                field=field,
            ) from None
        return parse_time(parsed, field=field, where=where)
    raise InputError(f"expected a timestamp, got {type(value).__name__}", where=where, field=field)


def to_epoch(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


def from_epoch(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)
