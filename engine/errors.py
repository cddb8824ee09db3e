"""One exception tree for amem.

AmemError
├── ConfigError           bad Config value
├── InputError            bad interaction / argument (names file, line, field)
│   └── TooLarge          past a size limit of Config (HTTP 413)
├── TenantError           invalid tenant name
├── NotFound              no such note (also for another tenant's note)
├── StoreError            store cannot be opened or written
│   ├── StoreLocked       another writer holds the store
│   ├── ReadOnlyStore     write on a read-only store
│   └── CorruptStore      checksum / framing mismatch in snapshot or log
│       └── CorruptIndex  a persisted vector index is damaged or stale (rebuilt from the snapshot)
└── LLMError              LLM backend failure
    ├── LLMRetryable      429 / 5xx / connection: retried with backoff
    │   └── LLMTimeout    no answer in time: not retried (the server still works the abandoned request)
    ├── LLMFormatRejected the server refused the request's response_format: permanent, never retried
    └── LLMBadOutput      output that does not match the stage schema
        ├── LLMTruncated  the answer hit max_tokens (finish_reason "length")
        └── LLMRejected   well-formed but fails a semantic check (timestamp context, off-subject...)
"""

from __future__ import annotations


class AmemError(Exception):
    """Base of every error amem raises on purpose."""


class ConfigError(AmemError, ValueError):
    pass


class InputError(AmemError, ValueError):
    """Bad input. `where` names the source (file:line) and `field` the offending field."""

    def __init__(self, message: str, *, where: str | None = None, field: str | None = None) -> None:
        self.where = where
        self.field = field
        prefix = f"{where}: " if where else ""
        suffix = f" (field '{field}')" if field else ""
        super().__init__(f"{prefix}{message}{suffix}")


class TooLarge(InputError):
    """Input past a size limit of Config (content, query, batch): refused before any work is done."""


class TenantError(InputError):
    pass


class NotFound(AmemError, KeyError):
    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "not found"


class StoreError(AmemError):
    pass


class StoreLocked(StoreError):
    pass


class ReadOnlyStore(StoreError):
    pass


class CorruptStore(StoreError):
    pass


class CorruptIndex(CorruptStore):
    """A persisted vector index file is damaged or stale; rebuild the index from the vectors."""


class LLMError(AmemError):
    pass


class LLMRetryable(LLMError):
    pass


class LLMTimeout(LLMRetryable):
    pass


class LLMFormatRejected(LLMError):
    pass


class LLMBadOutput(LLMError):
    pass


class LLMTruncated(LLMBadOutput):
    pass


class LLMRejected(LLMBadOutput):
    """`reason` is the short name it is counted under (e.g. 'timestamp_context', 'off_subject')."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
