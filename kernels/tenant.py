"""Top-k for many small tenants sharing one row matrix.

Two layouts, one result convention:
- tenant_topk: rows tagged with an int tenant code in any order (appends stay cheap); each query
  carries its tenant's code and sees only rows with that code. On CUDA the code comparison is fused
  into one full scan, O(q * n * d), which is what a GPU wants (no per-tenant launches). On CPU the
  queries are grouped by tenant and each group scores only its tenant's gathered rows: O(U * n)
  comparisons for U distinct tenants plus O(q * rows per tenant * d) arithmetic.
- segment_topk: each tenant's rows are contiguous; each query names its [start, end) range. Cost
  O(q * L * d) with L the longest range, which is what a CPU wants when tenants are small.

Tenants differ in size, so the result is rectangular with padding: (scores (q, w), indices (q, w)),
w = min(k, rows of the largest tenant asked about); a query whose tenant has fewer than w rows gets
score -inf and index -1 in its trailing slots. Each row is sorted by descending score.
"""

from __future__ import annotations

import torch

from kernels.topk import (
    Backend,
    check_inputs,
    check_vector,
    empty_result,
    pad_invalid,
    pick_backend,
    torch_topk,
)

_INT_DTYPES = (torch.int32, torch.int64)
_GATHER_BUDGET = 1 << 24  # floats in one (queries, L, d) gathered block


def tenant_topk(
    db: torch.Tensor,
    row_tenant: torch.Tensor,
    queries: torch.Tensor,
    query_tenant: torch.Tensor,
    k: int,
    *,
    backend: Backend = "auto",
    chunk_rows: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-k over rows whose row_tenant (n,) equals the query's query_tenant (q,); padded, see module."""
    check_inputs(db, queries, k)
    _check_codes(row_tenant, db.shape[0], "row_tenant", db.device)
    _check_codes(query_tenant, queries.shape[0], "query_tenant", db.device)
    k_eff = min(k, db.shape[0])
    if k_eff == 0:
        return empty_result(queries.shape[0], db.device)
    if backend == "auto" and not db.is_cuda:
        scores, indices = _grouped_tenant_topk(db, row_tenant, queries, query_tenant, k_eff, chunk_rows)
    elif pick_backend(backend, db, k_eff) == "triton":
        from kernels.triton_topk import block_topk

        # Same dtype on both sides; int64 stays int64 so large codes never wrap into each other.
        code_dtype = torch.promote_types(row_tenant.dtype, query_tenant.dtype)
        scores, indices = block_topk(
            db, queries, k_eff, row_tenant.to(code_dtype), query_tenant.to(code_dtype)
        )
    else:
        wanted = query_tenant.unsqueeze(1)
        scores, indices = torch_topk(
            db, queries, k_eff, lambda start, end: row_tenant[start:end].unsqueeze(0) == wanted, chunk_rows
        )
    return pad_invalid(scores, indices)


def segment_topk(
    db: torch.Tensor, queries: torch.Tensor, k: int, starts: torch.Tensor, ends: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Top-k of query i over rows [starts[i], ends[i]) of db; padded, see module."""
    check_inputs(db, queries, k)
    num_q = queries.shape[0]
    _check_codes(starts, num_q, "starts", db.device)
    _check_codes(ends, num_q, "ends", db.device)
    if num_q and bool(((starts < 0) | (ends < starts) | (ends > db.shape[0])).any()):
        raise ValueError(f"segments must satisfy 0 <= start <= end <= {db.shape[0]}")
    longest = int((ends - starts).max().item()) if num_q else 0
    if min(k, longest) == 0:
        return empty_result(num_q, db.device)
    step = max(1, _GATHER_BUDGET // (longest * db.shape[1]))
    parts = [
        _segment_block(
            db, queries[i : i + step], min(k, longest), starts[i : i + step], ends[i : i + step], longest
        )
        for i in range(0, num_q, step)
    ]
    scores = torch.cat([p[0] for p in parts])
    indices = torch.cat([p[1] for p in parts])
    return pad_invalid(scores, indices)


def _grouped_tenant_topk(
    db: torch.Tensor,
    row_tenant: torch.Tensor,
    queries: torch.Tensor,
    query_tenant: torch.Tensor,
    k: int,
    chunk_rows: int | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per distinct query tenant: gather its rows, search them unmasked, scatter results back."""
    scores = torch.full((queries.shape[0], k), float("-inf"), device=db.device)
    indices = torch.full((queries.shape[0], k), -1, dtype=torch.int64, device=db.device)
    for code in query_tenant.unique().tolist():
        rows = (row_tenant == code).nonzero().squeeze(1)
        if rows.numel() == 0:
            continue
        picked = (query_tenant == code).nonzero().squeeze(1)
        top_s, top_i = torch_topk(
            db.index_select(0, rows), queries.index_select(0, picked), k, _all, chunk_rows
        )
        scores[picked, : top_s.shape[1]] = top_s
        indices[picked, : top_i.shape[1]] = rows[top_i]
    return scores, indices


def _all(start: int, end: int) -> None:
    return None


def _segment_block(
    db: torch.Tensor, queries: torch.Tensor, k: int, starts: torch.Tensor, ends: torch.Tensor, longest: int
) -> tuple[torch.Tensor, torch.Tensor]:
    rows = starts.long().unsqueeze(1) + torch.arange(longest, device=db.device).unsqueeze(0)
    valid = rows < ends.unsqueeze(1)
    gathered = db[rows.clamp(max=db.shape[0] - 1)]  # (qb, L, d); clamped slots are masked below
    if db.is_cuda:
        scores = torch.bmm(gathered, queries.to(db.dtype).unsqueeze(2)).squeeze(2).float()
    else:
        scores = torch.bmm(gathered.float(), queries.float().unsqueeze(2)).squeeze(2)
    scores = scores.masked_fill(~valid, float("-inf"))
    top = scores.topk(k, dim=1)
    return top.values, rows.gather(1, top.indices)


def _check_codes(codes: torch.Tensor, length: int, field: str, device: torch.device) -> None:
    check_vector(codes, length, field, device)
    if codes.dtype not in _INT_DTYPES:
        raise ValueError(f"{field} must be int32 or int64, got {codes.dtype}")
