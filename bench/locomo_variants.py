"""The recall variants of bench.locomo (every lever, one ingest) and the encoder table.

A variant is "levers off" (TODAY) plus named changes, or the shipped defaults plus named changes
(ON_DEFAULTS). The encoder table puts WordLlama, WordLlama re-scored by MiniLM and MiniLM side by side,
each with its own ingest cost, from the same run. `markdown` renders both tables for the docs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.locomo_eval import CATEGORIES, SHOWN, by_split, timed_rankings
from engine import Config, Memory
from engine.recall import rescore

TODAY = {
    "lexical_weight": 0.7,
    "fusion": "minmax",
    "strip_names": False,
    "speaker_boost": 0.0,
    "temporal_boost": 0.0,
    "neighbour_weight": 0.0,
    "neighbour_window": 1,
    "second_round_weight": 0.0,
    "prf_weight": 0.0,
    "short_turn_penalty": 0.0,
    "rescore_weight": 0.0,
}
"""The recall settings before issue 14 (every lever off)."""
SPEAKER_NB_TIME = {"speaker_boost": 0.3, "neighbour_weight": 0.2, "temporal_boost": 0.1}
OLD_DEFAULTS = SPEAKER_NB_TIME | {"prf_weight": 0.3, "short_turn_penalty": 0.2}
"""The defaults of the first round of issue 14 (lexical weight 0.7)."""
VARIANTS: dict[str, dict[str, Any]] = {
    "today (levers off)": {},
    "fusion rrf": {"fusion": "rrf"},
    "fusion zscore": {"fusion": "zscore"},
    "lexical weight 0.5": {"lexical_weight": 0.5},
    "lexical weight 0.8": {"lexical_weight": 0.8},
    "lexical weight 0.85": {"lexical_weight": 0.85},
    "lexical weight 0.9": {"lexical_weight": 0.9},
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
    "neighbours 0.2, window 2": {"neighbour_weight": 0.2, "neighbour_window": 2},
    "second round 0.2": {"second_round_weight": 0.2},
    "second round 0.4": {"second_round_weight": 0.4},
    "bm25 prf 0.3": {"prf_weight": 0.3},
    "short-turn penalty 0.2": {"short_turn_penalty": 0.2},
    "MiniLM re-score 0.3": {"rescore_weight": 0.3},
    "no link expansion": {"expand_links": False},
    "speaker 0.3 + neighbours 0.2": {"speaker_boost": 0.3, "neighbour_weight": 0.2},
    "speaker + neighbours + temporal 0.1": SPEAKER_NB_TIME,
    "  + temporal 0.2": SPEAKER_NB_TIME | {"temporal_boost": 0.2},
    "  + strip names": SPEAKER_NB_TIME | {"strip_names": True},
    "  + bm25 prf 0.3": SPEAKER_NB_TIME | {"prf_weight": 0.3},
    "  + second round 0.4": SPEAKER_NB_TIME | {"second_round_weight": 0.4},
    "  + zscore fusion": SPEAKER_NB_TIME | {"fusion": "zscore"},
    "  + short-turn penalty 0.2": SPEAKER_NB_TIME | {"short_turn_penalty": 0.2},
    "  + prf 0.3 + short 0.2 (round-1 defaults)": OLD_DEFAULTS,
    "  + prf + short + second round 0.4": OLD_DEFAULTS | {"second_round_weight": 0.4},
    "  + prf + short + lexical weight 0.85": OLD_DEFAULTS | {"lexical_weight": 0.85},
    "  + prf + short + neighbour window 2 (= defaults)": OLD_DEFAULTS | {"neighbour_window": 2},
    "  + prf + short + lexical 0.85 + window 2": OLD_DEFAULTS
    | {"lexical_weight": 0.85, "neighbour_window": 2},
    "  + prf + short + MiniLM re-score 0.3": OLD_DEFAULTS | {"rescore_weight": 0.3},
}
"""Applied on TODAY."""
ON_DEFAULTS: dict[str, dict[str, Any]] = {
    "defaults (RecallConfig)": {},
    "defaults + MiniLM re-score 0.2": {"rescore_weight": 0.2},
    "defaults + MiniLM re-score 0.3": {"rescore_weight": 0.3},
    "defaults + MiniLM re-score 0.5": {"rescore_weight": 0.5},
}
"""Applied on the shipped defaults (RecallConfig)."""
ENCODER_ROWS = ("today (levers off)", "defaults (RecallConfig)", "defaults + MiniLM re-score 0.3")
"""The recall settings the encoder table shows per encoder (re-scoring: WordLlama only)."""


def settings(base: Config, name: str) -> Config:
    if name in ON_DEFAULTS:
        return base.with_(**ON_DEFAULTS[name])
    return base.with_(**(TODAY | VARIANTS[name]))


def run_variants(
    mem: Memory,
    base: Config,
    questions: list[dict[str, Any]],
    cost: dict[str, Any],
    only: list[str],
    repeat: int = 1,
) -> list[dict[str, Any]]:
    """One row per variant (all of VARIANTS and ON_DEFAULTS unless `only`), `cost` (encoder, ingest) added.

    With repeat > 1 every variant runs that many times, interleaved (variant A, B, ..., A, B, ...), and
    the cost columns are the medians: CPU time per search swings by a third between identical passes
    on a shared machine."""
    names = [n for n in [*VARIANTS, *ON_DEFAULTS] if not only or n in only]
    rows: dict[str, dict[str, Any]] = {}
    times: dict[str, list[tuple[float, float]]] = {n: [] for n in names}
    for _ in range(max(1, repeat)):
        for name in names:
            mem.config = settings(base, name)
            rescore.CACHE.clear()  # each re-scoring pass pays its own MiniLM encodes (cold start)
            ranked, ms, cpu_ms = timed_rankings(mem, questions)
            times[name].append((cpu_ms, ms))
            if name not in rows:
                rows[name] = summary(name, by_split(questions, ranked)) | cost
                print(f"{cost.get('encoder', '')} {name}: {row_line(rows[name])}, cpu ms/q {cpu_ms:.2f}")
    mem.config = base
    for name, row in rows.items():
        row["cpu ms/q"], row["ms/q"] = (float(np.median(col)) for col in zip(*times[name], strict=True))
    return list(rows.values())


def summary(name: str, tables: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {"variant": name}
    for split in ("tuned", "held-out", "all"):
        for k in SHOWN:
            row[f"{split} R@{k}"] = tables.get(split, {}).get("cat 1-4", {}).get(f"R@{k}")
    for cat in CATEGORIES.values():
        row[f"{cat} R@10"] = tables["all"].get(cat, {}).get("R@10")
    row["held-out multi-hop R@10"] = tables.get("held-out", {}).get("multi-hop", {}).get("R@10")
    return row | {"tables": tables}


def row_line(row: dict[str, Any]) -> str:
    return ", ".join(
        f"{c} {row[c]:.3f}" for c in ("tuned R@10", "held-out R@10", "all R@10") if row[c] is not None
    )


COLUMNS = [
    *(f"{s} R@{k}" for s in ("tuned", "held-out", "all") for k in SHOWN),
    *(f"{c} R@10" for c in CATEGORIES.values()),
    "held-out multi-hop R@10",
    "ingest s",
    "notes/s",
    "cpu ms/q",
    "ms/q",
]


def markdown(rows: list[dict[str, Any]], first: tuple[str, ...] = ("variant",)) -> str:
    """A GitHub table: `first` columns, then COLUMNS (R@k per split, R@10 per category, costs)."""
    cols = [*first, *COLUMNS]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append("| " + " | ".join(_cell(r.get(c)) for c in cols) + " |")
    return "\n".join(lines)


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3f}" if v < 10 else f"{v:.1f}"
    return "" if v is None else str(v).strip()
