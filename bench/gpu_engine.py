"""The engine's own GPU path, checked on a CUDA machine (run through bench/gpu_check.py).

engine_index   state.VectorIndex with its GPU mirror vs the CPU exact index, on random unit rows with
               in-place rewrites, removals and validity masks: recall@10 against exact (tie-aware) and per-query
               latency of each (the mirror's backend is FAISS GPU where faiss has GPU support, else
               kernels.masked_topk: Triton on CUDA)
engine_memory  Memory(device="cuda") vs Memory(device="cpu") on the same synthetic chat: the same
               hits for the same queries, and search latency
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import numpy as np


def _unit(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    rows = rng.standard_normal((n, dim), dtype=np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _latency_ms(search: Any, queries: np.ndarray, mask: np.ndarray | None) -> dict[str, float]:
    from bench.index_tiers import latency  # imports faiss: gpu_check stays importable without it

    p50, p99 = latency(search, queries, mask)
    return {"p50_ms": p50, "p99_ms": p99}


def check_engine_index(args: argparse.Namespace) -> dict[str, Any]:
    from bench.index_tiers import recall
    from engine.config import IndexConfig
    from engine.state.vector_index import VectorIndex

    rng, n, dim = np.random.default_rng(0), args.index_rows, 256
    rows, ids = _unit(rng, n, dim), [f"n{i}" for i in range(n)]
    gpu = VectorIndex(dim, use_cuda=True)
    cpu = VectorIndex(dim, config=IndexConfig(ann_min_notes=n * 4))  # exact: the reference
    for start in range(0, n, 8192):
        for index in (gpu, cpu):
            index.upsert(ids[start : start + 8192], rows[start : start + 8192])
    moved = [ids[i] for i in rng.choice(n, n // 100, replace=False)]
    new_rows = _unit(rng, len(moved), dim)
    gone = [ids[i] for i in rng.choice(n, n // 100, replace=False)]
    for index in (gpu, cpu):
        index.upsert(moved, new_rows)
        index.remove(gone)
    queries = _unit(rng, 200, dim)
    out: dict[str, Any] = {"status": "ok", "rows": n, "backend": gpu._gpu.backend if gpu._gpu else None}
    for name, density in (("all", 1.0), ("half", 0.5), ("one_percent", 0.01)):
        mask = None if density == 1.0 else rng.random(n) < density
        hits = recall(gpu.search(queries, 10, mask), cpu.search(queries, 10, mask))
        out[name] = {
            "recall_at_10": hits,
            "gpu": _latency_ms(gpu.search, queries, mask),
            "cpu_exact": _latency_ms(cpu.search, queries[:50], mask),
        }
        out["status"] = out["status"] if hits > 0.999 else "failed"
    return out


def check_engine_memory(args: argparse.Namespace) -> dict[str, Any]:
    from bench.synthetic import chat, queries
    from engine import Config, Memory
    from engine.encode import WordLlamaEncoder

    encoder, items, asked = WordLlamaEncoder(), chat(args.memory_notes, seed=3), queries(100, seed=4)
    hits: dict[str, list[set[str]]] = {}
    out: dict[str, Any] = {"notes": len(items)}
    for device in ("cuda", "cpu"):
        mem = Memory(config=Config.of(device=device), encoder=encoder)
        started = time.perf_counter()
        for start in range(0, len(items), 1000):
            mem.add_many(items[start : start + 1000])
        row: dict[str, Any] = {"ingest_per_s": len(items) / (time.perf_counter() - started)}
        with mem._pool.use("default") as t:  # bench-only look inside: which tier the host copy is in
            row["host_tier"] = t.state.index.tier
        mem.search(asked[0])  # warm-up: the first CUDA call compiles and allocates
        times, hits[device] = [], []
        for query in asked:
            started = time.perf_counter()
            hits[device].append({h.note.content for h in mem.search(query)})
            times.append((time.perf_counter() - started) * 1000)
        out[device] = row | {"p50_ms": statistics.median(times), "max_ms": max(times)}
        mem.close()
    pairs = zip(hits["cuda"], hits["cpu"], strict=True)
    out["overlap_at_10"] = float(np.mean([len(a & b) / max(len(b), 1) for a, b in pairs]))
    return {"status": "ok" if out["overlap_at_10"] >= 0.95 else "failed", **out}
