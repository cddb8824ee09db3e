"""The write path: a batch of interactions -> a ChangeSet, in stages, each one batched call.

    skip known sources -> annotate all -> encode all -> fold near-duplicates -> neighbours for all
    -> judge links for all -> evolve neighbours (applied in timestamp order) -> re-encode what changed

Candidates for a new note are the current notes of earlier batches plus earlier batch-mates (by time).
Nothing here mutates the tenant: the result is logged, then applied (see changes.py).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np

from engine.annotate.protocol import Annotator
from engine.annotate.schemas import Candidate, EvolveRequest, LinkRequest
from engine.config import Config
from engine.encode import Encoder
from engine.model.changes import ChangeSet
from engine.model.note import Interaction, Link, Note, NoteVersion, clip, new_id
from engine.model.timeutil import utcnow
from engine.state.tenant_state import TenantMemory
from engine.text import jaccard
from engine.write.evolution import apply_update, carry_forward, merge_duplicate, snapshot_version


@dataclass(slots=True)
class _Batch:
    """Working state of one run: the new notes, their vectors, and every note the run changed."""

    tm: TenantMemory
    now: datetime
    new: list[Note] = field(default_factory=list)
    vecs: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    hits: list[list[tuple[int, float]]] = field(default_factory=list)
    """Per new note: (slot, cosine) of its nearest stored notes."""
    inner: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    """Cosine between batch-mates."""
    changed: dict[str, Note] = field(default_factory=dict)
    """Existing notes this run changed, in their latest state."""
    versions: list[NoteVersion] = field(default_factory=list)
    pos: dict[str, int] = field(default_factory=dict)
    """Position of each new note in `new`."""
    dirty: set[str] = field(default_factory=set)
    """New notes whose text changed after they were first encoded."""
    read: dict[str, Note] = field(default_factory=dict)
    """Stored notes decoded by this run: a neighbour of many new notes is decoded once."""

    def keep(self, rows: list[int]) -> None:
        """Drop the new notes not in `rows` (folded into others) with their search results."""
        self.new = [self.new[j] for j in rows]
        self.vecs, self.inner = self.vecs[rows], self.inner[np.ix_(rows, rows)]
        self.hits = [self.hits[j] for j in rows]
        self.pos = {n.id: j for j, n in enumerate(self.new)}

    def is_new(self, note_id: str) -> bool:
        return note_id in self.pos

    def current(self, note_id: str) -> Note:
        """Latest state of a note: new in this batch, changed by it, or as stored."""
        if note_id in self.pos:
            return self.new[self.pos[note_id]]
        return self.changed.get(note_id) or self.stored(note_id)

    def stored(self, note_id: str) -> Note:
        """A note as stored before this run (shared: never mutate it, `change` it)."""
        note = self.read.get(note_id)
        if note is None:
            note = self.read[note_id] = self.tm.get(note_id)
        return note

    def change(self, before: Note, after: Note, stage: str, cause: str | None, reason: str = "") -> None:
        """Record `before` as a version and make `after` the latest state."""
        first_change = before.id in self.tm.notes and before.id not in self.changed
        vec = self.tm.vector(before.id) if first_change else None
        self.versions.append(snapshot_version(before, stage, cause, self.now, vec, reason))
        if self.is_new(after.id):
            self.new[self.pos[after.id]] = after
        else:
            self.changed[after.id] = after


class WritePipeline:
    def __init__(
        self, config: Config, encoder: Encoder, annotator: Annotator, clock: Callable[[], datetime] = utcnow
    ) -> None:
        self.config = config
        self.encoder = encoder
        self.annotator = annotator
        self.clock = clock

    def run(self, tm: TenantMemory, items: list[Interaction]) -> tuple[ChangeSet, list[str]]:
        """Process a batch; returns the changes and the note id of every item (input order)."""
        batch = _Batch(tm=tm, now=self.clock())
        ids: list[str | None] = [None] * len(items)
        fresh = self._skip_known(tm, items, ids)
        self._build(batch, [items[i] for i in fresh])
        for i, note in zip(fresh, batch.new, strict=True):
            ids[i] = note.id
        self._fold_duplicates(batch, fresh, ids)
        requests = self._link(batch)
        self._evolve(batch, requests)
        for i, item in enumerate(items):  # repeats of one source inside the batch share its note
            if ids[i] is None and item.source_id:
                ids[i] = next(
                    n.id for n in [*batch.new, *batch.changed.values()] if item.source_id in n.source_ids
                )
        return self._changes(batch), ids  # type: ignore[return-value]

    # --- stage 0: resume --------------------------------------------------------
    @staticmethod
    def _skip_known(tm: TenantMemory, items: list[Interaction], ids: list[str | None]) -> list[int]:
        fresh, seen = [], set()
        for i in sorted(range(len(items)), key=lambda j: items[j].timestamp):
            source = items[i].source_id
            known = tm.note_of_source(source) if source else None
            if known is not None:
                ids[i] = known
            elif not source or source not in seen:
                fresh.append(i)
                seen.add(source)
        return fresh

    # --- stages 1-2: annotate all, encode all ----------------------------------------
    def _build(self, batch: _Batch, items: list[Interaction]) -> None:
        items = _thread(batch.tm, items, self.config.write.max_content_chars)
        annotations = self.annotator.annotate(items) if items else []
        for item, ann in zip(items, annotations, strict=True):
            batch.new.append(
                Note(
                    id=note_id(batch.tm.tenant, item.source_id),
                    tenant=batch.tm.tenant,
                    content=item.content,
                    timestamp=item.timestamp,
                    speaker=item.speaker,
                    keywords=ann.keywords,
                    tags=ann.tags,
                    context=ann.context,
                    metadata=dict(item.metadata),
                    annotated_by=ann.annotated_by,
                    source_ids=[item.source_id] if item.source_id else [],
                    occurrences=[item.timestamp],
                    created_at=batch.now,
                    updated_at=batch.now,
                )
            )
        batch.pos = {n.id: j for j, n in enumerate(batch.new)}
        batch.vecs = self.encode_notes(batch.new)
        # One search serves both duplicate detection and link candidates.
        depth = max(3, self.config.write.k_neighbours)
        ef = self.config.index.ann_ef_write
        batch.hits = (
            batch.tm.index.search(batch.vecs, depth, batch.tm.mask(), ef, background=True)
            if batch.new
            else []
        )
        batch.inner = batch.vecs @ batch.vecs.T

    def encode_notes(self, notes: list[Note]) -> np.ndarray:
        texts = [n.embedding_text(self.config.write.max_content_chars) for n in notes]
        out = [
            self.encoder.encode_batch(texts[i : i + self.config.encoder.batch_size])
            for i in range(0, len(texts), self.config.encoder.batch_size)
        ]
        return np.concatenate(out) if out else np.zeros((0, self.encoder.dim), dtype=np.float32)

    # --- stage 3: near-duplicates ------------------------------------------------------
    def _fold_duplicates(self, batch: _Batch, fresh: list[int], ids: list[str | None]) -> None:
        if not batch.new:
            return
        keep: list[int] = []
        # Batch-mates close enough to be duplicates, each row in one numpy step (a Python loop over the
        # kept ones was quadratic in the batch); the kept ones come out in `keep` order, as before.
        close_to = batch.inner >= self.config.write.dedup_threshold
        kept = np.zeros(len(batch.new), dtype=bool)
        for j, note in enumerate(batch.new):
            pool = [(batch.tm.index.ids[s], c) for s, c in batch.hits[j][:3]]
            pool += [(batch.new[m].id, float(batch.inner[j, m])) for m in np.flatnonzero(close_to[j] & kept)]
            target = self._duplicate_of(batch, note, pool)
            if target is None:
                keep.append(j)
                kept[j] = True
                continue
            before = batch.current(target)
            source = note.source_ids[0] if note.source_ids else None
            batch.change(
                before, merge_duplicate(before, note.timestamp, source, batch.now), "merge", source or note.id
            )
            ids[fresh[j]] = target
        batch.keep(keep)

    def _duplicate_of(self, batch: _Batch, note: Note, pool: list[tuple[str | None, float]]) -> str | None:
        chars = self.config.write.max_content_chars  # token sets of the clipped text: cost bounded by it
        for other_id, cosine in sorted(pool, key=lambda p: -p[1]):
            if other_id is None or cosine < self.config.write.dedup_threshold:
                continue
            other = batch.current(other_id)
            if (
                other.speaker == note.speaker
                and jaccard(clip(other.content, chars), clip(note.content, chars))
                >= self.config.write.dedup_jaccard
            ):
                return other_id
        return None

    # --- stages 4-5: neighbours, links -------------------------------------------------
    def _link(self, batch: _Batch) -> list[EvolveRequest]:
        k = self.config.write.k_neighbours
        if not batch.new or k == 0:
            return []
        requests = []
        ids, fixed = batch.tm.index.ids, batch.tm.notes.fixed
        for j, note in enumerate(batch.new):
            pool = [(batch.stored(ids[s]), c, _known(fixed[s])) for s, c in batch.hits[j][:k]]  # type: ignore[arg-type]
            earlier = batch.inner[j, :j]
            for m in np.argsort(-earlier)[:k]:
                pool.append((batch.new[m], float(earlier[m]), None))
            pool.sort(key=lambda p: -p[1])
            candidates = [Candidate(h, n, c, f) for h, (n, c, f) in enumerate(pool[:k])]
            requests.append(LinkRequest(note=note, candidates=candidates))
        decisions = self.annotator.judge_links(requests)
        evolve = []
        for req, choices in zip(requests, decisions, strict=True):
            offered = {c.note.id: c.note for c in req.candidates}
            links = [
                Link(target=c.target, reason=c.reason, created_at=batch.now)
                for c in choices
                if c.target in offered
            ]
            req.note.links = list({link.target: link for link in links}.values())
            if req.note.links:
                evolve.append(
                    EvolveRequest(note=req.note, neighbours=[offered[x.target] for x in req.note.links])
                )
        return evolve

    # --- stage 6: evolve -------------------------------------------------------------------
    def _evolve(self, batch: _Batch, requests: list[EvolveRequest]) -> None:
        if not requests:
            return
        results = self.annotator.evolve(requests)
        for req, updates in zip(requests, results, strict=True):  # requests are in timestamp order
            allowed = set(req.note.link_targets())
            for update in updates:
                if update.target not in allowed:
                    continue
                before = batch.current(update.target)
                after, stage = apply_update(before, update, req.note, batch.now)
                if stage is not None:
                    batch.change(
                        before, after, stage, req.note.id, update.reason if stage == "supersede" else ""
                    )
                if stage == "supersede":
                    self._carry_forward(batch, req.note.id, before, update.reason)

    @staticmethod
    def _carry_forward(batch: _Batch, new_id: str, old: Note, reason: str) -> None:
        j = batch.pos.get(new_id)
        if j is not None:  # the superseding note is new in this batch: rewrite it before it is stored
            batch.new[j] = carry_forward(batch.new[j], old, reason)
            batch.dirty.add(new_id)

    # --- stage 7: re-encode, collect ---------------------------------------------------------
    def _changes(self, batch: _Batch) -> ChangeSet:
        evolved_new = ({v.note_id for v in batch.versions} | batch.dirty) & batch.pos.keys()
        redo = [n for n in batch.new if n.id in evolved_new]
        text_changed = [n for n in batch.changed.values() if _needs_encoding(batch.stored(n.id), n)]
        fresh_vecs = dict(
            zip([n.id for n in redo + text_changed], self.encode_notes(redo + text_changed), strict=True)
        )
        upserts = [(n, fresh_vecs.get(n.id, v)) for n, v in zip(batch.new, batch.vecs, strict=True)]
        upserts += [
            (n, fresh_vecs[n.id] if n.id in fresh_vecs else batch.tm.vector(n.id))
            for n in batch.changed.values()
        ]
        return ChangeSet(upserts=upserts, versions=batch.versions)


def _thread(tm: TenantMemory, items: list[Interaction], chars: int) -> list[Interaction]:
    """Copies of the interactions (in time order), each told the one before it in the tenant's conversation."""
    last = tm.latest
    previous = f"{last.speaker or 'someone'}: {clip(last.content, chars)}" if last is not None else None
    out = []
    for item in items:
        if item.previous is None and (last is None or last.timestamp <= item.timestamp):
            item = replace(item, previous=previous)
        out.append(item)
        previous = f"{item.speaker or 'someone'}: {clip(item.content, chars)}"
    return out


def _known(code: int) -> bool | None:
    return None if code < 0 else bool(code)


def _needs_encoding(old: Note, note: Note) -> bool:
    return (old.content, old.keywords, old.tags, old.context) != (
        note.content,
        note.keywords,
        note.tags,
        note.context,
    )


def note_id(tenant: str, source_id: str | None) -> str:
    """Stable ids for sourced interactions (re-ingest and sharded ingest agree); random otherwise."""
    if not source_id:
        return new_id()
    return hashlib.blake2b(f"{tenant}\x00{source_id}".encode(), digest_size=16).hexdigest()
