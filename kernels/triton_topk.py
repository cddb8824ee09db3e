"""Triton kernel: fused masked inner product + per-block top-k; torch merges the block candidates.

Grid (query blocks, row blocks). Each program computes a (BLOCK_Q, BLOCK_N) score tile with
tl.dot over d, sets disallowed rows to -inf (row code != query code), then selects its K best
columns per query by K rounds of argmax-and-knock-out. A block's K best contain every row of the
global top-K that lies in the block, so one torch.topk over all (n / BLOCK_N) * K candidates is exact.

Import only where triton is installed. On a GPU this compiles; with TRITON_INTERPRET=1 set before
import it runs on CPU tensors through triton's numpy interpreter (how the tests check it).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

BLOCK_N = 128
BLOCK_D = 64
_CANDIDATE_BUDGET = 1 << 26  # candidate entries per launch: 768 MiB of scores + indices


@triton.jit
def _block_topk_kernel(
    db_ptr, q_ptr, row_code_ptr, query_code_ptr, out_scores_ptr, out_indices_ptr,
    n, num_q, d, stride_db, stride_q, num_blocks,
    HAS_CODES: tl.constexpr, IS_FP32: tl.constexpr, K: tl.constexpr,
    BLOCK_Q: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):  # fmt: skip
    pid_q = tl.program_id(0)
    pid_n = tl.program_id(1)
    rq = (pid_q * BLOCK_Q + tl.arange(0, BLOCK_Q)).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    rn = pid_n * BLOCK_N + cols.to(tl.int64)
    acc = tl.zeros((BLOCK_Q, BLOCK_N), dtype=tl.float32)
    for d0 in range(0, d, BLOCK_D):
        rd = d0 + tl.arange(0, BLOCK_D)
        q_tile = tl.load(
            q_ptr + rq[:, None] * stride_q + rd[None, :],
            mask=(rq[:, None] < num_q) & (rd[None, :] < d), other=0.0,
        )  # fmt: skip
        db_tile = tl.load(  # (BLOCK_D, BLOCK_N): the transposed row block
            db_ptr + rn[None, :] * stride_db + rd[:, None],
            mask=(rn[None, :] < n) & (rd[:, None] < d), other=0.0,
        )  # fmt: skip
        if IS_FP32:
            # Default fp32 tl.dot is TF32 (10-bit mantissa); ieee matches torch's exact matmul.
            acc += tl.dot(q_tile, db_tile, input_precision="ieee")
        else:
            acc += tl.dot(q_tile, db_tile)
    allowed = (rn[None, :] < n) & (rq[:, None] < num_q)
    if HAS_CODES:
        row_code = tl.load(row_code_ptr + rn, mask=rn < n, other=0)
        query_code = tl.load(query_code_ptr + rq, mask=rq < num_q, other=0)
        allowed = allowed & (row_code[None, :] == query_code[:, None])
    scores = tl.where(allowed, acc, float("-inf"))
    out_base = rq * (num_blocks * K) + pid_n * K
    for j in range(K):
        best = tl.max(scores, axis=1)
        arg = tl.argmax(scores, axis=1)
        tl.store(out_scores_ptr + out_base + j, best, mask=rq < num_q)
        tl.store(out_indices_ptr + out_base + j, pid_n * BLOCK_N + arg.to(tl.int64), mask=rq < num_q)
        # Knock the chosen column out; a row with nothing left keeps yielding -inf, trimmed later.
        scores = tl.where(cols[None, :] == arg[:, None], float("-inf"), scores)


def block_topk(
    db: torch.Tensor,
    queries: torch.Tensor,
    k: int,
    row_code: torch.Tensor | None = None,
    query_code: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(q, k) sorted scores/indices, -inf where fewer than k rows are allowed; 1 <= k <= n.

    A row j is allowed for query i iff row_code[j] == query_code[i] (same integer dtype), or
    always when no codes are given."""
    db = db.contiguous()
    queries = queries.to(db.dtype).contiguous()
    if row_code is None or query_code is None:
        row_code = query_code = None
    width = triton.cdiv(db.shape[0], BLOCK_N) * k
    # Queries go in groups so the (group, width) candidate buffers stay within budget at large n.
    step = max(64, _CANDIDATE_BUDGET // width)
    parts = []
    for start in range(0, queries.shape[0], step):
        codes = None if query_code is None else query_code[start : start + step]
        cand_scores, cand_indices = _launch(db, queries[start : start + step], k, row_code, codes)
        top = cand_scores.topk(k, dim=1)
        parts.append((top.values, cand_indices.gather(1, top.indices)))
    if not parts:
        return torch.empty((0, k), device=db.device), torch.empty((0, k), dtype=torch.int64, device=db.device)
    return torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])


def _launch(
    db: torch.Tensor,
    queries: torch.Tensor,
    k: int,
    row_code: torch.Tensor | None,
    query_code: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One kernel launch: every block's k best per query, (q, num_blocks * k) unsorted candidates."""
    (n, d), num_q = db.shape, queries.shape[0]
    block_q = 16 if num_q <= 16 else 64  # tl.dot needs >= 16 rows; bigger tiles reuse each db load
    num_blocks = triton.cdiv(n, BLOCK_N)
    cand_scores = torch.empty((num_q, num_blocks * k), dtype=torch.float32, device=db.device)
    cand_indices = torch.empty((num_q, num_blocks * k), dtype=torch.int64, device=db.device)
    has_codes = row_code is not None and query_code is not None
    dummy = torch.empty(1, dtype=torch.int32, device=db.device)  # never read when has_codes is False
    _block_topk_kernel[(triton.cdiv(num_q, block_q), num_blocks)](
        db, queries,
        dummy if row_code is None else row_code.contiguous(),
        dummy if query_code is None else query_code.contiguous(),
        cand_scores, cand_indices,
        n, num_q, d, db.stride(0), queries.stride(0), num_blocks,
        HAS_CODES=has_codes, IS_FP32=db.dtype == torch.float32, K=k,
        BLOCK_Q=block_q, BLOCK_N=BLOCK_N, BLOCK_D=BLOCK_D,
        num_warps=4 if block_q == 16 else 8,  # the 64x128 fp32 tile needs the registers of 8 warps
    )  # fmt: skip
    return cand_scores, cand_indices
