"""The index rows mirrored on a torch device (the GPU), written in place like the host copy, searched
exactly: FAISS GPU brute force (`faiss.knn_gpu`, reading the torch tensor where it lies) when the
faiss build has GPU support, else `kernels.masked_topk` (Triton on CUDA, torch elsewhere).

Exact search on the GPU stays fast far past the CPU's ANN threshold (1M x 256 is one GEMV), and keeps
in-place row writes, which FAISS GPU IVF/CAGRA indexes do not offer.
"""

from __future__ import annotations

import threading
from typing import Any

import faiss
import numpy as np


def faiss_gpu_available() -> bool:
    return hasattr(faiss, "StandardGpuResources") and faiss.get_num_gpus() > 0


class TorchMirror:
    def __init__(self, dim: int, device: str) -> None:
        import torch

        self._torch = torch
        self._device = device
        self._rows = torch.zeros((0, dim), dtype=torch.float32, device=device)
        """Capacity grown by doubling: appending a batch must not copy every row already there."""
        self._n = 0
        self._searching = threading.Lock()
        """One search at a time: a write batch's neighbour search runs beside the tenant's searches, and
        FAISS's GPU resources object is not thread-safe."""
        self._res: Any = None
        if device.startswith("cuda") and faiss_gpu_available():
            import faiss.contrib.torch_utils  # noqa: F401  # lets faiss.knn_gpu read torch tensors

            self._res = faiss.StandardGpuResources()

    @property
    def backend(self) -> str:
        return "faiss-gpu" if self._res is not None else "kernels"

    @property
    def _db(self) -> Any:
        return self._rows[: self._n]

    def append(self, block: np.ndarray) -> None:
        end = self._n + len(block)
        if end > len(self._rows):
            grown = self._rows.new_zeros((max(end, 2 * len(self._rows)), self._rows.shape[1]))
            grown[: self._n] = self._db
            self._rows = grown
        self._rows[self._n : end] = self._torch.from_numpy(np.ascontiguousarray(block, dtype=np.float32)).to(
            self._device
        )
        self._n = end

    def write_many(self, slots: np.ndarray, rows: np.ndarray) -> None:
        index = self._torch.from_numpy(np.asarray(slots, dtype=np.int64)).to(self._device)
        self._rows[index] = self._torch.from_numpy(np.ascontiguousarray(rows, dtype=np.float32)).to(
            self._device
        )

    def write(self, slot: int, vec: np.ndarray) -> None:
        self._rows[slot] = self._torch.from_numpy(np.array(vec, dtype=np.float32)).to(self._device)

    def search(self, queries: np.ndarray, k: int, allowed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        with self._searching:
            return self._search(queries, k, allowed)

    def _search(self, queries: np.ndarray, k: int, allowed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        torch = self._torch
        q = torch.from_numpy(queries).to(self._device)
        mask = torch.from_numpy(allowed).to(self._device)
        if self._res is None:
            from kernels import masked_topk

            scores, idx = masked_topk(self._db, q, k, mask)
            return scores.cpu().numpy(), idx.cpu().numpy()
        rows, full = torch.nonzero(mask).squeeze(1), self._db
        db = full if len(rows) == len(full) else full.index_select(0, rows)
        scores, idx = faiss.knn_gpu(self._res, q, db, k, metric=faiss.METRIC_INNER_PRODUCT)
        if db is not full:
            idx = rows[idx]
        return scores.cpu().numpy(), idx.cpu().numpy()
