"""kernels/ against a numpy brute-force reference.

Ties: a result is correct when its scores equal the reference's sorted top scores and every index
is distinct, allowed and really has the score reported next to it. That pins the index set
exactly when scores are distinct and accepts any valid choice among tied rows.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import kernels
from kernels import masked_topk
from kernels.topk import pick_backend

HAS_TRITON = importlib.util.find_spec("triton") is not None
REPO = Path(__file__).resolve().parents[2]


def reference(db: np.ndarray, queries: np.ndarray, k: int, allowed: np.ndarray) -> list[np.ndarray]:
    """Per query, the sorted top-k allowed scores (float64); allowed is (q, n) bool."""
    scores = queries.astype(np.float64) @ db.astype(np.float64).T
    return [np.sort(row[ok])[::-1][:k] for row, ok in zip(scores, allowed, strict=True)]


def check_result(db, queries, k, allowed, scores, indices, *, padded: bool, atol: float = 1e-4) -> None:
    db_np, q_np, allowed = db.float().numpy(), queries.float().numpy(), np.asarray(allowed)
    expected = reference(db_np, q_np, k, allowed)
    # Padded results are as wide as the fullest row; unpadded ones (one shared mask) exactly k'.
    width = max((len(e) for e in expected), default=0)
    if not padded:
        assert all(len(e) == width for e in expected)
    assert scores.dtype == torch.float32 and indices.dtype == torch.int64
    assert tuple(scores.shape) == tuple(indices.shape) == (len(q_np), width)
    true_scores = q_np.astype(np.float64) @ db_np.astype(np.float64).T
    for i, exp in enumerate(expected):
        got_s, got_i = scores[i].numpy(), indices[i].numpy()
        np.testing.assert_allclose(got_s[: len(exp)], exp, atol=atol, rtol=0)
        assert np.all(np.isneginf(got_s[len(exp) :])) and np.all(got_i[len(exp) :] == -1)
        real = got_i[: len(exp)]
        assert len(set(real.tolist())) == len(real), "duplicate index"
        assert allowed[i][real].all(), "disallowed row returned"
        np.testing.assert_allclose(true_scores[i][real], got_s[: len(exp)], atol=atol, rtol=0)


def random_case(seed: int, n: int, d: int, num_q: int, dup: bool = False):
    gen = torch.Generator().manual_seed(seed)
    db = torch.randn(n, d, generator=gen)
    if dup:  # few distinct rows -> many exact ties
        db = db[torch.randint(0, max(1, n // 10), (n,), generator=gen)]
    return db, torch.randn(num_q, d, generator=gen), gen


@pytest.mark.parametrize(
    ("n", "k", "density", "chunk_rows", "dup"),
    [
        (200, 10, 1.0, None, False),
        (200, 10, 0.3, None, False),
        (200, 50, 0.1, None, False),  # k > allowed
        (200, 10, 0.0, None, False),  # nothing allowed
        (103, 10, 0.5, 7, False),  # k > chunk, ragged last chunk
        (128, 16, 0.5, 16, False),  # chunk boundary exactly at n
        (200, 300, 1.0, 64, False),  # k > n
        (300, 20, 0.6, 50, True),  # ties
    ],
)
def test_masked_topk_matches_reference(n, k, density, chunk_rows, dup):
    db, queries, gen = random_case(n + k, n, 24, 5, dup)
    mask = torch.rand(n, generator=gen) < density
    scores, indices = masked_topk(db, queries, k, mask, backend="torch", chunk_rows=chunk_rows)
    check_result(db, queries, k, np.tile(mask.numpy(), (5, 1)), scores, indices, padded=False)


def test_masked_topk_without_mask_and_empty_inputs():
    db, queries, _ = random_case(1, 50, 8, 3)
    scores, indices = masked_topk(db, queries, 5)
    check_result(db, queries, 5, np.ones((3, 50), bool), scores, indices, padded=False)
    assert masked_topk(db, queries, 0)[0].shape == (3, 0)
    assert masked_topk(db[:0], queries, 5)[1].shape == (3, 0)
    assert masked_topk(db, queries[:0], 5)[0].shape == (0, 5)


def test_half_precision_db():
    db, queries, gen = random_case(2, 400, 32, 4)
    mask = torch.rand(400, generator=gen) < 0.5
    scores, indices = masked_topk(db.half(), queries, 8, mask)
    check_result(
        db.half(), queries, 8, np.tile(mask.numpy(), (4, 1)), scores, indices, padded=False, atol=2e-2
    )


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(0, 120),
    num_q=st.integers(0, 4),
    k=st.integers(0, 40),
    density=st.floats(0, 1),
    chunk_rows=st.none() | st.integers(1, 50),
    seed=st.integers(0, 2**16),
)
def test_masked_topk_property(n, num_q, k, density, chunk_rows, seed):
    db, queries, gen = random_case(seed, n, 6, num_q, dup=seed % 3 == 0)
    mask = torch.rand(n, generator=gen) < density
    scores, indices = masked_topk(db, queries, k, mask, chunk_rows=chunk_rows)
    expected_width = min(k, int(mask.sum()))
    assert scores.shape == (num_q, expected_width)
    if num_q:
        check_result(db, queries, k, np.tile(mask.numpy(), (num_q, 1)), scores, indices, padded=False)


def test_invalid_inputs_raise_value_error():
    db, queries, _ = random_case(5, 10, 4, 2)
    bad = [
        lambda: masked_topk(db, queries[:, :3], 2),
        lambda: masked_topk(db, queries, -1),
        lambda: masked_topk(db, queries, 2, torch.ones(9, dtype=torch.bool)),
        lambda: masked_topk(db, queries, 2, torch.ones(10)),
        lambda: masked_topk(db.long(), queries, 2),
        lambda: masked_topk(db, queries, 2, backend="nope"),  # type: ignore[arg-type]
    ]
    for call in bad:
        with pytest.raises(ValueError):
            call()


def test_auto_backend_is_torch_without_cuda():
    if not torch.cuda.is_available():
        assert pick_backend("auto", torch.zeros(1, 1), 10) == "torch"


def test_public_names():
    assert set(kernels.__all__) == {
        "TRITON_MAX_K",
        "masked_topk",
        "triton_available",
    }


@pytest.mark.skipif(not HAS_TRITON, reason="triton not installed: Triton kernel not checked")
def test_triton_kernel_in_interpreter():
    # TRITON_INTERPRET is read when @triton.jit runs, so the kernel module needs a fresh process.
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, __file__], env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "triton interpreter ok" in proc.stdout


def _interpreter_checks() -> None:
    """Run as a script under TRITON_INTERPRET=1: the Triton backend on CPU tensors vs the reference."""
    import kernels.triton_topk as triton_topk

    triton_topk._CANDIDATE_BUDGET = 400  # so 70 queries go in two launches
    cases = [(300, 40, 5, 7, 0.4), (129, 70, 20, 16, 0.1), (40, 16, 3, 30, 0.5), (260, 64, 70, 5, 0.4)]
    for seed, (n, d, num_q, k, density) in enumerate(cases):
        db, queries, gen = random_case(seed, n, d, num_q, dup=seed == 1)
        mask = torch.rand(n, generator=gen) < density  # 0.1 takes the gather-allowed-rows path
        scores, indices = masked_topk(db, queries, k, mask, backend="triton")
        check_result(db, queries, k, np.tile(mask.numpy(), (num_q, 1)), scores, indices, padded=False)
        scores, indices = masked_topk(db.half(), queries, k, None, backend="triton")
        full = np.ones((num_q, n), bool)
        check_result(db.half(), queries, k, full, scores, indices, padded=False, atol=2e-2)
    assert masked_topk(torch.zeros(3, 16), torch.zeros(0, 16), 2, backend="triton")[0].shape == (0, 2)
    print("triton interpreter ok")


if __name__ == "__main__":
    _interpreter_checks()
