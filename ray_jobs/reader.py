"""Chat-log files -> plain rows for Ray Data, and rows -> Interactions inside the shard actors.

JSONL and LoCoMo files go through engine.io.chatlog, so error messages and source ids are exactly those of
single-process ingest. Parquet chat logs have the columns content, timestamp, speaker, tenant, metadata
(and optionally id), checked by the same rules as a JSONL line; a row's source id is its `id`, else
"<file name>:row<N>:<hash of content, timestamp, speaker>" (N counts from 1), stable across re-reads.

A row is {"tenant", "content", "timestamp" (ISO-8601, exact round trip), "speaker", "metadata" (JSON
text, so Arrow never has to unify the schemas of free-form objects), "source_id"}.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from engine.errors import InputError
from engine.io.chatlog import count_records, read_chatlog, source_id_for, validate_chatlog
from engine.model.note import Interaction
from engine.model.tenant_name import validate_tenant
from engine.model.timeutil import parse_time

PARQUET_COLUMNS = frozenset({"content", "timestamp", "speaker", "tenant", "metadata", "id"})
_MAX_KEPT_PROBLEMS = 20


@dataclass(slots=True)
class FileCheck:
    """What a first pass over one file found: records (good and bad) and the bad ones' errors."""

    path: str
    num_records: int
    num_rejected: int
    problems: list[InputError]
    """The first few errors, in file order."""


def is_parquet(path: str | Path) -> bool:
    return Path(path).suffix.lower() in (".parquet", ".pq")


def check_file(path: str, fmt: str) -> FileCheck:
    """Count and validate one file (a full pass, like single-process `--on-error fail`)."""
    if is_parquet(path):
        errors = [item for item in parquet_items(Path(path)) if isinstance(item, InputError)]
        total = pq.ParquetFile(path).metadata.num_rows
    else:
        errors = validate_chatlog(Path(path), fmt)  # type: ignore[arg-type]
        total = count_records(Path(path), fmt)  # type: ignore[arg-type]
    return FileCheck(path, total, len(errors), errors[:_MAX_KEPT_PROBLEMS])


def file_rows(path: str, fmt: str, default_tenant: str) -> Iterator[dict[str, Any]]:
    """The good records of one file as rows; bad ones were counted by `check_file` and are skipped."""
    if is_parquet(path):
        for item in parquet_items(Path(path)):
            if not isinstance(item, InputError):
                yield to_row(*item, default_tenant)
        return
    with read_chatlog(Path(path), fmt=fmt, on_error="skip") as reader:  # type: ignore[arg-type]
        for rec in reader:
            yield to_row(rec.interaction, rec.tenant, default_tenant)


def to_row(interaction: Interaction, tenant: str | None, default_tenant: str) -> dict[str, Any]:
    return {
        "tenant": tenant or default_tenant,
        "content": interaction.content,
        "timestamp": interaction.timestamp.isoformat(),
        "speaker": interaction.speaker,
        "metadata": json.dumps(interaction.metadata),
        "source_id": interaction.source_id,
    }


def to_interaction(row: dict[str, Any]) -> Interaction:
    return Interaction(
        content=row["content"],
        timestamp=datetime.fromisoformat(row["timestamp"]),
        speaker=row["speaker"],
        metadata=json.loads(row["metadata"]),
        source_id=row["source_id"],
    )


# --- Parquet ------------------------------------------------------------------------------
def parquet_items(path: Path) -> Iterator[tuple[Interaction, str | None] | InputError]:
    """(interaction, tenant) per good row, the InputError per bad row, in file order."""
    try:
        table = pq.ParquetFile(path)
    except (OSError, ValueError) as exc:  # pyarrow raises ArrowInvalid (a ValueError) on non-Parquet bytes
        raise InputError(f"cannot read the Parquet file: {exc}", where=str(path)) from exc
    unknown = set(table.schema_arrow.names) - PARQUET_COLUMNS
    if unknown:
        raise InputError(
            f"unknown column; allowed: {sorted(PARQUET_COLUMNS)}", where=str(path), field=sorted(unknown)[0]
        )
    number = 0
    for batch in table.iter_batches(batch_size=4096):
        for values in batch.to_pylist():
            number += 1
            try:
                yield parquet_record(values, path, number)
            except InputError as exc:
                yield exc


def parquet_record(values: dict[str, Any], path: Path, number: int) -> tuple[Interaction, str | None]:
    where = f"{path}:row {number}"
    content = values.get("content")
    if not isinstance(content, str) or not content.strip():
        raise InputError("content must be a non-empty string", where=where, field="content")
    if values.get("timestamp") is None:
        raise InputError("timestamp is required", where=where, field="timestamp")
    timestamp = parse_time(values["timestamp"], where=where)
    assert timestamp is not None
    speaker = values.get("speaker") or None
    if speaker is not None and not isinstance(speaker, str):
        raise InputError("speaker must be a string", where=where, field="speaker")
    tenant = values.get("tenant")
    tenant = None if tenant is None else validate_tenant(tenant, where=where)
    metadata = _metadata(values.get("metadata"), where)
    caller_id = values.get("id")
    source_id = (
        str(caller_id)
        if caller_id not in (None, "")
        else source_id_for(path.name, f"row{number}", content, timestamp, speaker)
    )
    return Interaction(content, timestamp, speaker, metadata, source_id), tenant


def _metadata(value: Any, where: str) -> dict[str, Any]:
    """A struct column reads as a dict, a map column as (key, value) pairs, a string column as JSON."""
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise InputError(f"metadata is not JSON: {exc.msg}", where=where, field="metadata") from exc
    elif isinstance(value, list) and all(isinstance(p, tuple) and len(p) == 2 for p in value):
        value = dict(value)
    if not isinstance(value, dict):
        raise InputError("metadata must be an object", where=where, field="metadata")
    try:
        json.dumps(value)
    except (TypeError, ValueError) as exc:  # e.g. a timestamp inside a struct: rows carry metadata as JSON
        raise InputError(f"metadata must be JSON-able: {exc}", where=where, field="metadata") from exc
    return value
