"""`Memory`: the public facade. Routes each call to one tenant's state; owns no logic of its own.

Writes: pipeline builds a ChangeSet -> storage logs it (fsync) -> tenant state applies it.
Reads: recall over the tenant state.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine import edits
from engine.annotator import Annotator
from engine.changes import ChangeSet
from engine.config import Config
from engine.cost import CostMeter
from engine.embedded import EmbeddedAnnotator
from engine.encoder import Encoder, make_encoder
from engine.errors import InputError, NotFound
from engine.interactions import check_text, to_interaction
from engine.note import Hit, Interaction, Note, NoteVersion
from engine.pipeline import WritePipeline
from engine.recall import Recipe, search
from engine.storage import TenantStorage
from engine.store import TenantMemory
from engine.tenant import validate_tenant
from engine.timeutil import TimeLike, parse_time


@dataclass(slots=True)
class _Tenant:
    state: TenantMemory
    storage: TenantStorage | None
    lock: threading.RLock


class Memory:
    """Agentic memory for many tenants. `Memory()` lives in RAM; `Memory(path)` persists under `path`."""

    def __init__(self, path: str | Path | None = None, config: Config | None = None, *,
                 encoder: Encoder | None = None, annotator: Annotator | None = None) -> None:
        self.config = config or Config()
        self.path = Path(path) if path is not None else None
        self.cost = CostMeter()
        self.encoder = encoder or make_encoder(self.config)
        self.annotator = annotator or make_annotator(self.config, self.encoder, self.cost)
        self.pipeline = WritePipeline(self.config, self.encoder, self.annotator)
        self._tenants: dict[str, _Tenant] = {}
        self._lock = threading.Lock()
        self._closed = False

    # --- writes -----------------------------------------------------------------
    def add(self, content: str, tenant: str = "default", timestamp: TimeLike | None = None,
            speaker: str | None = None, metadata: Mapping[str, Any] | None = None,
            source_id: str | None = None) -> str:
        item = {"content": content, "timestamp": timestamp, "speaker": speaker, "metadata": metadata,
                "source_id": source_id}
        return self.add_many([item], tenant=tenant)[0]

    def add_many(self, items: Iterable[Mapping[str, Any]], tenant: str = "default") -> list[str]:
        """Add interactions as one batch; returns their note ids in input order.

        Every item is checked before anything is written: one bad item rejects the batch whole.
        """
        return self.add_interactions([to_interaction(item, where=f"item {i}") for i, item in enumerate(items)],
                                     tenant=tenant)

    def add_interactions(self, interactions: list[Interaction], tenant: str = "default") -> list[str]:
        """add_many for already-validated Interactions (the chat-log reader yields these)."""
        t = self._tenant(tenant)
        with t.lock:
            changes, ids = self.pipeline.run(t.state, interactions)
            self._commit(t, changes)
        return ids

    def update(self, note_id: str, tenant: str = "default", **fields: Any) -> Note:
        """Manual edit of content, keywords, tags, context, speaker or metadata; keeps the prior version."""
        return self._edit(tenant, lambda s: edits.update(s, self.pipeline, note_id, fields))

    def invalidate(self, note_id: str, tenant: str = "default", at: TimeLike | None = None) -> Note:
        """Mark a fact as no longer true from `at` (default now)."""
        when = parse_time(at, field="at")
        return self._edit(tenant, lambda s: edits.invalidate(s, note_id, when))

    def rollback(self, note_id: str, version: int, tenant: str = "default") -> Note:
        """Restore the note's text, fields and vector as they were at `version` (a new version is made)."""
        return self._edit(tenant, lambda s: edits.rollback(s, self.pipeline, note_id, version))

    def delete(self, note_id: str, tenant: str = "default") -> None:
        """Hard delete (privacy): gone from index, graph, history and the next snapshot."""
        t = self._tenant(tenant)
        with t.lock:
            self._edit(tenant, lambda s: edits.delete(s, note_id))
            if t.storage is not None:
                t.storage.checkpoint(t.state, purge=True)

    def reannotate(self, tenant: str = "default", batch_size: int = 256) -> int:
        """Redo the note stage for notes whose LLM annotation fell back to the embedded one."""
        t = self._tenant(tenant)
        with t.lock:
            todo = [n for n in t.state.notes.values() if n.annotated_by == "embedded-fallback"]
            for i in range(0, len(todo), batch_size):
                self._commit(t, edits.reannotate(t.state, self.pipeline, todo[i : i + batch_size]))
        return sum(1 for n in todo if t.state.notes[n.id].annotated_by != "embedded-fallback")

    def _edit(self, tenant: str, make: Any) -> Any:
        t = self._tenant(tenant)
        with t.lock:
            changes, result = make(t.state)
            self._commit(t, changes)
        return result

    def _commit(self, t: _Tenant, changes: ChangeSet) -> None:
        if t.storage is not None:
            t.storage.log(changes)
        t.state.apply(changes)
        if t.storage is not None and t.storage.should_checkpoint():
            t.storage.checkpoint(t.state)

    # --- reads ------------------------------------------------------------------
    def search(self, query: str, tenant: str = "default", k: int = 10, as_of: TimeLike | None = None,
               include_superseded: bool = False, expand_links: bool | None = None,
               lexical_weight: float | None = None) -> list[Hit]:
        if not isinstance(query, str) or not query.strip():
            raise InputError("query must be a non-empty string", field="query")
        check_text(query, "query")
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise InputError(f"k must be a positive integer, got {k!r}", field="k")
        if lexical_weight is not None and (isinstance(lexical_weight, bool) or not isinstance(
                lexical_weight, int | float) or not 0 <= lexical_weight <= 1):
            raise InputError(f"lexical_weight must be a number in [0, 1], got {lexical_weight!r}",
                             field="lexical_weight")
        recipe = Recipe.from_config(self.config, k=k, as_of=parse_time(as_of, field="as_of"),
                                    include_superseded=include_superseded, expand_links=expand_links,
                                    lexical_weight=lexical_weight)
        vec = self.encoder.encode_batch([query])[0]
        t = self._tenant(tenant, create=False)
        if t is None:
            return []
        with t.lock:
            return search(t.state, vec, query, recipe)

    def get(self, note_id: str, tenant: str = "default") -> Note:
        t = self._tenant(tenant, create=False)
        if t is None:
            raise NotFound(f"no note {note_id!r} in tenant {tenant!r}")
        with t.lock:
            return t.state.get(note_id)

    def history(self, note_id: str, tenant: str = "default") -> list[NoteVersion]:
        """Prior versions, oldest first (the current state is `get`)."""
        self.get(note_id, tenant)
        t = self._tenant(tenant)
        return list(t.state.history.get(note_id, []))

    def notes(self, tenant: str = "default") -> list[Note]:
        t = self._tenant(tenant, create=False)
        return [] if t is None else list(t.state.notes.values())

    def tenants(self) -> list[str]:
        known = set(self._tenants)
        if self.path is not None and (self.path / "tenants").exists():
            known.update(p.name for p in (self.path / "tenants").iterdir() if p.is_dir())
        return sorted(known)

    def stats(self) -> dict[str, Any]:
        per: dict[str, dict[str, Any]] = {}
        for name in self.tenants():
            t = self._tenant(name)
            s = t.state
            per[name] = {"notes": len(s), "links": sum(len(n.links) for n in s.notes.values()),
                         "versions": sum(len(v) for v in s.history.values()),
                         "superseded": sum(1 for n in s.notes.values() if n.invalid_at is not None),
                         "fallbacks": sum(1 for n in s.notes.values() if n.annotated_by == "embedded-fallback"),
                         "problems": list(t.storage.problems) if t.storage else []}
        total = sum(p["notes"] for p in per.values())
        return {"tenants": per, "notes": total, "cost": self.cost.report(total)}

    # --- lifecycle -----------------------------------------------------------------
    def _tenant(self, name: str, create: bool = True) -> Any:
        name = validate_tenant(name)
        with self._lock:
            if self._closed:
                raise InputError("this Memory is closed")
            t = self._tenants.get(name)
            if t is None:
                if not create and not self._exists_on_disk(name):
                    return None
                t = self._open_tenant(name)
                self._tenants[name] = t
            return t

    def _exists_on_disk(self, name: str) -> bool:
        return self.path is not None and (self.path / "tenants" / name).exists()

    def _open_tenant(self, name: str) -> _Tenant:
        state = TenantMemory(name, self.encoder.dim, use_cuda=self.config.use_cuda)
        storage = None
        if self.path is not None:
            storage = TenantStorage(self.path / "tenants", name, self.config, self.encoder.name)
            storage.load(state)
        return _Tenant(state=state, storage=storage, lock=threading.RLock())

    def checkpoint(self) -> None:
        """Write a snapshot of every open tenant now (close does this too)."""
        for t in list(self._tenants.values()):
            with t.lock:
                if t.storage is not None:
                    t.storage.checkpoint(t.state)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            tenants = list(self._tenants.values())
        errors = []
        for t in tenants:
            with t.lock:
                if t.storage is not None:
                    try:
                        t.storage.close(t.state)
                    except Exception as exc:  # close every tenant, then report the first failure
                        errors.append(exc)
        self.annotator.close()
        if errors:
            raise errors[0]

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def make_annotator(config: Config, encoder: Encoder, cost: CostMeter) -> Annotator:
    embedded = EmbeddedAnnotator(config, encoder)
    if config.annotator == "embedded":
        return embedded
    from engine.llm import make_llm_annotator

    return make_llm_annotator(config, cost, embedded)
