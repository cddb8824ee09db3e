"""Evidence recall@k on LoCoMo: amem vs plain BM25 in the same run, tuned vs held-out conversations.

    python -m bench.locomo [--split] [--variants] [--only tuned] [--encoder minilm] [--no-expand]

Each conversation is one tenant, one note per turn (dia_id kept in metadata). For every question,
recall@k = |evidence ∩ top-k dia_ids| / |evidence|, averaged per category. `--split` reports the tuned
conversations (SPLIT["tuned"], the only ones levers were designed on) and the held-out ones apart.
`--variants` ingests once and runs every recall lever of VARIANTS on the same notes (the table in
docs/recall.md); the chosen defaults are RecallConfig's.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import LOCOMO, RESULTS, table, write_json
from engine import Config, Memory
from engine.io.chatlog import read_chatlog
from engine.state.lexical import LexicalIndex

KS = (1, 2, 5, 10, 25, 50)
SHOWN = (5, 10, 25)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
SPLIT = {"tuned": ("conv-26", "conv-30", "conv-41"), "held-out": ("conv-42", "conv-43")}
"""Fixed by sample id: levers are designed on "tuned" only; "held-out" is reported, never inspected."""
TODAY = {
    "fusion": "minmax",
    "strip_names": False,
    "speaker_boost": 0.0,
    "temporal_boost": 0.0,
    "neighbour_weight": 0.0,
    "second_round_weight": 0.0,
    "prf_weight": 0.0,
    "short_turn_penalty": 0.0,
}
"""The recall settings before issue 14 (every lever off)."""
SPEAKER_NB_TIME = {"speaker_boost": 0.3, "neighbour_weight": 0.2, "temporal_boost": 0.1}
VARIANTS: dict[str, dict[str, Any] | None] = {
    "today (levers off)": {},
    "fusion rrf": {"fusion": "rrf"},
    "fusion zscore": {"fusion": "zscore"},
    "lexical weight 0.5": {"lexical_weight": 0.5},
    "strip names": {"strip_names": True},
    "speaker boost 0.1": {"speaker_boost": 0.1},
    "speaker boost 0.2": {"speaker_boost": 0.2},
    "speaker boost 0.3": {"speaker_boost": 0.3},
    "speaker boost 0.5": {"speaker_boost": 0.5},
    "speaker 0.3 + addressed": {"speaker_boost": 0.3, "speaker_addressed": True},
    "temporal boost 0.1": {"temporal_boost": 0.1},
    "temporal boost 0.2": {"temporal_boost": 0.2},
    "neighbours 0.1": {"neighbour_weight": 0.1},
    "neighbours 0.2": {"neighbour_weight": 0.2},
    "neighbours 0.3": {"neighbour_weight": 0.3},
    "second round 0.2": {"second_round_weight": 0.2},
    "second round 0.4": {"second_round_weight": 0.4},
    "bm25 prf 0.3": {"prf_weight": 0.3},
    "short-turn penalty 0.2": {"short_turn_penalty": 0.2},
    "no link expansion": {"expand_links": False},
    "speaker 0.3 + neighbours 0.2": {"speaker_boost": 0.3, "neighbour_weight": 0.2},
    "speaker + neighbours + temporal 0.1": SPEAKER_NB_TIME,
    "  + temporal 0.2": SPEAKER_NB_TIME | {"temporal_boost": 0.2},
    "  + strip names": SPEAKER_NB_TIME | {"strip_names": True},
    "  + bm25 prf 0.3": SPEAKER_NB_TIME | {"prf_weight": 0.3},
    "  + second round 0.4": SPEAKER_NB_TIME | {"second_round_weight": 0.4},
    "  + zscore fusion": SPEAKER_NB_TIME | {"fusion": "zscore"},
    "  + short-turn penalty 0.2": SPEAKER_NB_TIME | {"short_turn_penalty": 0.2},
    "  + prf 0.3 + short 0.2 (= defaults)": SPEAKER_NB_TIME | {"prf_weight": 0.3, "short_turn_penalty": 0.2},
    "  + prf + short + second round 0.4": SPEAKER_NB_TIME
    | {"prf_weight": 0.3, "short_turn_penalty": 0.2, "second_round_weight": 0.4},
    "defaults (RecallConfig)": None,  # None: the shipped defaults, nothing overridden
}


def load(path: Path) -> tuple[dict[str, list[Any]], list[dict[str, Any]]]:
    turns: dict[str, list[Any]] = defaultdict(list)
    for rec in read_chatlog(path, fmt="locomo"):
        turns[rec.tenant].append(rec.interaction)  # type: ignore[index]
    questions = [dict(q, tenant=s["sample_id"]) for s in json.loads(path.read_text()) for q in s["qa"]]
    return turns, questions


def split_of(tenant: str) -> str:
    return next((name for name, ids in SPLIT.items() if tenant in ids), "other")


def amem_rankings(mem: Memory, questions: list[dict[str, Any]]) -> list[list[str]]:
    return [
        [h.note.metadata.get("dia_id") for h in mem.search(q["question"], tenant=q["tenant"], k=max(KS))]
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
    """{category: {R@k: mean recall, n}} with a "cat 1-4" row."""
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
        for cat in ["cat 1-4", *CATEGORIES.values()]
        if (ks := per.get(cat))
    }


def by_split(questions: list[dict[str, Any]], rankings: list[list[str]]) -> dict[str, Any]:
    """Recall tables for every split present, and for all questions together ("all")."""
    out = {"all": recall_table(questions, rankings)}
    for name in SPLIT:
        rows = [(q, r) for q, r in zip(questions, rankings, strict=True) if split_of(q["tenant"]) == name]
        if rows:
            out[name] = recall_table([q for q, _ in rows], [r for _, r in rows])
    return out


def ingest(config: Config, turns: dict[str, list[Any]], batch: int) -> tuple[Memory, float]:
    mem = Memory(config=config)
    started = time.perf_counter()
    for tenant, items in turns.items():
        for i in range(0, len(items), batch):
            mem.add_interactions(items[i : i + batch], tenant=tenant)
    return mem, time.perf_counter() - started


def timed_rankings(mem: Memory, questions: list[dict[str, Any]]) -> tuple[list[list[str]], float, float]:
    """Rankings, wall ms and CPU ms per search (CPU time: steadier than wall on a shared machine)."""
    started, cpu = time.perf_counter(), time.process_time()
    ranked = amem_rankings(mem, questions)
    n = max(1, len(questions))
    return ranked, (time.perf_counter() - started) * 1000 / n, (time.process_time() - cpu) * 1000 / n


def run_variants(
    mem: Memory, base: Config, questions: list[dict[str, Any]], ingest_s: float, only: list[str] | None = None
) -> list[dict[str, Any]]:
    rows = []
    for name, overrides in VARIANTS.items():
        if only and name not in only:
            continue
        mem.config = base if overrides is None else base.with_(**(TODAY | overrides))
        ranked, ms, cpu_ms = timed_rankings(mem, questions)
        tables = by_split(questions, ranked)
        row: dict[str, Any] = {"variant": name}
        for split, t in tables.items():
            row[f"{split} R@10"] = t["cat 1-4"]["R@10"]
        row |= {
            "multi-hop R@10": tables["all"]["multi-hop"]["R@10"],
            "held-out multi-hop": tables.get("held-out", {}).get("multi-hop", {}).get("R@10"),
            "ms/query": ms,
            "cpu ms/query": cpu_ms,
            "ingest s": ingest_s,
        }
        rows.append(row)
        print(table([row], list(row)).splitlines()[-1], flush=True)
    mem.config = base
    return rows


def split_tables(ours: dict[str, Any], bm25: dict[str, Any]) -> str:
    out = []
    for split in ours:
        rows = [
            {"split": split, "category": c, "system": s, **{k: v for k, v in r[split][c].items()}}
            for c in ours[split]
            for s, r in (("amem", ours), ("bm25", bm25))
        ]
        out.append(table(rows, ["split", "category", "system", "n", *[f"R@{k}" for k in SHOWN]]))
    return "\n\n".join(out)


def curves_png(ours: dict[str, Any], bm25: dict[str, Any], split: str, name: str = "locomo") -> Path:
    """Recall@k against k, one panel per category, amem vs BM25."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cats = list(ours[split])
    fig, axes = plt.subplots(1, len(cats), figsize=(3.2 * len(cats), 3.2), sharey=True)
    for ax, cat in zip(np.atleast_1d(axes), cats, strict=True):
        for name, res in (("amem", ours), ("bm25", bm25)):
            ax.plot(KS, [res[split][cat][f"R@{k}"] for k in KS], marker="o", label=name)
        ax.set_xscale("log")
        ax.set_xticks(KS, [str(k) for k in KS])
        ax.set_title(cat)
        ax.set_xlabel("k")
        ax.grid(alpha=0.3)
    np.atleast_1d(axes)[0].set_ylabel(f"evidence recall@k ({split})")
    np.atleast_1d(axes)[0].legend()
    fig.tight_layout()
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}_curves_{split}.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=LOCOMO)
    ap.add_argument("--encoder", default="wordllama")
    ap.add_argument("--split", action="store_true", help="report tuned and held-out conversations apart")
    ap.add_argument("--only", choices=list(SPLIT), help="ingest and ask only this split's conversations")
    ap.add_argument("--variants", action="store_true", help="run every lever of VARIANTS on one ingest")
    ap.add_argument("--variant", action="append", help="with --variants: run only this one (repeatable)")
    ap.add_argument("--no-expand", action="store_true")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--name", default="locomo", help="results file name (bench/results/<name>.json)")
    return ap.parse_args()


def main() -> None:
    args = parse_args()
    turns, questions = load(args.data)
    if args.only:
        turns = {t: v for t, v in turns.items() if split_of(t) == args.only}
        questions = [q for q in questions if split_of(q["tenant"]) == args.only]
    config = Config.of(encoder=args.encoder, **({"expand_links": False} if args.no_expand else {}))
    mem, ingest_s = ingest(config, turns, args.batch_size)
    variants = run_variants(mem, config, questions, ingest_s, args.variant) if args.variants else []
    ranked, ms, cpu_ms = timed_rankings(mem, questions)
    ours = by_split(questions, ranked) if args.split else {"all": recall_table(questions, ranked)}
    base_rank = bm25_rankings(turns, questions)
    bm25 = by_split(questions, base_rank) if args.split else {"all": recall_table(questions, base_rank)}
    if variants:
        print("\n" + table(variants, list(variants[0])) + "\n")
    print(split_tables(ours, bm25))
    print(
        f"\nencoder {args.encoder}: ingest {sum(map(len, turns.values()))} turns in {ingest_s:.1f}s; "
        f"{ms:.2f} ms/search ({cpu_ms:.2f} CPU ms); R@10 cat 1-4: "
        + "; ".join(
            f"{s} amem {ours[s]['cat 1-4']['R@10']:.3f} vs bm25 {bm25[s]['cat 1-4']['R@10']:.3f}"
            for s in ours
        )
    )
    for split in ours:
        curves_png(ours, bm25, split, args.name)
    recall = {f.name: getattr(config.recall, f.name) for f in config.recall.__dataclass_fields__.values()}
    write_json(
        args.name,
        {
            "encoder": args.encoder,
            "recall": recall,
            "split": {k: list(v) for k, v in SPLIT.items()},
            "amem": ours,
            "bm25": bm25,
            "variants": variants,
            "ingest_s": ingest_s,
            "ms_per_search": ms,
            "cpu_ms_per_search": cpu_ms,
        },
    )


if __name__ == "__main__":
    main()
