"""Vector index tiers: exact flat vs HNSW (the ANN tier) vs IVF, on real WordLlama chat embeddings.

    PYTHONPATH=$PWD .venv/bin/python -m bench.index_tiers [--sizes 10000,100000,1000000] [--queries 100]
    (--keep: keep the other sizes' rows of the last run, to add one size at a time)

Per size: build time, single-query p50/p99 (no mask, 50% and 1% of notes allowed), batched QPS,
recall@10 vs exact (tie-aware: a hit counts when it scores at least the exact 10th), bytes per vector
(the serialised index). Up to 100k the vectors are WordLlama embeddings of bench/synthetic.py chat;
past that, those embeddings tiled with small Gaussian noise (marked `tiled` in the table).
Prints a table, writes bench/results/index_tiers.json and index_tiers.png.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import faiss  # noqa: E402
import numpy as np  # noqa: E402
from tqdm import tqdm  # noqa: E402

from bench import synthetic  # noqa: E402
from bench.common import RESULTS, table, write_json  # noqa: E402
from engine.config import IndexConfig  # noqa: E402
from engine.encode.wordllama import WordLlamaEncoder  # noqa: E402
from engine.state.vector_index import VectorIndex  # noqa: E402

K, REAL_MAX, BATCH = 10, 100_000, 10_000
TIERS = {"exact": IndexConfig(ann_min_notes=1 << 40), "hnsw": IndexConfig(ann_min_notes=2)}


def embeddings(n: int, n_queries: int) -> tuple[np.ndarray, np.ndarray, bool]:
    enc = WordLlamaEncoder()
    real = min(n, REAL_MAX)
    docs = enc.encode_batch([c["content"] for c in synthetic.chat(real, seed=1)])
    queries = enc.encode_batch(synthetic.queries(n_queries, seed=7))
    if n <= real:
        return docs, queries, False
    rng = np.random.default_rng(0)
    tiled = np.concatenate([docs] * (n // real + 1))[:n]
    tiled += rng.normal(0, 0.02, tiled.shape).astype(np.float32)
    return tiled / np.linalg.norm(tiled, axis=1, keepdims=True), queries, True


def masks(n: int) -> dict[str, np.ndarray | None]:
    rng = np.random.default_rng(1)
    return {"all": None, "50%": rng.random(n) < 0.5, "1%": rng.random(n) < 0.01}


def latency(search: Any, queries: np.ndarray, mask: np.ndarray | None) -> tuple[float, float]:
    times = []
    for q in queries:
        t = time.perf_counter()
        search(q[None, :], K, mask)
        times.append(time.perf_counter() - t)
    return float(np.percentile(times, 50) * 1e3), float(np.percentile(times, 99) * 1e3)


def recall(got: list[list[tuple[int, float]]], truth: list[list[tuple[int, float]]]) -> float:
    hit = [sum(c >= t[-1][1] - 1e-5 for _, c in g) / len(t) for g, t in zip(got, truth, strict=True) if t]
    return float(np.mean(hit))


def measure_tier(name: str, db: np.ndarray, queries: np.ndarray, truth: dict) -> dict[str, Any]:
    ix = VectorIndex(db.shape[1], config=TIERS[name])
    ids = [f"n{i}" for i in range(len(db))]
    t = time.perf_counter()
    for start in tqdm(range(0, len(db), BATCH), desc=f"{name} add", leave=False):
        ix.upsert(ids[start : start + BATCH], db[start : start + BATCH])
    row: dict[str, Any] = {"index": name, "build_s": time.perf_counter() - t}
    row["bytes_per_vec"] = len(faiss.serialize_index(ix._store)) / len(db)
    for label, mask in masks(len(db)).items():
        row[f"p50_ms_{label}"], row[f"p99_ms_{label}"] = latency(ix.search, queries, mask)
        row[f"recall_{label}"] = recall(ix.search(queries, K, mask), truth[label])
    t = time.perf_counter()
    ix.search(queries, K)
    row["batch_qps"] = len(queries) / (time.perf_counter() - t)
    return row


def measure_ivf(db: np.ndarray, queries: np.ndarray, truth: dict, nprobe: int) -> dict[str, Any]:
    """IVF-Flat with ids (remove_ids + add_with_ids would re-embed a note), nlist ~ 4 sqrt(n)."""
    nlist = int(4 * np.sqrt(len(db)))
    ivf = faiss.IndexIVFFlat(faiss.IndexFlatIP(db.shape[1]), db.shape[1], nlist, faiss.METRIC_INNER_PRODUCT)
    t = time.perf_counter()
    ivf.train(db[np.random.default_rng(0).choice(len(db), min(len(db), 40 * nlist), replace=False)])
    ivf.add_with_ids(db, np.arange(len(db)))
    row: dict[str, Any] = {"index": f"ivf{nlist}/{nprobe}", "build_s": time.perf_counter() - t}
    params = faiss.SearchParametersIVF(nprobe=nprobe)

    def search(q: np.ndarray, k: int, _mask: None) -> list[list[tuple[int, float]]]:
        d, i = ivf.search(q, k, params=params)
        return [list(zip(r_i.tolist(), r_d.tolist(), strict=True)) for r_i, r_d in zip(i, d, strict=True)]

    row["p50_ms_all"], row["p99_ms_all"] = latency(search, queries, None)
    row["recall_all"] = recall(search(queries, K, None), truth["all"])
    return row


def run(n: int, n_queries: int) -> list[dict[str, Any]]:
    db, queries, tiled = embeddings(n, n_queries)
    exact = VectorIndex(db.shape[1], config=TIERS["exact"])
    exact.upsert([f"n{i}" for i in range(n)], db)
    truth = {label: exact.search(queries, K, m) for label, m in masks(n).items()}
    del exact
    rows = [measure_tier(name, db, queries, truth) for name in TIERS]
    if n <= REAL_MAX:
        rows += [measure_ivf(db, queries, truth, p) for p in (64, 256)]
    for r in rows:
        r.update(n=n, tiled=tiled)
    return rows


def plot(rows: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for name in TIERS:
        for label, style in (("all", "-"), ("50%", "--"), ("1%", ":")):
            pts = [(r["n"], r[f"p99_ms_{label}"]) for r in rows if r["index"] == name]
            ax.plot(*zip(*pts, strict=True), style, marker="o", label=f"{name} p99 ({label} allowed)")
    ax.axhline(10, color="grey", lw=0.8)
    ax.set(xscale="log", yscale="log", xlabel="vectors (256-d)", ylabel="single-query p99 (ms)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(RESULTS / "index_tiers.png", dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--keep", action="store_true", help="keep rows of other sizes from the last run")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows: list[dict[str, Any]] = []
    last = RESULTS / "index_tiers.json"
    if args.keep and last.exists():
        rows = [r for r in json.loads(last.read_text())["rows"] if r["n"] not in sizes]
    for n in sizes:
        rows += run(n, args.queries)
        rows.sort(key=lambda r: r["n"])
        cols = ["n", "tiled", "index", "build_s", "bytes_per_vec", "batch_qps"]
        cols += [f"{m}_{lab}" for lab in ("all", "50%", "1%") for m in ("p50_ms", "p99_ms", "recall")]
        print(table(rows, cols), flush=True)
        write_json("index_tiers", {"k": K, "threads": faiss.omp_get_max_threads(), "rows": rows})
    plot(rows)


if __name__ == "__main__":
    main()
