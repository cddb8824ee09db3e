"""Exact masked top-k inner-product search over a dense row matrix.

Two backends compute the same thing:
- torch: chunked matmul + masked_fill(-inf) + topk; runs on CPU and CUDA.
- triton: fused masked inner product + per-block top-k (kernels/triton_topk.py); CUDA only,
  chosen automatically when triton imports and k is small enough for the in-kernel selection.

Both return, for each query, candidates sorted by descending score. Rows that are not allowed
score -inf internally; the public functions trim or pad those away, so callers never see them.
Scores are float32; db and queries must be finite (a NaN would outrank every real score).
Bad arguments raise ValueError: this package imports nothing from engine, which imports it.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable
from typing import Literal

import torch

Backend = Literal["auto", "torch", "triton"]
# allowed(start, end) -> bool mask broadcastable to (q, end - start), or None when all are allowed.
AllowedFn = Callable[[int, int], torch.Tensor | None]

# Per-block selection in the triton kernel costs k passes over the tile; past this torch wins.
TRITON_MAX_K = 64
# Bounds the transient (q, chunk) score block and the (chunk, d) upcast copy: 2**24 floats = 64 MiB.
_CHUNK_BUDGET = 1 << 24
# Masks allowing at most 1 row in this many are searched by gathering the allowed rows first.
_COMPACT_RATIO = 4
_FLOAT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


@functools.cache
def triton_available() -> bool:
    """True when triton imports and a CUDA device exists (the interpreter is for tests only)."""
    return importlib.util.find_spec("triton") is not None and torch.cuda.is_available()


def masked_topk(
    db: torch.Tensor,
    queries: torch.Tensor,
    k: int,
    mask: torch.Tensor | None = None,
    *,
    backend: Backend = "auto",
    chunk_rows: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-k rows of `db` by inner product with each query, restricted to `mask` (True = allowed).

    Returns (scores (q, k') float32, indices (q, k') int64), k' = min(k, number of allowed rows),
    each row sorted by descending score. Disallowed rows are never returned; nothing is padded.
    Among tied scores which index is returned is unspecified.
    """
    check_inputs(db, queries, k)
    if mask is not None:
        check_vector(mask, db.shape[0], "mask", db.device, torch.bool)
    allowed = db.shape[0] if mask is None else int(mask.sum().item())
    k_eff = min(k, allowed)
    if k_eff == 0:
        return empty_result(queries.shape[0], db.device)
    if mask is not None and allowed * _COMPACT_RATIO <= db.shape[0]:
        # A selective mask: copying the allowed rows out costs less than scoring every row.
        rows = mask.nonzero().squeeze(1)
        scores, indices = _search(db.index_select(0, rows), queries, k_eff, None, backend, chunk_rows)
        return scores, rows[indices]
    # k_eff <= allowed rows, so every returned entry is a real allowed row, never a -inf filler.
    return _search(db, queries, k_eff, mask, backend, chunk_rows)


def _search(
    db: torch.Tensor,
    queries: torch.Tensor,
    k: int,
    mask: torch.Tensor | None,
    backend: Backend,
    chunk_rows: int | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    if pick_backend(backend, db, k) == "triton":
        return _triton_masked(db, queries, k, mask)
    return torch_topk(db, queries, k, _slice_mask(mask), chunk_rows)


def torch_topk(
    db: torch.Tensor, queries: torch.Tensor, k: int, allowed: AllowedFn, chunk_rows: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Chunked exact search: (q, min(k, n)) sorted candidates, -inf where a row was disallowed."""
    n, num_q = db.shape[0], queries.shape[0]
    chunk = chunk_rows or default_chunk_rows(num_q, db.shape[1])
    part_scores, part_indices = [], []
    for start in range(0, n, chunk):
        end = min(n, start + chunk)
        scores = block_scores(db[start:end], queries)
        row_mask = allowed(start, end)
        if row_mask is not None:
            scores = scores.masked_fill(~row_mask, float("-inf"))
        top = scores.topk(min(k, end - start), dim=1)
        part_scores.append(top.values)
        part_indices.append(top.indices + start)
    if len(part_scores) == 1:
        return part_scores[0], part_indices[0]
    # Each chunk's top-k holds every row of the global top-k that lies in it, so merging is exact.
    cand_scores, cand_indices = torch.cat(part_scores, dim=1), torch.cat(part_indices, dim=1)
    top = cand_scores.topk(min(k, n), dim=1)
    return top.values, cand_indices.gather(1, top.indices)


def block_scores(rows: torch.Tensor, queries: torch.Tensor) -> torch.Tensor:
    """(q, c) float32 inner products. CUDA keeps the storage dtype (tensor cores, fp32 accumulate);
    CPU upcasts, since half-precision CPU matmul is slow and less exact."""
    if rows.is_cuda:
        return (queries.to(rows.dtype) @ rows.T).float()
    # MKL runs rows @ queries.T up to 1.5x faster than queries @ rows.T; the copy back is cheap.
    return torch.mm(rows.float(), queries.float().T).T.contiguous()


def default_chunk_rows(num_queries: int, dim: int) -> int:
    return max(1024, min(_CHUNK_BUDGET // max(num_queries, 1), _CHUNK_BUDGET // max(dim, 1)))


def pick_backend(backend: Backend, db: torch.Tensor, k: int) -> Literal["torch", "triton"]:
    if backend == "torch":
        return "torch"
    if backend == "triton":
        if importlib.util.find_spec("triton") is None:
            raise ValueError("backend='triton' but triton is not installed")
        return "triton"
    if backend != "auto":
        raise ValueError(f"unknown backend {backend!r}")
    return "triton" if db.is_cuda and triton_available() and k <= TRITON_MAX_K else "torch"


def empty_result(num_queries: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    return (
        torch.empty((num_queries, 0), dtype=torch.float32, device=device),
        torch.empty((num_queries, 0), dtype=torch.int64, device=device),
    )


def check_inputs(db: torch.Tensor, queries: torch.Tensor, k: int) -> None:
    if db.dim() != 2 or queries.dim() != 2:
        raise ValueError(f"db and queries must be 2-D, got {tuple(db.shape)} and {tuple(queries.shape)}")
    if db.shape[1] != queries.shape[1]:
        raise ValueError(f"dimension mismatch: db has d={db.shape[1]}, queries d={queries.shape[1]}")
    if db.dtype not in _FLOAT_DTYPES or queries.dtype not in _FLOAT_DTYPES:
        raise ValueError(f"db/queries must be float32/float16/bfloat16, got {db.dtype}/{queries.dtype}")
    if db.device != queries.device:
        raise ValueError(f"db on {db.device} but queries on {queries.device}")
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")


def check_vector(
    vector: torch.Tensor, length: int, field: str, device: torch.device, dtype: torch.dtype | None = None
) -> None:
    if vector.shape != (length,):
        raise ValueError(f"{field} must have shape ({length},), got {tuple(vector.shape)}")
    if vector.device != device:
        raise ValueError(f"{field} on {vector.device} but db on {device}")
    if dtype is not None and vector.dtype != dtype:
        raise ValueError(f"{field} must be {dtype}, got {vector.dtype}")


def _slice_mask(mask: torch.Tensor | None) -> AllowedFn:
    if mask is None:
        return lambda start, end: None
    return lambda start, end: mask[start:end].unsqueeze(0)


def _triton_masked(
    db: torch.Tensor, queries: torch.Tensor, k: int, mask: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    from kernels.triton_topk import block_topk

    if mask is None:
        return block_topk(db, queries, k)
    # The kernel's only filter is code equality: allowed rows carry code 1, every query asks for 1.
    ones = torch.ones(queries.shape[0], dtype=torch.int32, device=db.device)
    return block_topk(db, queries, k, mask.to(torch.int32), ones)
