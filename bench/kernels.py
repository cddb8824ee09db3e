"""Masked top-k latency: kernels.masked_topk vs faiss IndexFlatIP + IDSelectorBitmap vs numpy.

Run from the repo root: `python -m bench.kernels` (or `python bench/kernels.py`). Prints a table and
writes bench/results/kernels.json. Every ratio is against faiss measured in the same run. On a
CUDA machine it adds masked_topk on the GPU with the torch and the Triton backends, and, where the
faiss build has GPU support, FAISS GPU brute force (`faiss_gpu`: the engine's GPU search path,
engine/state/gpu_index.py). The Triton kernel stays in the engine only while it beats `faiss_gpu` here.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if __package__ in (None, ""):
    sys.path[0] = str(ROOT)  # run as a path, bench/ would shadow the kernels package with this file
# faiss, torch and numpy's BLAS each keep OpenMP threads that busy-wait after a call; on a small
# machine they steal each other's cores and the timings swing up to 20x. Sleeping threads fix that.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import faiss  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402

from engine.state.gpu_index import TorchMirror, faiss_gpu_available  # noqa: E402
from kernels import masked_topk, triton_available  # noqa: E402

SIZES = (10_000, 100_000)
QUERY_COUNTS = (1, 64)
DENSITIES = (1.0, 0.1)  # share of rows allowed: whole index, or a tenant-like filter
DIM, K = 256, 10


def time_ms(fn: Callable[[], object], sync: Callable[[], None] = lambda: None, repeats: int = 15) -> float:
    # OpenBLAS workers spin ~0.1 s after a call even with OMP_WAIT_POLICY=PASSIVE: let them settle.
    time.sleep(0.3)
    fn()  # warm-up: lazy init, kernel compilation, page faults
    sync()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        sync()
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples)


def numpy_topk(db: np.ndarray, queries: np.ndarray, k: int, mask: np.ndarray) -> np.ndarray:
    scores = queries @ db.T
    scores[:, ~mask] = -np.inf
    k = min(k, int(mask.sum()))
    part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(scores, part, axis=1), axis=1)
    return np.take_along_axis(part, order, axis=1)


def faiss_search(index: faiss.IndexFlatIP, queries: np.ndarray, k: int, mask: np.ndarray) -> np.ndarray:
    if mask.all():
        return index.search(queries, k)[1]
    bitmap = np.packbits(mask, bitorder="little")  # faiss reads bit i at byte i >> 3, bit i & 7
    params = faiss.SearchParameters(sel=faiss.IDSelectorBitmap(len(mask), faiss.swig_ptr(bitmap)))
    return index.search(queries, k, params=params)[1]


def methods(db: np.ndarray, queries: np.ndarray, mask: np.ndarray) -> dict[str, tuple[Callable, Callable]]:
    index = faiss.IndexFlatIP(db.shape[1])
    index.add(db)
    db_t, q_t, mask_t = torch.from_numpy(db), torch.from_numpy(queries), torch.from_numpy(mask)
    none: Callable[[], None] = lambda: None  # noqa: E731
    table = {
        "faiss": (lambda: faiss_search(index, queries, K, mask), none),
        "numpy": (lambda: numpy_topk(db, queries, K, mask), none),
        "torch_cpu": (lambda: masked_topk(db_t, q_t, K, mask_t, backend="torch"), none),
    }
    if torch.cuda.is_available():
        db_g, q_g, mask_g = db_t.cuda(), q_t.cuda(), mask_t.cuda()
        table["torch_cuda"] = (
            lambda: masked_topk(db_g, q_g, K, mask_g, backend="torch"),
            torch.cuda.synchronize,
        )
        if triton_available():
            table["triton_cuda"] = (
                lambda: masked_topk(db_g, q_g, K, mask_g, backend="triton"),
                torch.cuda.synchronize,
            )
        if faiss_gpu_available():
            mirror = TorchMirror(db.shape[1], "cuda")
            mirror.append(db)
            table["faiss_gpu"] = (lambda: mirror.search(queries, K, mask), torch.cuda.synchronize)
    return table


def check_agree(db: np.ndarray, queries: np.ndarray, mask: np.ndarray) -> None:
    """The timed implementations must find the same scores, or the timings mean nothing."""
    faiss_ids = methods(db, queries, mask)["faiss"][0]()
    scores, _ = masked_topk(torch.from_numpy(db), torch.from_numpy(queries), K, torch.from_numpy(mask))
    want = np.take_along_axis(queries @ db.T, faiss_ids, axis=1)
    np.testing.assert_allclose(scores.numpy(), want, atol=1e-3)


def run_case(n: int, num_q: int, density: float, rng: np.random.Generator) -> list[dict]:
    db = rng.standard_normal((n, DIM), dtype=np.float32)
    db /= np.linalg.norm(db, axis=1, keepdims=True)
    queries = rng.standard_normal((num_q, DIM), dtype=np.float32)
    mask = rng.random(n) < density if density < 1 else np.ones(n, dtype=bool)
    check_agree(db, queries, mask)
    times = {name: time_ms(fn, sync) for name, (fn, sync) in methods(db, queries, mask).items()}
    return [
        {"n": n, "q": num_q, "allowed": density, "method": name, "ms": round(ms, 4),
         "vs_faiss": round(ms / times["faiss"], 3)}
        for name, ms in times.items()
    ]  # fmt: skip


def environment() -> dict:
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "faiss": faiss.__version__,
        "torch_threads": torch.get_num_threads(),
        "faiss_threads": faiss.omp_get_max_threads(),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "cuda": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
        "triton": triton_available(),
        "faiss_gpu": faiss_gpu_available(),
        "dim": DIM,
        "k": K,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description="masked top-k latency by method")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="comma-separated row counts")
    sizes = [int(s) for s in parser.parse_args().sizes.split(",")]
    rng = np.random.default_rng(0)
    rows = [
        row for n in sizes for q in QUERY_COUNTS for dens in DENSITIES for row in run_case(n, q, dens, rng)
    ]
    print(f"{'n':>7} {'q':>3} {'allowed':>7} {'method':<12} {'ms':>9} {'vs faiss':>8}")
    for row in rows:
        print(
            f"{row['n']:>7} {row['q']:>3} {row['allowed']:>7} {row['method']:<12} {row['ms']:>9.3f} {row['vs_faiss']:>8.2f}"  # noqa: E501
        )
    out = ROOT / "bench" / "results" / "kernels.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"environment": environment(), "results": rows}, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
