"""amem: GPU-batched agentic memory (A-MEM) with validity, versions and graph recall."""

import os

# FAISS, torch and numpy's BLAS each keep spinning worker threads that steal one another's cores.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from engine.config import Config  # noqa: E402
from engine.errors import AmemError, InputError, NotFound, StoreError  # noqa: E402
from engine.memory import Memory  # noqa: E402
from engine.model.note import Hit, Link, Note, NoteVersion  # noqa: E402

__all__ = [
    "Config",
    "Memory",
    "Note",
    "Link",
    "NoteVersion",
    "Hit",
    "AmemError",
    "InputError",
    "NotFound",
    "StoreError",
]
