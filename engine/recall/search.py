"""Recall: query -> dense top-N and BM25 top-N (tantivy) -> fused score + levers -> optional 1-hop
link expansion.

Candidates: the union of the dense and lexical top lists, both scores exact for the union. Ranking
(engine.recall.rounds): fusion (min-max by default, `score = (1 - w) * dense + w * lexical`, w =
lexical_weight; or RRF / z-score), query-side boosts (named speaker, "when" questions, short turns),
session neighbours, BM25 pseudo-relevance feedback and an optional second round. Expansion: the
links of hits scoring at least `expand_min_score` x the best hit join with `parent score x expand_decay`
and a `via` naming the parent and the link's reason. Validity is a slot mask applied to both indexes.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np

from engine.config import Config, RecallConfig
from engine.model.note import Hit, Note
from engine.model.timeutil import utcnow
from engine.recall.query import QueryInfo, analyse
from engine.recall.rounds import Ranker, lexical_scores
from engine.recall.sparse import SparseScores
from engine.recall.successors import hand_over
from engine.recall.view import TenantView, view_of
from engine.recall.visible import retired_too, visible
from engine.state.tenant_state import TenantMemory

_POOL: tuple[int, ThreadPoolExecutor] | None = None
"""(process id, pool) running a search's lexical stage beside its dense one; the caller holds the tenant's
lock meanwhile. Per process: a forked child has the parent's pool object but none of its threads."""


def _lexical_pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None or _POOL[0] != os.getpid():
        _POOL = (os.getpid(), ThreadPoolExecutor(max_workers=4, thread_name_prefix="amem-lexical"))
    return _POOL[1]


MEAN_EXACT_SLOTS = 4096
"""Up to this many slots the query is centred on the mean of exactly the notes it may see (no measurable
cost at 4,000 notes: p50 2.86 / 2.83 ms off / on); past it, on the mean of every live note (O(1))."""


@dataclass(slots=True)
class Recipe:
    """How one search runs: Config gives the defaults (`from_config`), callers override per query."""

    k: int
    as_of: datetime | None
    include_superseded: bool
    expand_links: bool
    lexical_weight: float
    expand_min_score: float
    expand_decay: float
    recency_half_life_days: float | None
    levers: RecallConfig
    """The query-side levers (fusion, boosts, rounds: engine.recall.rounds)."""

    @classmethod
    def from_config(
        cls,
        config: Config,
        k: int,
        as_of: datetime | None = None,
        include_superseded: bool = False,
        expand_links: bool | None = None,
        lexical_weight: float | None = None,
    ) -> Recipe:
        return cls(
            k=k,
            as_of=as_of,
            include_superseded=include_superseded,
            expand_links=config.recall.expand_links if expand_links is None else expand_links,
            lexical_weight=config.recall.lexical_weight if lexical_weight is None else lexical_weight,
            expand_min_score=config.recall.expand_min_score,
            expand_decay=config.recall.expand_decay,
            recency_half_life_days=config.recall.recency_half_life_days,
            levers=config.recall,
        )


def search(tm: TenantMemory, query_vec: np.ndarray, query: str, recipe: Recipe) -> list[Hit]:
    return search_many(tm, query_vec[None, :], [query], recipe)[0]


def search_many(
    tm: TenantMemory, query_vecs: np.ndarray, queries: list[str], recipe: Recipe
) -> list[list[Hit]]:
    """Each query's hits, as `search` gives them; the batch shares one dense search (one pass over the
    tenant's rows for all of them), beside one pool thread running every query's lexical stage."""
    mask = visible(tm, recipe.as_of, recipe.include_superseded)
    wide = _retired_too(tm, recipe)
    if wide is None:
        ranked = fuse(tm, query_vecs, queries, mask, recipe)
    else:  # room for the retired notes that hand their place over (or drop out)
        ranked = fuse(tm, query_vecs, queries, wide, replace(recipe, k=2 * recipe.k))
    out = []
    for slots, scores in ranked:
        if wide is None:
            hits = [Hit(note=tm.notes.at(int(s)), score=float(c)) for s, c in zip(slots, scores, strict=True)]
        else:
            hits = hand_over(tm, slots, scores, mask, recipe.levers.successor_weight, recipe.k)
        if recipe.expand_links and hits:
            hits = expand(tm, hits, mask, recipe)
        for hit in hits:
            hit.is_superseded = not _valid(hit, recipe.as_of)
        out.append(hits)
    return out


def _retired_too(tm: TenantMemory, recipe: Recipe) -> np.ndarray | None:
    """The mask to rank by when retired notes pass their match on (engine.recall.successors), else None."""
    if recipe.levers.successor_weight <= 0 or recipe.as_of is not None or recipe.include_superseded:
        return None
    return retired_too(tm)


def fuse(
    tm: TenantMemory, query_vecs: np.ndarray, queries: list[str], mask: np.ndarray, recipe: Recipe
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per query: slots and fused scores, best first, at most k."""
    depth = max(50, 4 * recipe.k)
    w, levers = recipe.lexical_weight, recipe.levers
    view = view_of(tm)
    infos = [analyse(q, view.participants, levers.strip_names) for q in queries]
    pending = None
    if w > 0:  # tantivy and FAISS both let go of the GIL: the two searches overlap on two cores
        # One thread for the whole batch's lexical stages: they share the tenant's index (its lazy commit,
        # its last-query cache) and note cache, which take one reader at a time.
        pending = _lexical_pool().submit(
            lambda: [lexical_scores(tm, i, mask, levers.prf_weight, levers.prf_content_seeds) for i in infos]
        )
    if levers.center_queries > 0:
        query_vecs = centred(query_vecs, _mean_seen(tm, mask), levers.center_queries)
    dense = tm.index.search(query_vecs, depth, mask)
    lexicals = pending.result() if pending is not None else [None] * len(infos)
    out = []
    for vec, info, dense_hits, lexical in zip(query_vecs, infos, dense, lexicals, strict=True):
        out.append(_rank(tm, view, info, vec, dense_hits, lexical, mask, recipe, depth))
    return out


def _mean_seen(tm: TenantMemory, mask: np.ndarray) -> np.ndarray:
    """Mean vector of the notes a search sees: exact on a small tenant, where the few notes a mask hides
    (the update itself, for an `as_of` question) would move it; past MEAN_EXACT_SLOTS the index's kept
    mean of every live note, which the hidden share barely moves and which costs nothing to read."""
    if tm.index.num_slots > MEAN_EXACT_SLOTS:
        return tm.index.centroid()
    return tm.index.mean_of(mask)


def centred(query_vecs: np.ndarray, mean: np.ndarray, share: float) -> np.ndarray:
    """The queries less `share` x the tenant's mean vector, unit length again (a query that is the mean
    itself stays as it was). Ranking by `(q - a * mean) . d` favours notes that match this query more
    than they match the tenant at large: WordLlama places short chit-chat near every question."""
    if len(query_vecs) == 0:
        return query_vecs
    out = query_vecs - np.float32(share) * mean[None, :]
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return np.where(norms > 1e-6, out / np.maximum(norms, 1e-6), query_vecs).astype(np.float32)


def _rank(
    tm: TenantMemory,
    view: TenantView,
    info: QueryInfo,
    query_vec: np.ndarray,
    dense_hits: list[tuple[int, float]],
    lexical: SparseScores | None,
    mask: np.ndarray,
    recipe: Recipe,
    depth: int,
) -> tuple[np.ndarray, np.ndarray]:
    union = {s for s, _ in dense_hits}
    if lexical is not None:
        union.update(int(s) for s in lexical.top(depth))
    if not union:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    ranker = Ranker(tm, view, info, query_vec, lexical, mask, recipe.lexical_weight, recipe.levers, depth)
    slots, fused = ranker.rank(np.fromiter(union, dtype=np.int64))
    if recipe.recency_half_life_days:
        fused = fused * _recency(tm, slots, recipe)
    order = np.argsort(-fused, kind="stable")[: recipe.k]
    return slots[order], fused[order]


def expand(tm: TenantMemory, hits: list[Hit], mask: np.ndarray, recipe: Recipe) -> list[Hit]:
    """The hits and their linked notes, best first, at most k.

    A linked note is decoded, and a backlink's reason read from its source, only if it stays: a hub note
    has thousands of backlinks and one search cannot decode them all."""
    seen = {h.note.id for h in hits}
    best = hits[0].score
    joined: list[tuple[float, int, Hit, str | None]] = []  # (score, slot, parent, reason or None: a backlink)
    for hit in hits:
        if hit.score < recipe.expand_min_score * best:
            break
        for slot, reason in _links_of(tm, hit.note):
            other_id = tm.index.ids[slot]
            if other_id is None or other_id in seen or not mask[slot]:
                continue
            seen.add(other_id)
            joined.append((hit.score * recipe.expand_decay, slot, hit, reason))
    ranked: list[Hit | tuple[float, int, Hit, str | None]] = [*hits, *joined]
    ranked.sort(key=lambda h: -(h.score if isinstance(h, Hit) else h[0]))  # stable: hits before links
    return [h if isinstance(h, Hit) else _linked(tm, *h) for h in ranked[: recipe.k]]


def _links_of(tm: TenantMemory, note: Note) -> list[tuple[int, str | None]]:
    """(slot, reason) of the notes `note` links to, then (slot, None) of those linking to it."""
    out: list[tuple[int, str | None]] = [
        (slot, link.reason) for link in note.links if (slot := tm.index.slot_of.get(link.target)) is not None
    ]
    out.extend((source, None) for source in tm.backlinks_of(tm.index.slot_of[note.id]))
    return out


def _linked(tm: TenantMemory, score: float, slot: int, parent: Hit, reason: str | None) -> Hit:
    note = tm.notes.at(slot)
    if reason is None:  # a backlink: the reason is on the source's link to the parent
        reason = next((link.reason for link in note.links if link.target == parent.note.id), "")
    return Hit(note, score, via=f"linked from {parent.note.id}: {reason}")


def _recency(tm: TenantMemory, slots: np.ndarray, recipe: Recipe) -> np.ndarray:
    ref = (recipe.as_of or utcnow()).timestamp()
    ages = ref - tm.notes.timestamp[np.asarray(slots, dtype=np.int64)]
    return np.power(0.5, np.clip(ages, 0, None) / (86400 * recipe.recency_half_life_days))  # type: ignore[operator]


def _valid(hit: Hit, as_of: datetime | None) -> bool:
    return hit.note.is_current if as_of is None else hit.note.is_valid_at(as_of)
