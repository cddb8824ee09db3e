"""Throughput of the embedded write pipeline, and in-place re-embedding vs an index rebuild.

python -m bench.ingest [--sizes 10000 100000] [--batch-size 1024]
"""

from __future__ import annotations

import argparse
import time

import faiss
import numpy as np
from tqdm import tqdm

from bench.common import table, write_json
from bench.synthetic import chat
from engine import Config, Memory
from engine.state.vector_index import VectorIndex


def ingest_rate(n: int, batch_size: int) -> tuple[Memory, dict[str, float]]:
    items = chat(n)
    mem = Memory(config=Config())
    started = time.perf_counter()
    with tqdm(total=n, unit="msg", desc=f"ingest {n:,}") as bar:
        for i in range(0, n, batch_size):
            mem.add_many(items[i : i + batch_size], tenant="bench")
            bar.update(min(batch_size, n - i))
    elapsed = time.perf_counter() - started
    stats = mem.stats()["tenants"]["bench"]
    return mem, {
        "interactions": n,
        "seconds": elapsed,
        "per_s": n / elapsed,
        "notes": stats["notes"],
        "links": stats["links"],
        "versions": stats["versions"],
    }


def reembed_vs_rebuild(mem: Memory, repeats: int = 20) -> dict[str, float]:
    """One evolved note re-encoded and overwritten in place, vs re-encoding and rebuilding everything."""
    notes = mem.notes("bench")
    vectors = np.stack([mem.vector(n.id, "bench") for n in notes])
    index = VectorIndex(vectors.shape[1], config=mem.config.index)  # the tenant's index, rebuilt here
    index.upsert([n.id for n in notes], vectors)
    note = notes[len(notes) // 2]
    text = note.embedding_text(mem.config.write.max_content_chars)
    started = time.perf_counter()
    for _ in range(repeats):
        index.upsert([note.id], mem.encoder.encode_batch([text]))
    in_place = (time.perf_counter() - started) / repeats
    started = time.perf_counter()
    rebuilt = faiss.IndexFlatIP(vectors.shape[1])
    rebuilt.add(vectors)
    rebuild_only = time.perf_counter() - started
    started = time.perf_counter()
    mem.encoder.encode_batch([n.embedding_text(mem.config.write.max_content_chars) for n in notes])
    reencode_all = time.perf_counter() - started + rebuild_only
    return {
        "notes": len(notes),
        "in_place_ms": in_place * 1e3,
        "rebuild_index_ms": rebuild_only * 1e3,
        "reencode_and_rebuild_ms": reencode_all * 1e3,
        "ratio_vs_rebuild": rebuild_only / in_place,
        "ratio_vs_reencode_rebuild": reencode_all / in_place,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--batch-size", type=int, default=1024)
    args = ap.parse_args()
    rows, reembed = [], []
    for n in args.sizes:
        mem, row = ingest_rate(n, args.batch_size)
        rows.append(row)
        reembed.append(reembed_vs_rebuild(mem))
        mem.close()
    print(table(rows, ["interactions", "seconds", "per_s", "notes", "links", "versions"]))
    print()
    print(
        table(
            reembed,
            [
                "notes",
                "in_place_ms",
                "rebuild_index_ms",
                "reencode_and_rebuild_ms",
                "ratio_vs_rebuild",
                "ratio_vs_reencode_rebuild",
            ],
        )
    )
    write_json("ingest", {"batch_size": args.batch_size, "ingest": rows, "reembed": reembed})


if __name__ == "__main__":
    main()
