"""The query path keeps per-query work to the candidates (sparse BM25 lists, cached masks, notes decoded
only for results); this pins that it ranks exactly as the straightforward version over whole-tenant
arrays: same ids, same scores, default settings and `as_of`, with the BM25 lists truncated as at scale
(the feedback list at PRF_SCORED: the 900-note tenant has more matches)."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from bench.synthetic import chat
from engine import Memory
from engine.model.note import Hit
from engine.recall.boosts import boost
from engine.recall.fusion import fuse_scores
from engine.recall.query import analyse
from engine.recall.rounds import PRF_SCORED, SEEDS, _new_keywords
from engine.recall.search import Recipe, search
from engine.recall.sparse import SparseScores
from engine.recall.view import view_of
from engine.state import lexical
from engine.state.tenant_state import TenantMemory

QUERIES = [
    "repaired a rusty bicycle",
    "When did Maya visit Kyoto?",
    "what did Leo buy in Oslo last week",
    "vintage piano",
    "Priya kayak",
    "telescope over the holidays",
]


def dense_bm25(tm: TenantMemory, text: str, mask: np.ndarray, limit: int | None = None) -> np.ndarray:
    out = np.zeros(tm.index.num_slots, dtype=np.float32)
    if text:
        slots, scores = tm.lexical.matches(text, limit)
        out[slots] = scores
    out[~mask] = 0
    return out


def reference(
    tm: TenantMemory, vec: np.ndarray, query: str, recipe: Recipe
) -> list[tuple[str, float, str | None]]:
    """The default levers over arrays as long as the tenant (stable sorts: ties go to the lower slot)."""
    cfg, k, w = recipe.levers, recipe.k, recipe.lexical_weight
    mask, depth, view = tm.mask(recipe.as_of), max(50, 4 * k), view_of(tm)
    info = analyse(query, view.participants, cfg.strip_names)
    vec = vec - cfg.center_queries * tm.index.vectors(np.flatnonzero(mask)).mean(axis=0)  # a small tenant
    vec = (vec / np.linalg.norm(vec)).astype(np.float32)
    lex = dense_bm25(tm, info.lexical, mask)
    if lex.max() > 0:
        by = dense_bm25(tm, info.content, mask) if cfg.prf_content_seeds else lex
        seeds = [int(s) for s in np.argsort(-by, kind="stable")[:SEEDS] if by[s] > 0]
        extra = dense_bm25(tm, _new_keywords(tm, seeds, info.lexical), mask, PRF_SCORED)
        if cfg.prf_content_seeds and extra.max() > 0:
            extra = extra * (float(by[seeds].max()) / float(extra.max()))
        lex = lex + cfg.prf_weight * extra
    union = {s for s, _ in tm.index.search(vec[None, :], depth, mask)[0]}
    union.update(int(s) for s in np.argsort(-lex, kind="stable")[:depth] if lex[s] > 0)
    slots = np.fromiter(union, dtype=np.int64)
    cos = tm.index.vectors(slots) @ vec
    top = [slots[np.argsort(-x, kind="stable")[:5]] for x in (cos, lex[slots])]
    extra = view.neighbours(np.concatenate(top), cfg.neighbour_gap_s, cfg.neighbour_window).ravel()
    slots = np.union1d(slots, extra[(extra >= 0) & mask[extra]])
    fused = fuse_scores(tm.index.vectors(slots) @ vec, lex[slots], w, cfg.fusion)
    scores = boost(tm, view, slots, fused, info, cfg)
    by_slot = np.zeros(tm.index.num_slots + 1)
    by_slot[slots] = scores
    near = by_slot[view.neighbours(slots, cfg.neighbour_gap_s, cfg.neighbour_window)]
    scores = scores + cfg.neighbour_weight * (
        near / np.repeat(np.arange(1, cfg.neighbour_window + 1), 2)
    ).max(1)
    order = np.argsort(-scores, kind="stable")[:k]
    hits = [(tm.index.ids[s], float(c), None) for s, c in zip(slots[order], scores[order], strict=True)]
    joined, seen = [], {h[0] for h in hits}
    for note_id, score, _ in hits:
        if score < recipe.expand_min_score * hits[0][1]:
            break
        for other, reason in tm.neighbours_of(note_id):  # type: ignore[arg-type]
            slot = tm.index.slot_of.get(other)
            if other not in seen and slot is not None and mask[slot]:
                seen.add(other)
                joined.append((other, score * recipe.expand_decay, f"linked from {note_id}: {reason}"))
    return sorted(hits + joined, key=lambda h: -h[1])[:k]  # type: ignore[return-value]


@pytest.fixture(scope="module")
def memory(encoder) -> Memory:
    mem = Memory(encoder=encoder)
    mem.add_many(chat(900, seed=5), tenant="t")
    return mem


@pytest.mark.parametrize("scored", [lexical.SCORED, 40])
@pytest.mark.parametrize("as_of", [None, datetime.fromtimestamp(1_700_000_000 + 450 * 420, UTC)])
def test_search_ranks_as_the_whole_tenant_reference(
    memory: Memory, monkeypatch: pytest.MonkeyPatch, scored: int, as_of: datetime | None
) -> None:
    monkeypatch.setattr(lexical, "SCORED", scored)  # 40: most queries match more notes than are scored
    assert memory.config.recall.second_round_weight == 0 and memory.config.recall.rescore_weight == 0
    with memory._pool.use("t") as t:
        tm = t.state
        for query in QUERIES:
            vec = memory.encoder.encode_batch([query])[0]
            recipe = Recipe.from_config(memory.config, 10, as_of)
            got: list[Hit] = search(tm, vec, query, recipe)
            want = reference(tm, vec, query, recipe)
            assert [(h.note.id, h.via) for h in got] == [(i, via) for i, _, via in want]
            # 1e-6: the engine sums the mean vector in one product, the reference row by row (float32)
            np.testing.assert_allclose([h.score for h in got], [s for _, s, _ in want], rtol=0, atol=1e-6)
            assert all(h.is_superseded == (not tm.mask(as_of)[tm.index.slot_of[h.note.id]]) for h in got)


def test_sparse_top_and_lookup_match_dense_arrays() -> None:
    rng = np.random.default_rng(0)
    n = 500
    dense = np.zeros(n, dtype=np.float32)
    picked = rng.choice(n, 120, replace=False)
    dense[picked] = rng.integers(0, 6, 120).astype(np.float32) / 2  # many ties, some zeros
    mask = rng.random(n) < 0.7
    sparse = SparseScores.of(picked, dense[picked], mask)
    dense[~mask] = 0
    for depth in (1, 3, 10, 50, 200):
        want = [s for s in np.argsort(-dense, kind="stable")[:depth] if dense[s] > 0]
        assert sparse.top(depth).tolist() == want
    probe = rng.integers(0, n, 300)
    np.testing.assert_array_equal(sparse.at(probe), dense[probe])
    other = SparseScores.of(picked[:60], np.ones(60, dtype=np.float32))
    both = np.zeros(n, dtype=np.float32)
    both[picked[:60]] = 1
    np.testing.assert_array_equal(sparse.plus(other, 0.3).at(np.arange(n)), dense + 0.3 * both)
    assert SparseScores.empty().top(5).size == 0 and SparseScores.empty().max() == 0.0
