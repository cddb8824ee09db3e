"""Evidence recall@k on LoCoMo: amem vs plain BM25 in the same run, tuned vs held-out conversations.

    python -m bench.locomo [--split] [--variants] [--encoders] [--only tuned] [--encoder minilm]
                           [--set NAME=VALUE ...]

Each conversation is one tenant, one note per turn (bench.locomo_eval scores it). `--split` reports the
tuned conversations (SPLIT["tuned"], the only ones levers were designed on) and the held-out ones apart.
`--variants` ingests once and runs every recall lever (bench.locomo_variants) on the same notes;
`--encoders` also ingests with MiniLM and prints the encoder table (WordLlama, WordLlama re-scored by
MiniLM, MiniLM: recall, ingest and query cost). The tables are written as markdown too
(bench/results/<name>_tables.md: the tables of docs/recall.md and the README).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import LOCOMO, RESULTS, overrides, save_figure, table, write_json
from bench.locomo_eval import (
    KS,
    SHOWN,
    SPLIT,
    bm25_rankings,
    by_split,
    ingest,
    load,
    split_of,
    timed_rankings,
)
from bench.locomo_variants import ENCODER_ROWS, markdown, run_variants
from engine import Config


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


def split_markdown(ours: dict[str, Any], bm25: dict[str, Any]) -> str:
    """amem vs BM25, R@5/10/25 per split and category, as a GitHub table."""
    head = "| split | category | n | amem R@5 | R@10 | R@25 | BM25 R@5 | R@10 | R@25 |"
    lines = [head, "|" + "---|" * 9]
    for split, cats in ours.items():
        for cat, r in cats.items():
            b = bm25[split][cat]
            cells = [r[f"R@{k}"] for k in SHOWN] + [b[f"R@{k}"] for k in SHOWN]
            lines.append(f"| {split} | {cat} | {r['n']} | " + " | ".join(f"{v:.3f}" for v in cells) + " |")
    return "\n".join(lines)


def curves_png(ours: dict[str, Any], bm25: dict[str, Any], split: str, name: str = "locomo") -> Path:
    """Recall@k against k, one panel per category, amem vs BM25."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cats = list(ours[split])
    fig, axes = plt.subplots(1, len(cats), figsize=(3.2 * len(cats), 3.2), sharey=True)
    for ax, cat in zip(np.atleast_1d(axes), cats, strict=True):
        for label, res in (("amem", ours), ("bm25", bm25)):
            ax.plot(KS, [res[split][cat][f"R@{k}"] for k in KS], marker="o", label=label)
        ax.set_xscale("log")
        ax.set_xticks(KS, [str(k) for k in KS])
        ax.set_title(cat)
        ax.set_xlabel("k")
        ax.grid(alpha=0.3)
    np.atleast_1d(axes)[0].set_ylabel(f"evidence recall@k ({split})")
    np.atleast_1d(axes)[0].legend()
    return save_figure(fig, f"{name}_curves_{split}", dpi=100)


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=LOCOMO)
    ap.add_argument("--encoder", default="wordllama")
    ap.add_argument("--split", action="store_true", help="report tuned and held-out conversations apart")
    ap.add_argument("--only", choices=list(SPLIT), help="ingest and ask only this split's conversations")
    ap.add_argument("--variants", action="store_true", help="run every recall lever on one ingest")
    ap.add_argument("--variant", action="append", help="with --variants: run only this one (repeatable)")
    ap.add_argument("--encoders", action="store_true", help="also ingest with MiniLM: the encoder table")
    ap.add_argument("--repeat", type=int, default=1, help="passes per variant; costs are the medians")
    ap.add_argument("--no-expand", action="store_true")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="a Config.of override")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--name", default="locomo", help="results file name (bench/results/<name>.json)")
    return ap.parse_args()


def encoder_table(
    args: argparse.Namespace, turns: dict[str, list[Any]], questions: list[dict[str, Any]], first: list[Any]
) -> list[dict[str, Any]]:
    """The ENCODER_ROWS of the first encoder (`first`: its variant rows, run if missing) and MiniLM's."""
    have = {r["variant"]: r for r in first}
    rows = [have[n] for n in ENCODER_ROWS if n in have]
    config = Config.of(encoder="minilm", **({"expand_links": False} if args.no_expand else {}))
    mem, ingest_s = ingest(config, turns, args.batch_size)
    cost = ingest_cost("minilm", turns, ingest_s)
    only = [n for n in ENCODER_ROWS if "re-score" not in n]
    rows += run_variants(mem, config, questions, cost, only, args.repeat)
    mem.close()
    return rows


def ingest_cost(encoder: str, turns: dict[str, list[Any]], seconds: float) -> dict[str, Any]:
    n = sum(map(len, turns.values()))
    return {"encoder": encoder, "ingest s": seconds, "notes/s": n / max(seconds, 1e-9)}


def main() -> None:
    args = parse_args()
    turns, questions = load(args.data)
    if args.only:
        turns = {t: v for t, v in turns.items() if split_of(t) == args.only}
        questions = [q for q in questions if split_of(q["tenant"]) == args.only]
    settings = {"expand_links": False} if args.no_expand else {}
    config = Config.of(encoder=args.encoder, **(settings | overrides(args.set)))
    mem, ingest_s = ingest(config, turns, args.batch_size)
    cost = ingest_cost(args.encoder, turns, ingest_s)
    only = list(args.variant or []) if args.variants else list(ENCODER_ROWS)
    if only and args.encoders:
        only += [n for n in ENCODER_ROWS if n not in only]
    variants = []
    if args.variants or args.encoders:
        variants = run_variants(mem, config, questions, cost, only, args.repeat)
    ranked, ms, cpu_ms = timed_rankings(mem, questions)
    ours = by_split(questions, ranked) if args.split else {"all": by_split(questions, ranked)["all"]}
    base_rank = bm25_rankings(turns, questions)
    bm25 = by_split(questions, base_rank) if args.split else {"all": by_split(questions, base_rank)["all"]}
    mem.close()
    encoders = encoder_table(args, turns, questions, variants) if args.encoders else []
    report(args, ours, bm25, variants, encoders, cost | {"ms/q": ms, "cpu ms/q": cpu_ms})
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
            "variants": variants if args.variants else [],
            "encoders": encoders,
            "ingest_s": ingest_s,
            "ms_per_search": ms,
            "cpu_ms_per_search": cpu_ms,
        },
    )


def report(
    args: argparse.Namespace,
    ours: dict[str, Any],
    bm25: dict[str, Any],
    variants: list[dict[str, Any]],
    encoders: list[dict[str, Any]],
    cost: dict[str, Any],
) -> None:
    """Print the tables; write the variant and encoder tables as markdown."""
    parts = ["### amem (defaults) vs BM25\n\n" + split_markdown(ours, bm25)]
    if args.variants and variants:
        parts.append("### Variants\n\n" + markdown(variants))
    if encoders:
        parts.append("### Encoders\n\n" + markdown(encoders, ("encoder", "variant")))
    text = "\n\n".join(parts) + "\n"
    print("\n" + "\n\n".join(parts[1:]) + "\n")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{args.name}_tables.md").write_text(text)
    print(split_tables(ours, bm25))
    print(
        f"\nencoder {args.encoder}: ingest {cost['ingest s']:.1f}s ({cost['notes/s']:.0f} notes/s); "
        f"{cost['ms/q']:.2f} ms/search ({cost['cpu ms/q']:.2f} CPU ms); R@10 cat 1-4: "
        + "; ".join(
            f"{s} amem {ours[s]['cat 1-4']['R@10']:.3f} vs bm25 {bm25[s]['cat 1-4']['R@10']:.3f}"
            for s in ours
        ),
    )


if __name__ == "__main__":
    main()
