"""Chat-log reader: JSONL or LoCoMo JSON in, `ChatRecord`s out; every bad line is named by file:line.

Parsing lives in engine/chatparse.py (JSONL) and engine/locomo.py; this module is the public API,
format detection and the rejects file.

JSONL, one object per line (UTF-8; blank lines skipped; a BOM and CRLF line ends are fine):

    content    required  non-empty string, kept whole (the engine clips it for the encoder)
    timestamp  required  ISO-8601 string (no offset means UTC) or epoch seconds; nothing else
    speaker    optional  string ("" means none)
    tenant     optional  tenant name (rule in engine/tenant.py); absent = the caller's default tenant
    metadata   optional  object, kept as given
    id         optional  the caller's own stable source id (string or integer)

Any other top-level field is an error that names it: extras belong under "metadata". Input that is
not strict JSON (NaN, Infinity, duplicate keys, unpaired surrogate escapes) is rejected as well.

LoCoMo (snap-research/LoCoMo): a list of samples; every turn of every session_N becomes one record
with tenant = sample_id, content = text (+ " [shares a photo: <blip_caption>]"), timestamp = the
session's "1:56 pm on 8 May, 2023" (read as UTC) + LOCOMO_TURN_SECONDS per turn to keep the order,
metadata {"dia_id", "session"}. Positions read file:sample_id:dia_id.

Errors: on_error="fail" raises the first InputError; "skip" counts it, appends it to the `rejects`
file (JSONL: file, line, where, field, error, raw [+ raw_base64 when the bytes are not UTF-8]) and
goes on. Records stream out, so "fail" can stop a file half-way: to apply a file all-or-nothing,
`amem ingest --on-error fail` first runs `validate_chatlog` over the whole file and ingests only if
it finds no error. A file that cannot be read at all (missing, LoCoMo that is not JSON) raises in
every mode.

Source ids: the line's `id` if given, else "<file name>:<line>:<hash of content, timestamp,
speaker>" (LoCoMo: "<file name>:<sample_id>:<dia_id>:<hash>"), so re-reading a file gives the same
ids and the engine skips what it already stored.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Generator, Iterator
from pathlib import Path
from types import TracebackType
from typing import Literal, TextIO

from engine.errors import InputError, StoreError
from engine.io.chatparse import BOM, ChatRecord, Rejected, jsonl_items, jsonl_lines, reading, source_id_for
from engine.io.locomo import LOCOMO_TURN_SECONDS, SESSION_KEY, load_locomo, locomo_items, parse_locomo_time

__all__ = [
    "LOCOMO_TURN_SECONDS",
    "ChatLogReader",
    "ChatRecord",
    "count_records",
    "parse_locomo_time",
    "read_chatlog",
    "source_id_for",
    "validate_chatlog",
]

Format = Literal["auto", "jsonl", "locomo"]
OnError = Literal["fail", "skip"]
MAX_KEPT_ERRORS = 100
_GUESSED_LOCOMO = (
    " (read as LoCoMo because the file starts with '['; pass fmt='jsonl' to read it line by line)"
)


class ChatLogReader(Iterator[ChatRecord]):
    """The records of one chat log, read lazily; counts and kept errors grow as it is consumed."""

    def __init__(
        self,
        path: Path,
        *,
        fmt: Format = "auto",
        on_error: OnError = "fail",
        rejects: Path | None = None,
        max_content_chars: int | None = None,
    ) -> None:
        self.path = Path(path)
        self.fmt = _resolve_format(self.path, fmt)
        if on_error not in ("fail", "skip"):
            raise InputError(f"on_error must be 'fail' or 'skip', got {on_error!r}", field="on_error")
        if rejects is not None and Path(rejects).resolve() == self.path.resolve():
            raise InputError("the rejects file cannot be the chat log itself", field="rejects")
        self.on_error = on_error
        self.num_records = self.num_rejected = 0
        self.errors: list[InputError] = []
        """The first MAX_KEPT_ERRORS errors of skipped records."""
        self._sink = _RejectSink(Path(rejects)) if rejects is not None else None
        self._items = _items(self.path, self.fmt, max_content_chars, guessed=fmt == "auto")

    def __next__(self) -> ChatRecord:
        for item in self._items:
            if isinstance(item, ChatRecord):
                self.num_records += 1
                return item
            self._reject(item)
        self.close()
        raise StopIteration

    def _reject(self, bad: Rejected) -> None:
        if self.on_error == "fail":
            self.close()
            raise bad.error
        self.num_rejected += 1
        if len(self.errors) < MAX_KEPT_ERRORS:
            self.errors.append(bad.error)
        if self._sink is not None:
            self._sink.write(self.path, bad)

    def close(self) -> None:
        """Stop reading and flush + fsync the rejects file; safe to call twice."""
        self._items.close()
        if self._sink is not None:
            self._sink.close()

    def __enter__(self) -> ChatLogReader:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def read_chatlog(
    path: Path,
    *,
    fmt: Format = "auto",
    on_error: OnError = "fail",
    rejects: Path | None = None,
    max_content_chars: int | None = None,
) -> ChatLogReader:
    """Iterate a chat log's records (module doc); content over max_content_chars is rejected, not cut."""
    return ChatLogReader(
        path, fmt=fmt, on_error=on_error, rejects=rejects, max_content_chars=max_content_chars
    )


def validate_chatlog(
    path: Path, fmt: Format = "auto", *, max_content_chars: int | None = None, max_errors: int | None = None
) -> list[InputError]:
    """Every bad record's error (the first max_errors) from a full pass; [] means the file is clean."""
    errors: list[InputError] = []
    for item in _items(
        Path(path), _resolve_format(Path(path), fmt), max_content_chars, guessed=fmt == "auto"
    ):
        if isinstance(item, Rejected):
            errors.append(item.error)
            if max_errors is not None and len(errors) >= max_errors:
                break
    return errors


def count_records(path: Path, fmt: Format = "auto") -> int:
    """Records in the file, for a progress bar; nothing is validated, so bad records count too."""
    path = Path(path)
    if _resolve_format(path, fmt) == "jsonl":
        return sum(1 for _ in jsonl_lines(path))
    samples = load_locomo(path, _GUESSED_LOCOMO if fmt == "auto" else "")
    conversations = [s.get("conversation") for s in samples if isinstance(s, dict)]
    return sum(
        len(turns)
        for c in conversations
        if isinstance(c, dict)
        for key, turns in c.items()
        if SESSION_KEY.fullmatch(key) and isinstance(turns, list)
    )


def _resolve_format(path: Path, fmt: str) -> Format:
    if fmt not in ("auto", "jsonl", "locomo"):
        raise InputError(f"unknown chat log format {fmt!r}; use auto, jsonl or locomo", field="fmt")
    if not path.is_file():
        raise InputError("no such file" if not path.exists() else "not a regular file", where=str(path))
    if fmt != "auto":
        return "jsonl" if fmt == "jsonl" else "locomo"
    with reading(path), open(path, "rb") as f:
        head = f.read(1 << 16).removeprefix(BOM)
        while head and not head.lstrip():
            head = f.read(1 << 16)
    # A JSONL line must be an object, so a leading '[' can only be a LoCoMo list.
    return "locomo" if head.lstrip()[:1] == b"[" else "jsonl"


def _items(
    path: Path, fmt: Format, max_chars: int | None, guessed: bool
) -> Generator[ChatRecord | Rejected, None, None]:
    if fmt == "jsonl":
        return jsonl_items(path, max_chars)
    return locomo_items(path, max_chars, _GUESSED_LOCOMO if guessed else "")


class _RejectSink:
    """Append-only JSONL of rejected records, opened on the first one, fsynced on close."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._out: TextIO | None = None

    def write(self, source: Path, bad: Rejected) -> None:
        entry = {
            "file": str(source),
            "line": bad.line,
            "where": bad.error.where,
            "field": bad.error.field,
            "error": str(bad.error),
            **_raw_fields(bad.raw),
        }
        try:
            if self._out is None:
                self._out = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close()
            self._out.write(json.dumps(entry) + "\n")  # ASCII-escaped: safe for any raw input
            self._out.flush()
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot write the rejects file: {exc.strerror or exc}") from exc

    def close(self) -> None:
        out, self._out = self._out, None
        if out is None:
            return
        try:
            os.fsync(out.fileno())
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot sync the rejects file: {exc.strerror or exc}") from exc
        finally:
            out.close()


def _raw_fields(raw: bytes | None) -> dict[str, str | None]:
    if raw is None:
        return {"raw": None}
    try:
        return {"raw": raw.decode("utf-8")}
    except UnicodeDecodeError:
        return {"raw": raw.decode("utf-8", "replace"), "raw_base64": base64.b64encode(raw).decode("ascii")}
