"""`Memory`: the public facade. Routes each call to one tenant's state; owns no logic of its own.

Writes: pipeline builds a ChangeSet -> storage logs it (fsync) -> tenant state applies it.
Reads: recall over the tenant state.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import sys
from collections.abc import Callable, Iterable, Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from engine.annotate.embedded import EmbeddedAnnotator
from engine.annotate.protocol import Annotator
from engine.config import Config
from engine.cost import CostMeter
from engine.encode import Encoder, make_encoder
from engine.errors import InputError, NotFound, TooLarge
from engine.gc_pause import gc_paused
from engine.model.changes import ChangeSet
from engine.model.note import AnnotatedBy, Hit, Interaction, Note, NoteVersion
from engine.model.timeutil import TimeLike, parse_time
from engine.recall.search import Recipe, search, search_many
from engine.state.prepared import prepare
from engine.state.record import micros
from engine.state.tenant_state import TenantMemory
from engine.storage.pool import Tenant, TenantPool
from engine.write import edits
from engine.write.pipeline import WritePipeline
from engine.write.validate import check_size, check_text, to_interaction

log = logging.getLogger("amem")


class Memory:
    """Agentic memory for many tenants. `Memory()` lives in RAM; `Memory(path)` persists under `path`."""

    def __init__(
        self,
        path: str | Path | None = None,
        config: Config | None = None,
        *,
        encoder: Encoder | None = None,
        annotator: Annotator | None = None,
    ) -> None:
        self.config = config or Config()
        self.path = Path(path) if path is not None else None
        self.cost = CostMeter()
        # What this Memory builds, it closes (last built, first closed); what the caller passes stays theirs.
        self._owned = ExitStack()
        try:
            self.encoder = encoder or self._own(make_encoder(self.config, self.cost))
            self.annotator = annotator or self._own(make_annotator(self.config, self.encoder, self.cost))
            self.pipeline = WritePipeline(self.config, self.encoder, self.annotator)
            self._pool = self._own(TenantPool(self.path, self.config, self.encoder.dim, self.encoder.name))
        except BaseException:
            self._owned.close()
            raise

    def _own(self, part: Any) -> Any:
        self._owned.callback(part.close)
        return part

    # --- writes -----------------------------------------------------------------
    def add(
        self,
        content: str,
        tenant: str = "default",
        timestamp: TimeLike | None = None,
        speaker: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        source_id: str | None = None,
    ) -> str:
        item = {
            "content": content,
            "timestamp": timestamp,
            "speaker": speaker,
            "metadata": metadata,
            "source_id": source_id,
        }
        return self.add_many([item], tenant=tenant)[0]

    def add_many(self, items: Iterable[Mapping[str, Any]], tenant: str = "default") -> list[str]:
        """Add interactions as one batch; returns their note ids in input order.

        Every item is checked before anything is written: one bad item rejects the batch whole.
        """
        return self.add_interactions(
            [to_interaction(item, where=f"item {i}") for i, item in enumerate(items)], tenant=tenant
        )

    def add_interactions(self, interactions: list[Interaction], tenant: str = "default") -> list[str]:
        """add_many for already-validated Interactions (the chat-log reader yields these)."""
        self._check_sizes(interactions)
        with gc_paused(), self._pool.use(tenant) as t:
            assert t is not None
            with t.state.notes.holding():  # a neighbour is read by the pipeline, the log and the apply step
                with t.unlocked():  # the batch only reads the state here: searches go on (writers wait)
                    changes, ids = self.pipeline.run(t.state, interactions)
                _commit(t, changes)
        if len(interactions) >= _TRIM_BATCH:
            _release_heap()
        return ids

    def _check_sizes(self, interactions: list[Interaction]) -> None:
        limits = self.config.write
        if len(interactions) > limits.max_batch_items:
            raise TooLarge(
                f"{len(interactions)} items, more than the limit of {limits.max_batch_items}",
                field="memories",
            )
        for i, item in enumerate(interactions):
            check_size(item.content, limits.max_content_bytes, "content", where=f"item {i}")

    def update(self, note_id: str, tenant: str = "default", **fields: Any) -> Note:
        """Manual edit of content, keywords, tags, context, speaker or metadata; keeps the prior version."""
        if isinstance(fields.get("content"), str):
            check_size(fields["content"], self.config.write.max_content_bytes, "content")
        return self._edit(tenant, lambda s: edits.update(s, self.pipeline, note_id, fields))

    def invalidate(self, note_id: str, tenant: str = "default", at: TimeLike | None = None) -> Note:
        """Mark a fact as no longer true from `at` (default now)."""
        when = parse_time(at, field="at")
        return self._edit(tenant, lambda s: edits.invalidate(s, note_id, when))

    def rollback(self, note_id: str, version: int, tenant: str = "default") -> Note:
        """Restore the note's text, fields and vector as they were at `version` (a new version is made)."""
        return self._edit(tenant, lambda s: edits.rollback(s, self.pipeline, note_id, version))

    def delete(self, note_id: str, tenant: str = "default") -> None:
        """Hard delete (privacy): gone from index, graph, history and, at once, from disk."""
        with self._pool.use(tenant, create=False) as t:
            if t is None:
                raise NotFound(f"no note {note_id!r} in tenant {tenant!r}")
            _commit(t, edits.delete(t.state, note_id)[0])
            if t.storage is not None:
                t.storage.checkpoint(t.state, purge=True)

    def reannotate(self, tenant: str = "default", batch_size: int = 256) -> int:
        """Redo the note stage for notes whose LLM annotation fell back to the embedded one."""
        with self._pool.use(tenant) as t:
            assert t is not None
            todo = t.state.notes.fallback_notes(t.state.index.num_slots)
            for i in range(0, len(todo), batch_size):
                with t.unlocked():  # the LLM annotates with the state only read: searches go on
                    changes = edits.reannotate(t.state, self.pipeline, todo[i : i + batch_size])
                _commit(t, changes)
            return sum(1 for n in todo if t.state.notes[n.id].annotated_by != AnnotatedBy.FALLBACK)

    def _edit(self, tenant: str, make: Callable[[TenantMemory], tuple[ChangeSet, Any]]) -> Any:
        with self._pool.use(tenant, create=False) as t:
            if t is None:
                raise NotFound(f"tenant {tenant!r} has no notes")
            with t.unlocked():  # the edit is built from reads (and may embed or annotate): searches go on
                changes, result = make(t.state)
            _commit(t, changes)
        return result

    def open_tenants(self, names: Iterable[str]) -> None:
        """Open (and so lock, on a persistent store) these tenants now: a bulk writer checks them all
        before its first write. Past max_open_tenants the first are closed again (the store lock holds)."""
        for name in names:
            with self._pool.use(name):
                pass

    # --- reads ------------------------------------------------------------------
    def search(
        self,
        query: str,
        tenant: str = "default",
        k: int = 10,
        as_of: TimeLike | None = None,
        include_superseded: bool = False,
        expand_links: bool | None = None,
        lexical_weight: float | None = None,
    ) -> list[Hit]:
        """Top-k notes for `query`: valid now by default, valid at `as_of`, or all with include_superseded."""
        recipe = self._recipe(query, k, as_of, include_superseded, expand_links, lexical_weight)
        query = query[: self.config.recall.max_query_chars]  # the encoder's cost grows with length
        vec = self.encoder.encode_batch([query])[0]
        with self._pool.use(tenant, create=False, search_only=True) as t:
            return [] if t is None else search(t.state, vec, query, recipe)

    def search_many(
        self,
        queries: list[str],
        tenant: str = "default",
        k: int = 10,
        as_of: TimeLike | None = None,
        include_superseded: bool = False,
        expand_links: bool | None = None,
        lexical_weight: float | None = None,
    ) -> list[list[Hit]]:
        """`search` for each query (same hits), in one call: one encoder call and one pass over the
        tenant's vectors for the whole batch, at most `RecallConfig.max_batch_queries` queries."""
        limit = self.config.recall.max_batch_queries
        if not isinstance(queries, list) or not queries:
            raise InputError("queries must be a non-empty list of strings", field="queries")
        if len(queries) > limit:
            raise TooLarge(f"{len(queries)} queries, more than the limit of {limit}", field="queries")
        for i, query in enumerate(queries):
            try:
                recipe = self._recipe(query, k, as_of, include_superseded, expand_links, lexical_weight)
            except InputError as exc:
                if exc.field != "query":
                    raise
                raise type(exc)(str(exc), field=f"queries.{i}") from None
        texts = [q[: self.config.recall.max_query_chars] for q in queries]
        vecs = self.encoder.encode_batch(texts)
        with self._pool.use(tenant, create=False, search_only=True) as t:
            return [[] for _ in texts] if t is None else search_many(t.state, vecs, texts, recipe)

    def _recipe(
        self,
        query: str,
        k: int,
        as_of: TimeLike | None,
        include_superseded: bool,
        expand_links: bool | None,
        lexical_weight: float | None,
    ) -> Recipe:
        if not isinstance(query, str) or not query.strip():
            raise InputError("query must be a non-empty string", field="query")
        check_size(query, self.config.recall.max_query_bytes, "query")
        check_text(query, "query")
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise InputError(f"k must be a positive integer, got {k!r}", field="k")
        if lexical_weight is not None and (
            isinstance(lexical_weight, bool)
            or not isinstance(lexical_weight, int | float)
            or not 0 <= lexical_weight <= 1
        ):
            raise InputError(
                f"lexical_weight must be a number in [0, 1], got {lexical_weight!r}", field="lexical_weight"
            )
        return Recipe.from_config(
            self.config,
            k=k,
            as_of=parse_time(as_of, field="as_of"),
            include_superseded=include_superseded,
            expand_links=expand_links,
            lexical_weight=lexical_weight,
        )

    def get(self, note_id: str, tenant: str = "default") -> Note:
        with self._pool.use(tenant, create=False) as t:
            if t is None:
                raise NotFound(f"no note {note_id!r} in tenant {tenant!r}")
            return t.state.get(note_id)

    def history(self, note_id: str, tenant: str = "default") -> list[NoteVersion]:
        """Prior versions, oldest first (the current state is `get`)."""
        with self._pool.use(tenant, create=False) as t:
            if t is None:
                raise NotFound(f"no note {note_id!r} in tenant {tenant!r}")
            t.state.get(note_id)
            return t.state.history.of(note_id)

    def notes(self, tenant: str = "default") -> list[Note]:
        with self._pool.use(tenant, create=False) as t:
            return [] if t is None else list(t.state.notes.values())

    def count(self, tenant: str = "default") -> int:
        """How many notes the tenant holds (0 for none), without reading them."""
        with self._pool.use(tenant, create=False, search_only=True) as t:
            return 0 if t is None else len(t.state)

    def page(
        self, tenant: str = "default", after: tuple[TimeLike, str] | None = None, limit: int = 50
    ) -> tuple[list[Note], bool]:
        """Up to `limit` notes in the order they were created (`created_at`, then id), after the note
        whose (created_at, id) is `after`, and whether more follow. Read from a column: a page of a 1M-note
        tenant decodes `limit` notes, not the tenant. A note added while paging comes on a later page."""
        if limit < 1:
            raise InputError(f"limit must be >= 1, got {limit}", field="limit")
        key = None if after is None else (micros(parse_time(after[0], field="after")), after[1])
        with self._pool.use(tenant, create=False) as t:
            return ([], False) if t is None else t.state.notes.page(key, limit)

    def tenants(self) -> list[str]:
        return self._pool.names()

    def resident_tenants(self) -> list[str]:
        """Tenants whose state is in RAM now (at most `max_open_tenants` for a persistent store)."""
        return list(self._pool.open)

    def vector(self, note_id: str, tenant: str = "default") -> Any:
        """The note's vector as indexed now (a copy): what `search` compares the query with."""
        with self._pool.use(tenant, create=False) as t:
            if t is None:
                raise NotFound(f"no note {note_id!r} in tenant {tenant!r}")
            t.state.get(note_id)
            return t.state.vector(note_id).copy()

    def stats(self) -> dict[str, Any]:
        per: dict[str, dict[str, Any]] = {}
        for name in self.tenants():
            with self._pool.use(name) as t:
                assert t is not None
                per[name] = _tenant_stats(t)
        total = sum(p["notes"] for p in per.values())
        return {"tenants": per, "notes": total, "cost": self.cost.report(total)}

    def refresh(self, tenant: str | None = None) -> None:
        """Read-only stores: pick up what the store's writer has committed since (one tenant, or all open).
        It reads the log and the state files only, so it does not wait for a new snapshot's background
        checksums (a reader refreshes before each search)."""
        for name in [tenant] if tenant is not None else list(self._pool.open):
            with self._pool.use(name, create=False, search_only=True) as t:
                if t is not None and t.storage is not None:
                    t.state = t.storage.refresh(t.state)

    # --- lifecycle -----------------------------------------------------------------
    def checkpoint(self) -> None:
        """Write a snapshot of every open tenant now (close does this too)."""
        for name in list(self._pool.open):
            with self._pool.use(name) as t:
                if t is not None and t.storage is not None:
                    t.storage.checkpoint(t.state)

    def close(self) -> None:
        """Snapshot and close open tenants, then close the annotator and encoder this Memory built."""
        self._owned.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        if exc is None:
            self.close()
            return
        try:  # already failing (say, the log hit a full disk): closing must not hide that first error
            self.close()
        except Exception as later:
            log.error("closing after %s: %s", type(exc).__name__, later)


_TRIM_BATCH = 256
_LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6") if sys.platform == "linux" else None


def _release_heap() -> None:
    """Hand the pages a large write batch freed back to the OS.

    A batch allocates and drops ~100 MB of short-lived objects (candidates, decoded neighbours, encoder
    buffers) between the long-lived per-note records; glibc keeps those freed pages, and a growing tenant
    measured twice its live size in RSS without this. One trim per batch of >= 256 costs a few ms.
    """
    trim = getattr(_LIBC, "malloc_trim", None)
    if trim is not None:
        trim(0)


def _commit(t: Tenant, changes: ChangeSet) -> None:
    """Log (fsync) before applying: what a call acknowledged survives a crash."""
    with t.unlocked():  # the record is encoded from the state, not written to it: searches go on
        if t.storage is not None:
            t.storage.log(changes, t.state)
        prepared = prepare(changes)  # what the notes alone give, also before the lock (engine.state.prepared)
        t.state.index.make_room(len(changes.upserts))  # so that the insert does not move the graph
    t.state.apply(changes, prepared=prepared)
    with t.unlocked():  # a seal writes a spill file; searches never read versions: `writing` guards them
        t.state.history.seal()
        try:  # a search meanwhile reads the lexical index as it was (engine/state/lexical.py)
            t.state.settle()
        except OSError as exc:  # logged and applied: the write stands, the next search commits again
            log.warning("tenant %s: lexical commit deferred to the next search (%s)", t.state.tenant, exc)
    if t.storage is not None and t.storage.should_checkpoint(t.state):
        t.storage.checkpoint(t.state, unlocked=t.unlocked)  # searches go on while it writes


def _tenant_stats(t: Tenant) -> dict[str, Any]:
    links, superseded, fallbacks = t.state.counts()
    return {
        "notes": len(t.state),
        "indexed": len(t.state.index),
        "index_slots": t.state.index.num_slots,
        "sources": t.state.num_sources,
        "links": links,
        "versions": len(t.state.history),
        "superseded": superseded,
        "fallbacks": fallbacks,
        "problems": list(t.storage.problems) if t.storage else [],
    }


def make_annotator(config: Config, encoder: Encoder, cost: CostMeter) -> Annotator:
    embedded = EmbeddedAnnotator(config, encoder)
    if config.llm.annotator == "embedded":
        return embedded
    from engine.llm import make_llm_annotator

    return make_llm_annotator(config, cost, embedded)
