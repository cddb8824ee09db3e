"""Per-tenant vector index: slot-addressed, updated in place, filtered by a slot mask.

Every note owns a slot. Adding fills a free slot or appends; re-embedding an evolved note overwrites
its row where it lies (O(dim), never a rebuild); removing zeroes the row and frees the slot. Search
takes a boolean mask over slots (live, valid now / as of t) and returns (note id, cosine).

Backends: FAISS IndexFlatIP on CPU, written through a numpy view of its own storage; on a CUDA machine
a torch mirror of the matrix on the GPU searched by `kernels.masked_topk` (rows updated in place too).
"""

from __future__ import annotations

import faiss
import numpy as np

from engine.errors import NotFound


class VectorIndex:
    def __init__(self, dim: int, use_cuda: bool = False, *, torch_device: str | None = None) -> None:
        """`use_cuda` searches a torch mirror on the GPU; `torch_device` names another device for it."""
        self.dim = dim
        self._flat = faiss.IndexFlatIP(dim)
        self._view = np.zeros((0, dim), dtype=np.float32)
        self.ids: list[str | None] = []
        self.slot_of: dict[str, int] = {}
        self._free: list[int] = []
        self.live = np.zeros(0, dtype=bool)
        device = torch_device or ("cuda" if use_cuda else None)
        self._gpu = _TorchMirror(dim, device) if device else None

    def __len__(self) -> int:
        return len(self.slot_of)

    @property
    def num_slots(self) -> int:
        return len(self.ids)

    # --- writes ---------------------------------------------------------------
    def upsert(self, ids: list[str], vectors: np.ndarray) -> list[int]:
        """Insert new ids, overwrite the rows of known ids in place. Returns the slot of each id."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(ids), self.dim)
        latest = dict(zip(ids, range(len(ids)), strict=True))  # a repeated id: its last vector wins
        slots: dict[str, int | None] = {i: self.slot_of.get(i) for i in latest}
        for note_id, slot in slots.items():
            if slot is None and self._free:
                slots[note_id] = self._free.pop()
        missing = [i for i, s in slots.items() if s is None]
        if missing:
            first = self._grow(len(missing))
            slots.update({note_id: first + off for off, note_id in enumerate(missing)})
        for note_id, row in latest.items():
            self._write(slots[note_id], note_id, vectors[row])  # type: ignore[arg-type]
        return [slots[i] for i in ids]  # type: ignore[misc]

    def _write(self, slot: int, note_id: str, vec: np.ndarray) -> None:
        self._view[slot] = vec
        self.ids[slot] = note_id
        self.slot_of[note_id] = slot
        self.live[slot] = True
        if self._gpu:
            self._gpu.write(slot, vec)

    def _grow(self, count: int) -> int:
        first = self._flat.ntotal
        block = np.zeros((count, self.dim), dtype=np.float32)
        self._flat.add(block)
        # add() may reallocate FAISS storage: take a fresh view of it.
        self._view = faiss.rev_swig_ptr(self._flat.get_xb(), self._flat.ntotal * self.dim).reshape(
            -1, self.dim
        )
        self.ids.extend([None] * count)
        self.live = np.concatenate([self.live, np.zeros(count, dtype=bool)])
        if self._gpu:
            self._gpu.append(block)
        return first

    def remove(self, ids: list[str]) -> None:
        for note_id in ids:
            slot = self.slot_of.pop(note_id, None)
            if slot is None:
                continue
            self._view[slot] = 0.0
            self.ids[slot] = None
            self.live[slot] = False
            self._free.append(slot)
            if self._gpu:
                self._gpu.write(slot, self._view[slot])

    # --- reads ----------------------------------------------------------------
    def vector(self, note_id: str) -> np.ndarray:
        slot = self.slot_of.get(note_id)
        if slot is None:
            raise NotFound(f"no vector for note {note_id}")
        return self._view[slot].copy()

    def vectors(self, slots: np.ndarray) -> np.ndarray:
        return self._view[slots]

    def search(
        self, queries: np.ndarray, k: int, mask: np.ndarray | None = None
    ) -> list[list[tuple[int, float]]]:
        """Top-k (slot, cosine) per query among slots where `mask` (and liveness) holds."""
        allowed = self.live if mask is None else (self.live & mask)
        n_allowed = int(allowed.sum())
        k = min(k, n_allowed)
        queries = np.ascontiguousarray(queries, dtype=np.float32).reshape(-1, self.dim)
        if k == 0:
            return [[] for _ in range(len(queries))]
        if self._gpu:
            scores, slots = self._gpu.search(queries, k, allowed)
        elif len(queries) > _BLAS_MIN_QUERIES:
            scores, slots = _blas_topk(self._view, queries, k, allowed)
        elif n_allowed == len(allowed):
            scores, slots = self._flat.search(queries, k)
        else:
            bitmap = np.packbits(allowed, bitorder="little")
            params = faiss.SearchParameters(sel=faiss.IDSelectorBitmap(len(allowed), faiss.swig_ptr(bitmap)))  # type: ignore[call-arg]
            scores, slots = self._flat.search(queries, k, params=params)
        return [
            [(int(s), float(c)) for s, c in zip(row_s, row_c, strict=True) if s >= 0]
            for row_s, row_c in zip(slots, scores, strict=True)
        ]


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


class _TorchMirror:
    """The index matrix on a torch device (the GPU), searched by `kernels.masked_topk` (Triton on CUDA);
    rows are written in place like the host copy."""

    def __init__(self, dim: int, device: str) -> None:
        import torch

        self._torch = torch
        self._device = device
        self._db = torch.zeros((0, dim), dtype=torch.float32, device=device)

    def append(self, block: np.ndarray) -> None:
        self._db = self._torch.cat([self._db, self._torch.from_numpy(block).to(self._device)])

    def write(self, slot: int, vec: np.ndarray) -> None:
        self._db[slot] = self._torch.from_numpy(np.array(vec, dtype=np.float32)).to(self._device)

    def search(self, queries: np.ndarray, k: int, allowed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        from kernels import masked_topk

        torch = self._torch
        mask = torch.from_numpy(allowed).to(self._device)
        scores, idx = masked_topk(self._db, torch.from_numpy(queries).to(self._device), k, mask)
        return scores.cpu().numpy(), idx.cpu().numpy()
