"""Per-tenant vector index: slot-addressed, updated in place, filtered by a slot mask, in two tiers.

Every note owns a slot. Adding fills a free slot or appends; re-embedding an evolved note overwrites
its row where it lies (O(dim), never a rebuild); removing zeroes the row and frees the slot. Search
takes a boolean mask over slots (live, valid now / as of t) and returns (note id, cosine).

Tiers (engine/state/ann.py; sizes in Config.index): an exact FAISS IndexFlatIP for small tenants; from
`ann_min_notes` notes an HNSW graph over the same rows (slot == node id, so slots, ids and masks carry
over unchanged); back to exact below half of that. A mask is applied inside FAISS (IDSelectorBitmap);
one allowing at most `ann_exact_max` notes is searched exactly over just those rows. New rows join the
graph on a worker thread while the caller goes on (engine/state/graph_add.py): a search meanwhile reads
the graph as far as they got and the rest exactly; other reads and writes wait for them. On a CUDA
machine a torch mirror of the rows on the GPU is searched exactly (engine/state/gpu_index.py).
"""

from __future__ import annotations

import threading
import time
from contextlib import nullcontext
from pathlib import Path

import faiss
import numpy as np

from engine.config import IndexConfig
from engine.errors import NotFound
from engine.state import ann
from engine.state.gpu_index import TorchMirror
from engine.state.graph_add import GraphAdd, exact_topk


class VectorIndex:
    def __init__(
        self,
        dim: int,
        use_cuda: bool = False,
        *,
        torch_device: str | None = None,
        config: IndexConfig | None = None,
    ) -> None:
        """`use_cuda` searches a mirror on the GPU; `torch_device` names another torch device for it."""
        self.dim = dim
        self.config = config or IndexConfig()
        self._store: faiss.Index = ann.new_store(ann.EXACT, dim, self.config)
        self._view = np.zeros((0, dim), dtype=np.float32)
        self.ids: list[str | None] = []
        self.slot_of: dict[str, int] = {}
        self._free: list[int] = []
        self.live = np.zeros(0, dtype=bool)
        self._live_version = 0
        """Moves with every change of `live`: keys `_masked`."""
        self._masked: tuple[np.ndarray, int, np.ndarray, int, list[np.ndarray]] | None = None
        """The last read-only mask searched with: (mask, live version, live & mask, its count, [bitmap])."""
        self._stale: set[int] = set()
        """ANN-tier slots whose row moved far from where the graph linked it: searched exactly too."""
        self._adds = GraphAdd(dim)
        """New rows joining the HNSW graph on a worker thread (_grow; engine/state/graph_add.py)."""
        self._settling = threading.Lock()
        self._room = 0
        """Rows the HNSW store takes without moving (`make_room`)."""
        self._roomy: faiss.Index | None = None
        """A copy of the store with more room, taken by the next write (`_take_room`)."""
        self._sum: np.ndarray | None = None
        """Sum of the live rows (float64), kept by every write from the first `_total()` on; None until then."""
        device = torch_device or ("cuda" if use_cuda else None)
        self._gpu = TorchMirror(dim, device) if device else None

    def __len__(self) -> int:
        return len(self.slot_of)

    @property
    def num_slots(self) -> int:
        return len(self.ids)

    @property
    def tier(self) -> str:
        """ "exact" or "ann"."""
        return ann.kind_of(self._store)

    # --- writes ---------------------------------------------------------------
    def make_room(self, rows: int) -> None:
        """Before a write that may add `rows` slots, with the tenant's lock released: give the graph room
        for them (and more, see ann.ROOM) in a copy, which the write takes, so that their insert does not
        move the graph while searches wait for it. Nothing but this index's writes changes the store."""
        if self.tier != ann.ANN or self._gpu or self.num_slots + rows <= self._room:
            return
        self._settle()  # a running insert writes the store being copied
        need = max(rows, int(self.num_slots * (ann.ROOM - 1)))
        self._roomy, self._room = ann.with_room(self._store, need), self.num_slots + need

    def _take_room(self) -> None:
        if self._roomy is not None:
            self._store, self._roomy = self._roomy, None
            self._view = ann.rows_view(self._store, self.dim)

    def upsert(self, ids: list[str], vectors: np.ndarray) -> list[int]:
        """Insert new ids, overwrite the rows of known ids in place. Returns the slot of each id."""
        self._settle()
        self._take_room()
        vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(ids), self.dim)
        latest = dict(zip(ids, range(len(ids)), strict=True))  # a repeated id: its last vector wins
        slots: dict[str, int | None] = {i: self.slot_of.get(i) for i in latest}
        reused = set()
        for note_id, slot in slots.items():
            if slot is None and self._free:
                slots[note_id] = self._free.pop()
                reused.add(note_id)
        missing = [i for i, s in slots.items() if s is None]
        for note_id, row in latest.items():
            if (slot := slots[note_id]) is not None:  # rows in place first: _grow may start a background add
                self._write(slot, note_id, vectors[row], note_id in reused)
        if missing:
            first = self._grow(vectors[[latest[i] for i in missing]])
            for off, note_id in enumerate(missing):
                slots[note_id] = first + off
                self._claim(first + off, note_id)
        fresh = set(missing)  # _grow already copied their rows to the device
        rewritten = [i for i in latest if i not in fresh]
        if self._gpu and rewritten:  # one copy to the device: a copy per row waits on the device each time
            self._gpu.write_many(
                np.array([slots[i] for i in rewritten]), vectors[[latest[i] for i in rewritten]]
            )
        self._retier()
        return [slots[i] for i in ids]  # type: ignore[misc]

    def _write(self, slot: int, note_id: str, vec: np.ndarray, reused: bool) -> None:
        if self.tier == ann.ANN and (reused or float(self._view[slot] @ vec) < _DRIFT_COSINE):
            self._stale.add(slot)  # its graph edges were chosen for another place
        if self._sum is not None:
            self._sum += vec - self._view[slot]  # a freed slot's row is zero
        self._view[slot] = vec
        self._claim(slot, note_id)

    def _claim(self, slot: int, note_id: str) -> None:
        self.ids[slot] = note_id
        self.slot_of[note_id] = slot
        self.live[slot] = True
        self._live_version += 1

    def _grow(self, block: np.ndarray) -> int:
        """Append rows for new slots; returns the first slot. In the ann tier the rows join the HNSW
        graph on a background thread (FAISS releases the GIL): at 1M notes that insert is ~1/5 of a
        batch's time, and it overlaps the next batch's annotate + encode. Every read settles it first."""
        first = len(self.ids)
        self.ids.extend([None] * len(block))
        self.live = np.concatenate([self.live, np.zeros(len(block), dtype=bool)])
        self._live_version += 1
        if self._sum is not None:
            self._sum += block.sum(axis=0, dtype=np.float64)
        if self._gpu:
            self._gpu.append(block)
        if self.tier == ann.ANN:
            self._adds.start(self._store, first, block)
        else:
            self._store.add(block)
            self._view = ann.rows_view(self._store, self.dim)  # add() may move FAISS storage
        return first

    def _settle(self) -> None:
        """Wait for a background add and re-take the row view (the add may have moved the storage). A
        failed add stays raised on every later access: the index no longer matches its slots."""
        with self._settling:
            if self._adds.wait():
                self._view = ann.rows_view(self._store, self.dim)

    def remove(self, ids: list[str]) -> None:
        self._settle()
        self._take_room()
        for note_id in ids:
            slot = self.slot_of.pop(note_id, None)
            if slot is None:
                continue
            if self._sum is not None:
                self._sum -= self._view[slot]
            self._view[slot] = 0.0
            self.ids[slot] = None
            self.live[slot] = False
            self._live_version += 1
            self._free.append(slot)
            if self._gpu:
                self._gpu.write(slot, self._view[slot])
        self._retier()

    # --- tiers ----------------------------------------------------------------
    def _retier(self) -> None:
        """Move between tiers at the configured size; rebuild a graph grown stale. Slots never move.
        With a GPU mirror every search runs there, exactly, so the host copy stays flat: a graph would
        cost each insert and never be searched."""
        n, threshold = len(self), self.config.ann_min_notes
        if self._gpu is not None:
            if self.tier == ann.ANN:  # e.g. an index saved on a machine without a GPU
                self._rebuild(ann.EXACT)
            return
        if self.tier == ann.EXACT and n >= threshold:
            self._rebuild(ann.ANN)
        elif self.tier == ann.ANN and n < threshold // 2:
            self._rebuild(ann.EXACT)
        elif self.tier == ann.ANN and len(self._stale) > self.config.ann_stale_fraction * self.num_slots:
            self._rebuild(ann.ANN)

    def _rebuild(self, kind: str) -> None:
        self._settle()
        self._take_room()
        self._store, self._room = ann.rebuild(kind, self._view, self.config), 0
        self._view = ann.rows_view(self._store, self.dim)
        self._stale = set()

    # --- reads ----------------------------------------------------------------
    def centroid(self) -> np.ndarray:
        """Mean of the live rows (zeros when empty): one read of a kept sum."""
        return (self._total() / max(1, len(self))).astype(np.float32)

    def mean_of(self, mask: np.ndarray) -> np.ndarray:
        """Mean of the live rows `mask` allows, exactly: the kept sum less the rows it hides, or the sum of
        the rows it allows, whichever reads fewer rows (meant for small indexes: `centroid` for big ones).
        numpy sums, not a matrix product: BLAS threads beside a search's lexical thread doubled its p99."""
        allowed = mask[: self.num_slots] & self.live
        count = int(allowed.sum())
        if not count:
            return np.zeros(self.dim, dtype=np.float32)
        hidden = np.flatnonzero(self.live & ~mask[: self.num_slots])
        if len(hidden) < count:  # usually: a few retired notes, or the turns after an `as_of`
            total = self._total() - self.vectors(hidden).sum(axis=0, dtype=np.float64)
        else:
            total = self.vectors(np.flatnonzero(allowed)).sum(axis=0, dtype=np.float64)
        return (total / count).astype(np.float32)

    def _total(self) -> np.ndarray:
        """Sum of the live rows, float64. Summed once (~0.1 s a million rows), then kept by every write;
        removed rows are zero, so the sum over all rows is the sum over the live ones. Once kept, reading
        it does not wait for a background graph insert (a search does not either)."""
        if self._sum is None:
            self._settle()
            total = np.zeros(self.dim, dtype=np.float64)
            for start in range(0, self.num_slots, _SUM_ROWS):  # float64 in chunks, not a whole copy
                total += self._view[start : start + _SUM_ROWS].sum(axis=0, dtype=np.float64)
            self._sum = total
        return self._sum

    def vector(self, note_id: str) -> np.ndarray:
        self._settle()
        slot = self.slot_of.get(note_id)
        if slot is None:
            raise NotFound(f"no vector for note {note_id}")
        return self._view[slot].copy()

    def vectors(self, slots: np.ndarray) -> np.ndarray:
        """Rows by slot (a copy); during a background add, without waiting for it (a search reads them)."""
        if not self._adds.running:
            self._settle()
            return self._view[slots]
        slots = np.asarray(slots, dtype=np.int64)
        with self._adds.reading():  # the add may have moved the storage: read it as it is now
            in_graph, first, rows = int(self._store.ntotal), self._adds.first, self._adds.rows
            out = np.empty((len(slots), self.dim), dtype=np.float32)
            inside = slots < in_graph
            out[inside] = ann.rows_view(self._store, self.dim)[slots[inside]]
            out[~inside] = rows[slots[~inside] - first]
        return out

    def search(
        self,
        queries: np.ndarray,
        k: int,
        mask: np.ndarray | None = None,
        ef: int | None = None,
        *,
        background: bool = False,
    ) -> list[list[tuple[int, float]]]:
        """Top-k (slot, cosine) per query among slots where `mask` (and liveness) holds; `ef` overrides
        the HNSW beam (ann tier only); `background`: a write's own search (no query is waiting on it).
        During a background add it does not wait for the add (0.3-0.6 s per write batch at 250k notes)
        but searches the graph as far as it got, and the rest exactly."""
        if not background:
            self._adds.last_query = time.monotonic()
        if not self._adds.running or self._gpu or background:  # a write's search waits: its
            self._settle()  # HNSW search and the add, each on both cores, ran slower side by side
        allowed, n_allowed, packed = self._allowed(mask)
        k = min(k, n_allowed)
        queries = np.ascontiguousarray(queries, dtype=np.float32).reshape(-1, self.dim)
        if k == 0:
            return [[] for _ in range(len(queries))]
        if self._gpu:
            scores, slots = self._gpu.search(queries, k, allowed)
        else:
            scores, slots = self._search_cpu(queries, k, allowed, n_allowed, ef, packed)
        return [
            [(int(s), float(c)) for s, c in zip(row_s, row_c, strict=True) if s >= 0]
            for row_s, row_c in zip(slots, scores, strict=True)
        ]

    def _allowed(self, mask: np.ndarray | None) -> tuple[np.ndarray, int, list[np.ndarray]]:
        """`live & mask`, its count, and a holder for its FAISS bitmap: kept for the last read-only mask
        (engine.recall.visible shares one per validity and `as_of`) until `live` changes. Searches
        between writes repeat a few masks, and the and, the count and the packing are each a pass over
        every slot (~0.2-0.3 ms of a search at 1M notes)."""
        memo = self._masked
        if mask is not None and memo is not None and memo[0] is mask and memo[1] == self._live_version:
            return memo[2], memo[3], memo[4]
        version = self._live_version  # read first: a write meanwhile leaves a memo that never matches
        allowed = self.live if mask is None else (self.live & mask)
        n_allowed = int(np.count_nonzero(allowed))  # ~20x faster than sum() over a bool array
        packed: list[np.ndarray] = []
        if mask is not None and not mask.flags.writeable:
            self._masked = (mask, version, allowed, n_allowed, packed)
        return allowed, n_allowed, packed

    def _search_cpu(
        self,
        queries: np.ndarray,
        k: int,
        allowed: np.ndarray,
        n_allowed: int,
        ef: int | None,
        packed: list[np.ndarray],
    ) -> tuple[np.ndarray, np.ndarray]:
        few = len(queries) < _BLAS_MIN_QUERIES
        with ann.one_thread() if few else nullcontext():
            if self.tier == ann.ANN:
                beam = ef or self.config.search_beam(len(self))
                with self._adds.reading():
                    return self._search_adding(queries, k, allowed, n_allowed, packed, beam)
            return self._search_exact(queries, k, allowed, n_allowed)

    def _search_adding(
        self,
        queries: np.ndarray,
        k: int,
        allowed: np.ndarray,
        n_allowed: int,
        packed: list[np.ndarray],
        beam: int,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The graph's rows through the graph, the rows an add has not reached yet exactly (none once
        it is done). Slot == node id, so the graph holds exactly the slots below its `ntotal`.
        `n_allowed`, `packed`: the count of `allowed` and its bitmap holder (`_allowed`), for a graph of
        every slot."""
        in_graph = int(self._store.ntotal)
        first, rows = self._adds.first, self._adds.rows
        if in_graph == len(allowed):
            found = self._search_ann(queries, k, allowed, n_allowed, packed, beam)
        else:
            part = allowed[:in_graph]
            found = self._search_ann(queries, k, part, int(np.count_nonzero(part)), None, beam)
        if in_graph >= len(allowed) or in_graph >= first + len(rows):
            return found
        rest = np.flatnonzero(allowed[in_graph : first + len(rows)]) + in_graph
        if not len(rest):
            return found
        return ann.merge(
            found, exact_topk(rows[rest - first], rest, queries, k), np.zeros(len(allowed), bool), k
        )

    def _search_exact(
        self, queries: np.ndarray, k: int, allowed: np.ndarray, n_allowed: int
    ) -> tuple[np.ndarray, np.ndarray]:
        if len(queries) > _BLAS_MIN_QUERIES:
            return _blas_topk(self._view, queries, k, allowed)
        if n_allowed == len(allowed):
            return self._store.search(queries, k)
        return ann.exact_rows(self._store, queries, k, allowed)

    def _search_ann(
        self,
        queries: np.ndarray,
        k: int,
        allowed: np.ndarray,
        n_allowed: int,
        packed: list[np.ndarray] | None,
        ef: int,
    ) -> tuple[np.ndarray, np.ndarray]:
        if n_allowed <= self.config.ann_exact_max:
            return ann.exact_rows(self._store, queries, k, allowed)
        found = ann.search_ann(self._store, queries, k, allowed, n_allowed, ef, packed=packed)
        if not self._stale:
            return found
        stale = np.zeros(len(allowed), dtype=bool)
        stale[list(self._stale)] = True
        stale &= allowed
        if not stale.any():
            return found
        return ann.merge(found, ann.exact_rows(self._store, queries, k, stale), stale, k)

    # --- persistence ------------------------------------------------------------
    def save(self, path: Path, position: int) -> None:
        """Write the index (rows, graph, slot ids) to `path`, tagged with the log `position` it reflects."""
        from engine.state.index_file import write_index

        self._settle()
        write_index(path, self._store, self.ids, position)

    @classmethod
    def load(
        cls, path: Path, expect_position: int, *, config: IndexConfig | None = None, use_cuda: bool = False
    ) -> VectorIndex:
        """The index saved at `path`; CorruptIndex when the file is damaged, of another dimension, or
        saved at another log position than `expect_position` (the caller then rebuilds from vectors)."""
        from engine.state.index_file import read_index

        store, ids = read_index(path, expect_position)
        index = cls(store.d, use_cuda, config=config)
        index._store, index._view = store, ann.rows_view(store, store.d)
        index.ids = ids
        index.live = np.array([i is not None for i in ids], dtype=bool)
        index.slot_of = {i: s for s, i in enumerate(ids) if i is not None}
        index._free = [s for s, i in enumerate(ids) if i is None][::-1]
        if index._gpu:
            index._gpu.append(index._view)
        index._retier()  # the config may draw the tier line elsewhere than the saver's
        return index


_SUM_ROWS = 1 << 16
_DRIFT_COSINE = 0.9
"""A row re-embedded to below this cosine with its old self counts as stale in the graph."""

# FAISS with an ID selector scans without BLAS; a batch of queries goes faster through one masked matmul.
_BLAS_MIN_QUERIES = 8
_BLOCK_FLOATS = 1 << 23


def _blas_topk(
    db: np.ndarray, queries: np.ndarray, k: int, allowed: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    rows = max(1, _BLOCK_FLOATS // max(1, len(db)))
    scores = np.empty((len(queries), k), dtype=np.float32)
    slots = np.empty((len(queries), k), dtype=np.int64)
    for start in range(0, len(queries), rows):
        block = queries[start : start + rows] @ db.T
        block[:, ~allowed] = -np.inf
        top = np.argpartition(-block, k - 1, axis=1)[:, :k]
        part = np.take_along_axis(block, top, axis=1)
        order = np.argsort(-part, axis=1, kind="stable")
        scores[start : start + rows] = np.take_along_axis(part, order, axis=1)
        slots[start : start + rows] = np.take_along_axis(top, order, axis=1)
    return scores, slots
