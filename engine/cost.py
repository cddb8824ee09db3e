"""Cost accounting: LLM calls, tokens, latency, retries and fallbacks (by reason) per stage."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from engine.annotate.schemas import STAGES


@dataclass(slots=True)
class StageCost:
    calls: int = 0
    """Requests sent, failed ones included (each retry is a call)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    retries: int = 0
    fallbacks: int = 0
    dropped_links: int = 0
    """Link/evolve targets the model named that were not offered (dropped, counted)."""
    errors: int = 0
    """Calls that got no usable HTTP answer (status != 200, timeout, connection)."""
    items: int = 0
    """Items the stage asked the LLM about (the denominator of the fallback rate)."""
    fallback_reasons: dict[str, int] = field(default_factory=dict)
    """Why items fell back: transport, timeout, format, http, invalid, truncated, or a semantic check."""

    def add(self, other: StageCost) -> None:
        for name in self.__slots__:
            if name == "fallback_reasons":
                _add_counts(self.fallback_reasons, other.fallback_reasons)
            else:
                setattr(self, name, getattr(self, name) + getattr(other, name))


def _add_counts(into: dict[str, int], more: Mapping[str, int]) -> None:
    for key, n in more.items():
        into[key] = into.get(key, 0) + n


@dataclass(slots=True)
class CostMeter:
    """Thread-safe counters; `record` is called by backends, `report` by stats and benches."""

    stages: dict[str, StageCost] = field(default_factory=lambda: {s: StageCost() for s in STAGES})
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, stage: str, **amounts: float) -> None:
        with self._lock:
            cost = self.stages.setdefault(stage, StageCost())
            for name, value in amounts.items():
                setattr(cost, name, getattr(cost, name) + value)

    def record_fallbacks(self, stage: str, reasons: Mapping[str, int]) -> None:
        """Items that fell back, by reason (also added to `fallbacks`)."""
        with self._lock:
            cost = self.stages.setdefault(stage, StageCost())
            cost.fallbacks += sum(reasons.values())
            _add_counts(cost.fallback_reasons, reasons)

    def merge(self, other: CostMeter) -> None:
        with self._lock:
            for stage, cost in other.stages.items():
                self.stages.setdefault(stage, StageCost()).add(cost)

    def total_tokens(self) -> int:
        return sum(c.prompt_tokens + c.completion_tokens for c in self.stages.values())

    def fallback_rate(self) -> float:
        """Share of the items asked of the LLM (all stages) that fell back; 0 when none were asked."""
        with self._lock:
            items = sum(c.items for c in self.stages.values())
            fallbacks = sum(c.fallbacks for c in self.stages.values())
        return fallbacks / items if items else 0.0

    def fallback_reasons(self) -> dict[str, int]:
        """'stage:reason' -> items, over all stages."""
        with self._lock:
            return {
                f"{s}:{r}": n for s, c in self.stages.items() for r, n in sorted(c.fallback_reasons.items())
            }

    def report(self, num_notes: int = 0) -> dict[str, Any]:
        """Per-stage totals, plus per-note averages when num_notes is given."""
        with self._lock:
            out: dict[str, Any] = {stage: asdict(cost) for stage, cost in self.stages.items()}
        if num_notes:
            for row in out.values():
                row["tokens_per_note"] = (row["prompt_tokens"] + row["completion_tokens"]) / num_notes
                row["calls_per_note"] = row["calls"] / num_notes
        return out

    @classmethod
    def from_report(cls, report: dict[str, Any]) -> CostMeter:
        meter = cls()
        for stage, row in report.items():
            fields = {k: row[k] for k in StageCost.__slots__ if k in row}
            fields["fallback_reasons"] = dict(fields.get("fallback_reasons") or {})
            meter.stages[stage] = StageCost(**fields)
        return meter
