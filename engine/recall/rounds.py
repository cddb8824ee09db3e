"""Ranking on top of "dense candidates + lexical candidates with scores": fusion, boosts, more rounds.

1. fuse (engine.recall.fusion) and add the query-side boosts (engine.recall.boosts);
2. session neighbours: the turns just before/after the top hits join the pool, and every candidate
   gains `neighbour_weight` x the best score among its neighbours (the answer to a question that
   matched is usually the next turn);
3. second round (multi-hop): the keywords of the first round's top hits become a lexical query, the
   mean of their vectors a dense one (Rocchio); that round's fused score, x `second_round_weight`,
   adds to the first, so a note reachable only through an entity of a top hit can join.
BM25 pseudo-relevance feedback (`lexical_scores`) adds `prf_weight` x the scores of the top lexical
hits' keywords to the query's own lexical scores before any of this (`prf_content_seeds`, on by
default: seeds picked without the query's names, feedback scaled to the seeds' score); MiniLM re-scoring
(engine.recall.rescore, opt-in) comes after all of it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.config import RecallConfig
from engine.recall.boosts import boost
from engine.recall.fusion import fuse_scores
from engine.recall.query import QueryInfo
from engine.recall.rescore import rescore
from engine.recall.sparse import SparseScores
from engine.recall.view import TenantView
from engine.state.tenant_state import TenantMemory
from engine.text import terms

SEEDS = 3
"""Top hits whose keywords seed the second round and pseudo-relevance feedback."""
SEED_KEYWORDS = 6
PRF_TERMS = 8
"""Most expansion terms pseudo-relevance feedback adds (each costs one posting-list scan)."""
PRF_SCORED = 256
"""Matches the feedback query scores: its terms are the seeds' keywords, common words whose long posting
lists made it the costliest search of a query at 1,024 (3.2 ms against 1.9 at 100k notes); a candidate
below the 256th feedback match gains at most prf_weight x that small score. LoCoMo dev recall is the same
(docs/scale.md)."""
PRF_COMMON = 0.02
"""Feedback leaves out a keyword all of whose terms are in more than this share of the tenant's notes (and
in more than PRF_COMMON_MIN): its BM25 weight is small (IDF ~3.9 at 2%, ~14 for a word in one note of 1M)
while its posting list is the feedback's whole cost. At 1M synthetic chat notes, eight such keywords
(each in 10-15% of the notes) took 15 ms of a 24 ms search. A conversation-sized tenant never reaches the
bar, so LoCoMo and the fact scenarios rank as before."""
PRF_COMMON_MIN = 1_000
NEIGHBOUR_SEEDS = 10
"""Top hits whose session neighbours join the pool."""


@dataclass(slots=True)
class Ranker:
    tm: TenantMemory
    view: TenantView
    query: QueryInfo
    query_vec: np.ndarray
    lexical: SparseScores | None
    """Lexical scores of the visible matches (any other slot reads 0), or None when the lexical weight is 0."""
    mask: np.ndarray
    weight: float
    config: RecallConfig
    depth: int

    def rank(self, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        neighbours = self.config.neighbour_weight > 0 and len(slots) > 0
        if neighbours:
            slots = self.with_neighbours(slots)
        scores = self.score(slots)
        if neighbours:
            scores = scores + self.config.neighbour_weight * self.best_neighbour(slots, scores)
        if self.config.second_round_weight > 0 and len(slots):
            slots, scores = self.second_round(slots, scores)
        if self.config.rescore_weight > 0:
            scores = rescore(
                self.tm, self.query.text, slots, scores, self.config.rescore_weight, self.config.rescore_depth
            )
        return slots, scores

    def score(self, slots: np.ndarray) -> np.ndarray:
        dense = self.tm.index.vectors(slots) @ self.query_vec
        lexical = None if self.lexical is None else self.lexical.at(slots)
        fused = fuse_scores(dense, lexical, self.weight, self.config.fusion)
        return boost(self.tm, self.view, slots, fused, self.query, self.config)

    def with_neighbours(self, slots: np.ndarray) -> np.ndarray:
        """The candidates plus the session neighbours of the best few by dense and by lexical score."""
        half = NEIGHBOUR_SEEDS // 2
        top = [slots[np.argsort(-(self.tm.index.vectors(slots) @ self.query_vec), kind="stable")[:half]]]
        if self.lexical is not None:
            top.append(slots[np.argsort(-self.lexical.at(slots), kind="stable")[:half]])
        window = self.config.neighbour_window
        extra = self.view.neighbours(np.concatenate(top), self.config.neighbour_gap_s, window).ravel()
        extra = extra[extra >= 0]
        return np.union1d(slots, extra[self.mask[extra]])

    def best_neighbour(self, slots: np.ndarray, scores: np.ndarray) -> np.ndarray:
        """Each candidate's best neighbouring candidate's score, / its distance in turns (0 without one)."""
        window = self.config.neighbour_window
        near = SparseScores.of(slots, scores).at(
            self.view.neighbours(slots, self.config.neighbour_gap_s, window)
        )
        return (near / np.repeat(np.arange(1, window + 1), 2)).max(axis=1)

    def second_round(self, slots: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        seeds = slots[np.argsort(-scores, kind="stable")[:SEEDS]]
        vec = self.tm.index.vectors(seeds).mean(axis=0)
        vec /= max(float(np.linalg.norm(vec)), 1e-9)
        dense_top = self.tm.index.search(vec[None, :], self.depth, self.mask)[0]
        pool = {s for s, _ in dense_top} | set(slots.tolist())
        lexical, text = None, self.seed_text(seeds)
        if self.lexical is not None and text:
            lexical = bm25(self.tm, text, self.mask)
            pool.update(int(s) for s in lexical.top(self.depth))
        merged = np.fromiter(sorted(pool), dtype=np.int64)
        dense2 = self.tm.index.vectors(merged) @ vec
        lexical2 = None if lexical is None else lexical.at(merged)
        second = fuse_scores(dense2, lexical2, self.weight, self.config.fusion)
        second[np.isin(merged, seeds)] = 0  # the seeds match their own keywords best: no reward for that
        first = dict(zip(slots.tolist(), scores.tolist(), strict=True))
        base = np.array([first.get(int(s), 0.0) for s in merged])
        return merged, base + self.config.second_round_weight * second

    def seed_text(self, seeds: np.ndarray) -> str:
        """Keywords of the seed notes that the query does not already have."""
        have = set(terms(self.query.text))
        words: dict[str, None] = {}
        for slot in seeds:
            note = self.tm.notes[self.tm.index.ids[int(slot)]]  # type: ignore[index]
            for word in note.keywords[:SEED_KEYWORDS]:
                if not set(terms(word)) <= have:
                    words.setdefault(word)
        return " ".join(words)


def lexical_scores(
    tm: TenantMemory, query: QueryInfo, mask: np.ndarray, prf_weight: float, content_seeds: bool = False
) -> SparseScores:
    """BM25 of the visible matches; with prf_weight, plus that x BM25 of the seed hits' new keywords.

    content_seeds (RecallConfig.prf_content_seeds): pick the seeds by the query without the participants
    it names, since a name alone ties every turn of that speaker ("What is Rachel's job title?") and makes
    arbitrary chit-chat the seeds, which its own keywords then lift; no feedback when no turn matches the
    rest; and scale the feedback to the seeds' best score, so the many common expansion terms refine the
    query's ranking instead of outscoring it.
    """
    out = bm25(tm, query.lexical, mask)
    if prf_weight <= 0 or out.max() <= 0:
        return out
    # Without a named participant the content query is the lexical one: its scores are `out`.
    by = bm25(tm, query.content, mask) if content_seeds and query.content != query.lexical else out
    seeds = [int(s) for s in by.top(SEEDS)]
    extra = bm25(tm, _new_keywords(tm, seeds, query.lexical), mask, PRF_SCORED)
    if content_seeds and extra.max() > 0:
        extra = extra.scaled(float(by.at(np.array(seeds, dtype=np.int64)).max()) / extra.max())
    return out.plus(extra, prf_weight)


def bm25(tm: TenantMemory, text: str, mask: np.ndarray, limit: int | None = None) -> SparseScores:
    """BM25 of the visible slots among the lexical index's best `limit` matches for `text`."""
    if not text:
        return SparseScores.empty()
    slots, scores = tm.lexical.matches(text, limit)
    keep = slots < tm.index.num_slots
    return SparseScores.of(slots[keep], scores[keep], mask)


def _new_keywords(tm: TenantMemory, seeds: list[int], query: str) -> str:
    """The seeds' keywords the query does not already have, at most PRF_TERMS."""
    have = set(terms(query))
    bar = max(PRF_COMMON_MIN, PRF_COMMON * len(tm))
    words: dict[str, None] = {}
    for s in seeds:
        for w in tm.notes[tm.index.ids[s]].keywords[:SEED_KEYWORDS]:  # type: ignore[index]
            fresh = set(terms(w)) - have
            if fresh and (len(tm) <= bar or any(tm.lexical.doc_freq(t) <= bar for t in fresh)):
                words.setdefault(w)
    return " ".join(list(words)[:PRF_TERMS])
