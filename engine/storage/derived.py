"""The derived files of a snapshot: the vector index, the tantivy index and the state file.

Each is checked against the snapshot (checksums in meta.json, slots in step with the index) and adopted
when whole; otherwise the caller rebuilds from the Parquet notes, with a warning naming the file. Files
are hashed before use (engine/storage/checksums.py).
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

from engine.errors import CorruptIndex
from engine.state import packed
from engine.state.lexical import LexicalIndex
from engine.state.prepared import indexed_text
from engine.state.record import decode
from engine.state.tenant_state import TenantMemory
from engine.state.vector_index import VectorIndex
from engine.storage.checksums import sha256_all

log = logging.getLogger("amem")

LEXICAL = "lexical"
STATE = "state.arrow"
BY_SLOT = "slot"
"""`derived.lexical_keys`: the lexical documents are keyed by index slot (older snapshots: by row)."""


def load_index(path: Path, tm: TenantMemory, seq: int, notes: int) -> bool:
    """Reuse the persisted vector index (its HNSW graph costs minutes to rebuild at 1M notes) when it
    matches this snapshot; otherwise the notes' vectors rebuild it as they are applied."""
    if not path.exists():
        return False
    try:
        index = VectorIndex.load(path, seq, config=tm.index.config, use_cuda=tm.use_cuda)
    except CorruptIndex as exc:
        log.warning("%s; rebuilding the vector index from the snapshot's vectors", exc)
        return False
    if len(index) != notes:
        log.warning("%s: %d notes for %d in the snapshot; rebuilding the index", path, len(index), notes)
        return False
    tm.adopt_index(index)
    return True


def adopt_state(path: Path, meta: dict[str, Any], tm: TenantMemory, num_notes: int) -> bool:
    """Take the snapshot's state file when whole and in step with the adopted index (else: False, and
    the notes are read from Parquet)."""
    expected = meta.get("derived", {}).get(STATE)
    if expected is None:  # an older snapshot: the next one will carry a state file
        log.info("tenant %s: %s has no state file; reading the notes", tm.tenant, path.name)
        return False
    try:
        if sha256_all([path / name for name in expected]) != list(expected.values()):
            raise ValueError("checksum mismatch")
        state = packed.read(path / STATE)
        if state.num_slots != tm.index.num_slots:
            raise ValueError(f"{state.num_slots} slots for {tm.index.num_slots} in the index")
        tm.adopt(state)
        if len(tm.notes) != num_notes or not all(map(tm.notes.__contains__, _some(tm.index.ids))):
            raise ValueError("notes out of step with the index")
        return True
    except (OSError, ValueError) as exc:
        log.warning("tenant %s: state file %s unusable (%s); reading the notes", tm.tenant, path / STATE, exc)
        index = tm.index  # untouched by adopt(): kept, the rest of the half-adopted state dropped
        tm.__init__(tm.tenant, index.dim, tm.use_cuda, index.config)  # type: ignore[misc]
        tm.adopt_index(index)
        return False


def _some(ids: list[str | None]) -> list[str]:
    """A sample of the index's ids (a spot check that records sit in the slots the index gives them)."""
    live = [i for i in ids[:: max(1, len(ids) // 64)] if i is not None]
    return live[:64]


def write_lexical(folder: Path, tm: TenantMemory) -> dict[str, str]:
    """The tantivy index of the snapshot's notes keyed by slot: the live index's files when it is on
    disk (no note decoded), else built from the notes."""
    if tm.lexical.path is not None:
        tm.lexical.flush()
        shutil.copytree(tm.lexical.path, folder)
        return tree_sums(folder)
    index = LexicalIndex(folder)
    for slot in tm.index.slot_of.values():
        visible, invalid = tm.validity_at(slot)  # decoded past the table's cache, which searches change
        index.upsert_terms(slot, indexed_text(decode(tm.notes.record(slot))), visible, invalid)  # type: ignore[arg-type]
    index.flush()
    return tree_sums(folder)


def read_lexical(
    path: Path, meta: dict[str, Any], tm: TenantMemory, adopted: bool, ids: list[str] | None
) -> LexicalIndex | None:
    """The snapshot's lexical index if whole and in step with the notes; None (rebuild) otherwise."""
    folder, derived = path / LEXICAL, meta.get("derived", {})
    try:
        if derived.get(LEXICAL) is None:
            raise ValueError("absent (an older snapshot)")
        if tree_sums(folder) != derived[LEXICAL]:
            raise ValueError("checksum mismatch")
        if derived.get("lexical_keys") == BY_SLOT and not adopted:
            raise ValueError("keyed by the slots of a vector index that was rebuilt")
        if derived.get("lexical_keys") != BY_SLOT and (
            ids is None or any(tm.index.slot_of.get(note_id) != row for row, note_id in enumerate(ids))
        ):
            raise ValueError("slots out of step with the notes")
        index = LexicalIndex.working_copy(folder, tm.scratch)
        if len(index) != len(tm.notes):
            raise ValueError(f"{len(index)} documents for {len(tm.notes)} notes")
        return index
    except (OSError, ValueError) as exc:
        log.warning(
            "tenant %s: lexical index %s unusable (%s); rebuilding it from the notes", tm.tenant, folder, exc
        )
        return None


def tree_sums(folder: Path) -> dict[str, str]:
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: no such folder")
    files = [p for p in sorted(folder.rglob("*")) if p.is_file()]
    names = [p.relative_to(folder).as_posix() for p in files]
    return {name: digest or "" for name, digest in zip(names, sha256_all(files), strict=True)}
