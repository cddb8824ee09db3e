"""Parquet chat logs: columns content, timestamp, speaker, tenant, metadata (and optionally id).

Rows are checked by the same rules as a JSONL line; a row's source id is its `id`, else
"<file name>:row<N>:<hash of content, timestamp, speaker>" (N counts from 1), stable across re-reads.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from engine.errors import InputError
from engine.io.chatparse import source_id_for
from engine.model.note import Interaction
from engine.model.tenant_name import validate_tenant
from engine.model.timeutil import parse_time

PARQUET_COLUMNS = frozenset({"content", "timestamp", "speaker", "tenant", "metadata", "id"})


def is_parquet(path: str | Path) -> bool:
    return Path(path).suffix.lower() in (".parquet", ".pq")


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
