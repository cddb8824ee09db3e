"""One exception tree for amem.

AmemError
├── ConfigError           bad Config value
├── InputError            bad interaction / argument (names file, line, field)
├── TenantError           invalid tenant name
├── NotFound              no such note (also for another tenant's note)
├── StoreError            store cannot be opened or written
│   ├── StoreLocked       another writer holds the store
│   ├── ReadOnlyStore     write on a read-only store
│   └── CorruptStore      checksum / framing mismatch in snapshot or log
└── LLMError              LLM backend failure
    ├── LLMRetryable      429 / 5xx / timeout / connection: retried with backoff
    └── LLMBadOutput      output that does not match the stage schema
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


class LLMBadOutput(LLMError):
    pass
