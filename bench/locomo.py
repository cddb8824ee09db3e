"""Evidence recall@k on LoCoMo: amem (embedded defaults) vs plain BM25, measured in the same run.

    python -m bench.locomo [--k-neighbours 10] [--lexical-weight 0.5] [--no-expand]

Each conversation is one tenant, one note per turn (dia_id kept in metadata). For every question,
recall@k = |evidence ∩ top-k dia_ids| / |evidence|, averaged per category.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import LOCOMO, bar_plot, table, write_json
from engine import Config, Memory
from engine.io.chatlog import read_chatlog
from engine.state.lexical import LexicalIndex

KS = (5, 10, 25, 50)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


def load(path: Path) -> tuple[dict[str, list[Any]], list[dict[str, Any]]]:
    import json

    turns: dict[str, list[Any]] = defaultdict(list)
    for rec in read_chatlog(path, fmt="locomo"):
        turns[rec.tenant].append(rec.interaction)  # type: ignore[index]
    questions = [dict(q, tenant=s["sample_id"]) for s in json.loads(path.read_text()) for q in s["qa"]]
    return turns, questions


def amem_rankings(mem: Memory, questions: list[dict[str, Any]], expand: bool) -> list[list[str]]:
    return [
        [
            h.note.metadata.get("dia_id")
            for h in mem.search(q["question"], tenant=q["tenant"], k=max(KS), expand_links=expand)
        ]
        for q in questions
    ]


def bm25_rankings(turns: dict[str, list[Any]], questions: list[dict[str, Any]]) -> list[list[str]]:
    indexes = {}
    for tenant, items in turns.items():
        bm = LexicalIndex()
        for slot, it in enumerate(items):
            bm.upsert(slot, it.content, 0.0, np.inf)
        indexes[tenant] = (bm, [it.metadata["dia_id"] for it in items])
    out = []
    for q in questions:
        bm, dia = indexes[q["tenant"]]
        slots, _ = bm.top(q["question"], max(KS), any_time=True)
        out.append([dia[i] for i in slots])
    return out


def recall_table(questions: list[dict[str, Any]], rankings: list[list[str]]) -> dict[str, dict[str, float]]:
    per: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for q, ranked in zip(questions, rankings, strict=True):
        evidence = {e for e in q.get("evidence", []) if e}
        if not evidence:
            continue
        for k in KS:
            got = len(evidence & set(ranked[:k])) / len(evidence)
            per[CATEGORIES[q["category"]]][k].append(got)
            if q["category"] in (1, 2, 3, 4):
                per["cat 1-4"][k].append(got)
    return {
        cat: {f"R@{k}": float(np.mean(v)) for k, v in ks.items()} | {"n": len(ks[KS[0]])}
        for cat, ks in per.items()
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", type=Path, default=LOCOMO)
    ap.add_argument("--k-neighbours", type=int, default=10)
    ap.add_argument("--lexical-weight", type=float, default=None)
    ap.add_argument("--encoder", default="wordllama")
    ap.add_argument("--no-expand", action="store_true")
    ap.add_argument("--batch-size", type=int, default=64)
    args = ap.parse_args()
    turns, questions = load(args.data)
    overrides = {"k_neighbours": args.k_neighbours, "encoder": args.encoder}
    if args.lexical_weight is not None:
        overrides["lexical_weight"] = args.lexical_weight
    config = Config.of(**overrides)  # type: ignore[arg-type]
    mem = Memory(config=config)
    started = time.perf_counter()
    for tenant, items in turns.items():
        for i in range(0, len(items), args.batch_size):
            mem.add_interactions(items[i : i + args.batch_size], tenant=tenant)
    ingest_s = time.perf_counter() - started
    started = time.perf_counter()
    ours = recall_table(questions, amem_rankings(mem, questions, expand=not args.no_expand))
    search_s = time.perf_counter() - started
    base = recall_table(questions, bm25_rankings(turns, questions))
    rows = [{"category": c, "system": s, **r[c]} for c in ours for s, r in (("amem", ours), ("bm25", base))]
    print(table(rows, ["category", "system", "n", *[f"R@{k}" for k in KS]]))
    notes = sum(len(mem.notes(t)) for t in turns)
    print(
        f"\ningest {notes} notes in {ingest_s:.1f}s; {len(questions)} searches in {search_s:.2f}s; "
        f"R@10 cat 1-4: amem {ours['cat 1-4']['R@10']:.3f} vs bm25 {base['cat 1-4']['R@10']:.3f} "
        f"({ours['cat 1-4']['R@10'] / base['cat 1-4']['R@10']:.2f}x)"
    )
    stats = mem.stats()
    links = sum(t["links"] for t in stats["tenants"].values())
    write_json(
        "locomo",
        {
            "config": {k: getattr(config, k) for k in ("k_neighbours", "lexical_weight", "encoder")},
            "expand": not args.no_expand,
            "amem": ours,
            "bm25": base,
            "notes": notes,
            "links": links,
            "ingest_s": ingest_s,
            "search_s": search_s,
        },
    )
    bar_plot(
        "locomo",
        {c: {"amem": ours[c]["R@10"], "bm25": base[c]["R@10"]} for c in ours},
        "evidence recall@10",
        "LoCoMo evidence recall@10 by category",
    )


if __name__ == "__main__":
    main()
