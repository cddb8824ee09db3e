"""amem: GPU-batched agentic memory (A-MEM) with validity, versions and graph recall."""

import os

# FAISS, torch and numpy's BLAS each keep spinning worker threads that steal one another's cores.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from engine.config import (  # noqa: E402
    AnnotatorKind,
    Config,
    Device,
    EncoderConfig,
    EncoderKind,
    LLMConfig,
    RecallConfig,
    StorageConfig,
    WriteConfig,
)
from engine.errors import (  # noqa: E402
    AmemError,
    ConfigError,
    CorruptIndex,
    CorruptStore,
    InputError,
    LLMBadOutput,
    LLMError,
    LLMFormatRejected,
    LLMRejected,
    LLMRetryable,
    LLMTimeout,
    LLMTruncated,
    NotFound,
    ReadOnlyStore,
    StoreError,
    StoreLocked,
    TenantError,
    TooLarge,
)
from engine.memory import Memory  # noqa: E402
from engine.model.note import (  # noqa: E402
    AnnotatedBy,
    Hit,
    Interaction,
    Link,
    Note,
    NoteVersion,
    Stage,
    VersionCause,
)
from engine.model.timeutil import TimeLike  # noqa: E402

__all__ = [
    "AmemError",
    "AnnotatedBy",
    "AnnotatorKind",
    "Config",
    "ConfigError",
    "CorruptIndex",
    "CorruptStore",
    "Device",
    "EncoderConfig",
    "EncoderKind",
    "Hit",
    "InputError",
    "Interaction",
    "Link",
    "LLMBadOutput",
    "LLMConfig",
    "LLMError",
    "LLMFormatRejected",
    "LLMRejected",
    "LLMRetryable",
    "LLMTimeout",
    "LLMTruncated",
    "Memory",
    "Note",
    "NoteVersion",
    "NotFound",
    "ReadOnlyStore",
    "RecallConfig",
    "Stage",
    "StorageConfig",
    "StoreError",
    "StoreLocked",
    "TenantError",
    "TimeLike",
    "TooLarge",
    "VersionCause",
    "WriteConfig",
]
