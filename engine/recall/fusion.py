"""Fusion: one score per candidate from its dense (cosine) and lexical (BM25) scores.

- minmax: dense min-max normalised over the candidate union, lexical divided by its best score (BM25 has a
  natural zero, no query word; min-max would stretch near-ties, such as a name every turn of a speaker
  carries, over the whole range), `(1 - w) * dense + w * lexical`;
- rrf: reciprocal-rank fusion, `(1 - w) / (c + rank_dense) + w / (c + rank_lexical)` (Cormack et al.,
  2009, c = 60), rescaled so the best candidate scores 1; a candidate absent from a list gets no share;
- zscore: each list standardised over the union (mean 0, sd 1), then weighted like minmax and min-max
  rescaled to [0, 1]: outliers keep their margin instead of being squashed to 1.
The boosts and later rounds add to these scores, so all three end on a [0, 1] scale.
"""

from __future__ import annotations

import numpy as np

RRF_C = 60.0


def fuse_scores(dense: np.ndarray, lexical: np.ndarray | None, w: float, how: str) -> np.ndarray:
    """Fused score of every candidate; `lexical` None (or w = 0) means dense only."""
    if lexical is None or w <= 0:
        return minmax(dense)
    if how == "rrf":
        return rrf(dense, lexical, w)
    if how == "zscore":
        return minmax((1 - w) * zscore(dense) + w * zscore(lexical))
    if how != "minmax":
        raise ValueError(f"unknown fusion {how!r}")
    return (1 - w) * minmax(dense) + w * to_best(lexical)


def minmax(x: np.ndarray) -> np.ndarray:
    lo, hi = float(x.min()), float(x.max())
    return np.ones_like(x) if hi - lo < 1e-9 else (x - lo) / (hi - lo)


def to_best(x: np.ndarray) -> np.ndarray:
    """Scores as a share of the best (all 0 when nothing scores): for lists whose zero means 'no match'."""
    hi = float(x.max())
    return x / hi if hi > 0 else np.zeros_like(x)


def zscore(x: np.ndarray) -> np.ndarray:
    sd = float(x.std())
    return np.zeros_like(x) if sd < 1e-9 else (x - float(x.mean())) / sd


def ranks(x: np.ndarray) -> np.ndarray:
    """1-based rank of each score, best first (ties keep input order)."""
    out = np.empty(len(x), dtype=np.float64)
    out[np.argsort(-x, kind="stable")] = np.arange(1, len(x) + 1)
    return out


def rrf(dense: np.ndarray, lexical: np.ndarray, w: float) -> np.ndarray:
    score = (1 - w) / (RRF_C + ranks(dense)) + np.where(lexical > 0, w / (RRF_C + ranks(lexical)), 0.0)
    top = float(score.max())
    return score / top if top > 0 else score
