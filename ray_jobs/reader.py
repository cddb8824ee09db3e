"""Chat-log files -> plain rows for Ray Data, and rows -> Interactions inside the shard actors.

JSONL, LoCoMo and Parquet files go through engine.io (chatlog, parquet), so error messages and source ids
are exactly those of single-process ingest.

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
from engine.io.chatlog import count_records, read_chatlog, validate_chatlog
from engine.io.parquet import is_parquet, parquet_items
from engine.model.note import Interaction

_MAX_KEPT_PROBLEMS = 20


@dataclass(slots=True)
class FileCheck:
    """What a first pass over one file found: records (good and bad) and the bad ones' errors."""

    path: str
    num_records: int
    num_rejected: int
    problems: list[InputError]
    """The first few errors, in file order."""


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
