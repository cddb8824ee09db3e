"""amem: GPU-batched agentic memory (A-MEM) with validity, versions and graph recall."""

from engine.config import Config
from engine.errors import AmemError, InputError, NotFound, StoreError
from engine.memory import Memory
from engine.note import Hit, Link, Note, NoteVersion

__all__ = ["Config", "Memory", "Note", "Link", "NoteVersion", "Hit", "AmemError", "InputError", "NotFound",
           "StoreError"]
