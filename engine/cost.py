"""Cost accounting: LLM calls, tokens, latency, retries and fallbacks per stage."""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field
from typing import Any

from engine.annotate.schemas import STAGES


@dataclass(slots=True)
class StageCost:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    retries: int = 0
    fallbacks: int = 0
    dropped_links: int = 0
    """Link/evolve targets the model named that were not offered (dropped, counted)."""

    def add(self, other: StageCost) -> None:
        for name in self.__slots__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


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

    def merge(self, other: CostMeter) -> None:
        with self._lock:
            for stage, cost in other.stages.items():
                self.stages.setdefault(stage, StageCost()).add(cost)

    def total_tokens(self) -> int:
        return sum(c.prompt_tokens + c.completion_tokens for c in self.stages.values())

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
            meter.stages[stage] = StageCost(**fields)
        return meter
