"""The two FAISS stores behind VectorIndex, each holding one row per slot (node id == slot).

- exact: IndexFlatIP; rows overwritten in place.
- ann:   IndexHNSWFlat (inner product). New slots join the graph through `add`; a re-embedded note's
         row is overwritten in place, keeping its edges: evolution moves a note a little, and the
         graph still routes to it. Rows written far from where they were linked (a freed slot reused,
         a large drift) are stale: searched exactly beside the graph (`merge`) until they pass a
         share of it and the graph is rebuilt.

HNSW over IVF by measurement (bench/index_tiers.py, docs/index-tiers.md): on WordLlama chat embeddings IVF
needs a quarter to half of the lists probed for recall@10 >= 0.95, HNSW gets 0.97 at ef=128 in < 1 ms.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

import faiss
import numpy as np

from engine.config import IndexConfig

EXACT = "exact"
ANN = "ann"


def new_store(kind: str, dim: int, config: IndexConfig) -> faiss.Index:
    if kind == EXACT:
        return faiss.IndexFlatIP(dim)
    hnsw = faiss.IndexHNSWFlat(dim, config.ann_m, faiss.METRIC_INNER_PRODUCT)
    hnsw.hnsw.efConstruction = config.ann_ef_construction
    hnsw.hnsw.efSearch = config.ann_ef_search
    return hnsw


@contextmanager
def one_thread() -> Iterator[None]:
    """FAISS on one OpenMP thread in this thread (the setting is per calling thread): a single query
    over a flat store ran 1.3-6x slower on two threads than on one (waking the second costs more than
    it saves), ~1.1 ms of a 3.7 ms search on a 10k-note tenant (bench/service.py's in-process figure)."""
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)


ROOM = 1.5
"""`with_room` makes room for this many times the rows the graph holds (and at least those asked for)."""


def with_room(store: faiss.Index, rows: int) -> faiss.Index:
    """A copy of an HNSW store whose arrays take `rows` more rows without moving. FAISS grows them by
    reallocating as it inserts, which copies the whole graph under the insert: the first insert after a
    tenant opens (its arrays exactly full) held every search 0.48 s at 428k notes. Copying outside it
    costs the same once, and searches go on reading the original meanwhile."""
    copy: Any = faiss.clone_index(store)
    hnsw, flat = copy.hnsw, cast(Any, faiss.downcast_index(copy.storage))
    per_node = hnsw.neighbors.size() // max(1, copy.ntotal) + 1
    arrays = [(flat.codes, flat.code_size), (hnsw.neighbors, per_node), (hnsw.levels, 1), (hnsw.offsets, 1)]
    for array, per_row in arrays:
        size = array.size()
        array.resize(size + rows * per_row)  # a vector shrunk again keeps what it reserved
        array.resize(size)
    return copy


def kind_of(store: faiss.Index) -> str:
    return ANN if isinstance(store, faiss.IndexHNSWFlat) else EXACT


def rows_view(store: faiss.Index, dim: int) -> np.ndarray:
    """A writable numpy view of the store's vectors (re-take it after every add: storage may move)."""
    flat: Any = faiss.downcast_index(store.storage) if isinstance(store, faiss.IndexHNSW) else store
    if flat.ntotal == 0:
        return np.zeros((0, dim), dtype=np.float32)
    return faiss.rev_swig_ptr(flat.get_xb(), flat.ntotal * dim).reshape(-1, dim)


def rebuild(kind: str, rows: np.ndarray, config: IndexConfig) -> faiss.Index:
    """A fresh store of `kind` holding `rows` at the same slots."""
    store = new_store(kind, rows.shape[1], config)
    if len(rows):
        store.add(np.ascontiguousarray(rows, dtype=np.float32))
    return store


def selector(allowed: np.ndarray, bitmap: np.ndarray | None = None) -> tuple[faiss.IDSelector, np.ndarray]:
    """An ID selector over slots (`bitmap`: `allowed` packed already); the bitmap is returned too because
    FAISS does not own it."""
    bitmap = np.packbits(allowed, bitorder="little") if bitmap is None else bitmap
    return faiss.IDSelectorBitmap(len(allowed), faiss.swig_ptr(bitmap)), bitmap


def search_ann(
    store: faiss.Index,
    queries: np.ndarray,
    k: int,
    allowed: np.ndarray,
    n_allowed: int,
    ef: int,
    packed: list[np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """HNSW search filtered inside FAISS. A mask allowing a share f of the nodes widens the beam to
    ef / sqrt(f) (capped), which keeps recall where a fixed beam would run out of allowed candidates.
    On bench/scale.py's 1M tenant (beam 512, recall@10 0.96 unmasked) it keeps recall at 0.97-0.99 for
    f = 0.1-0.75 (held-out queries; docs/scale.md, round 7); ef / f bought 0.99+ at up to twice the time.
    `packed`: a holder of the mask's bitmap, filled on first use, for a caller that searches it again."""
    if n_allowed == len(allowed):
        params = faiss.SearchParametersHNSW(  # type: ignore[attr-defined]
            efSearch=max(ef, k)
        )
        return store.search(queries, k, params=params)
    share = n_allowed / max(1, len(allowed))
    if packed is not None and not packed:  # two threads may both pack: the same bits, either is kept
        packed.append(np.packbits(allowed, bitorder="little"))
    sel, bitmap = selector(allowed, packed[0] if packed else None)
    beam = int(min(max(ef, k) / math.sqrt(max(share, 1e-6)), _MAX_BEAM))
    params = faiss.SearchParametersHNSW(  # type: ignore[attr-defined]
        sel=sel, efSearch=max(beam, k)
    )
    out = store.search(queries, k, params=params)
    del bitmap  # kept alive until the search returned
    return out


_MAX_BEAM = 2048


def exact_rows(
    store: faiss.Index, queries: np.ndarray, k: int, allowed: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k over just the allowed rows: a scan of the store's flat rows behind an ID selector,
    which computes a dot product only for allowed rows (no gather, no BLAS thread start-up)."""
    flat = faiss.downcast_index(store.storage) if isinstance(store, faiss.IndexHNSW) else store
    sel, bitmap = selector(allowed)
    out = flat.search(queries, k, params=faiss.SearchParameters(sel=sel))  # type: ignore[call-arg]
    del bitmap  # alive until FAISS returned
    return out


def merge(
    graph: tuple[np.ndarray, np.ndarray], exact: tuple[np.ndarray, np.ndarray], stale: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Top-k of the graph's hits and an exact search over the stale rows (which the exact half owns)."""
    g_scores, g_slots = graph
    g_scores = np.where((g_slots >= 0) & ~stale[np.maximum(g_slots, 0)], g_scores, -np.inf)
    scores = np.concatenate([g_scores, exact[0]], axis=1)
    slots = np.concatenate([g_slots, exact[1]], axis=1)
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    scores, slots = np.take_along_axis(scores, order, axis=1), np.take_along_axis(slots, order, axis=1)
    return scores, np.where(np.isfinite(scores), slots, -1)
