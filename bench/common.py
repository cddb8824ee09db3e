"""Shared bench plumbing: result tables, JSON output, plots, LoCoMo loading."""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
LOCOMO = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "locomo" / "locomo-dev.json"


def write_json(name: str, payload: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    payload = {"bench": name, "when": time.strftime("%Y-%m-%dT%H:%M:%S"), "machine": machine(), **payload}
    path.write_text(json.dumps(payload, indent=1, default=str))
    return path


def disk_bytes(folder: Path) -> int:
    """Bytes of the files under `folder`, a file linked more than once counted once (snapshots share
    their versions segments as hard links)."""
    seen, total = set(), 0
    for path in folder.rglob("*"):
        st = path.stat()
        if path.is_file() and (st.st_dev, st.st_ino) not in seen:
            seen.add((st.st_dev, st.st_ino))
            total += st.st_size
    return total


def machine() -> dict[str, Any]:
    import os

    return {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()}


def table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    cells = [[_fmt(r.get(c)) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    line = " | ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))
    rule = "-+-".join("-" * w for w in widths)
    body = [" | ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join([line, rule, *body])


def overrides(pairs: list[str]) -> dict[str, Any]:
    """`--set NAME=VALUE` flags as Config.of overrides: 'prf_weight=0' -> {'prf_weight': 0}; booleans and
    numbers parsed ("10" stays an int: a depth or a count is used as an index), the rest kept as text."""
    return {name: _value(text) for name, _, text in (pair.partition("=") for pair in pairs)}


def _value(text: str) -> Any:
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 1000 else f"{value:,.0f}"
    return "" if value is None else str(value)


def bar_plot(name: str, groups: dict[str, dict[str, float]], ylabel: str, title: str) -> Path:
    """One PNG: groups on the x axis, one bar per series."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = list(groups)
    series = list(next(iter(groups.values())))
    width = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(max(6, len(labels) * 1.2), 4))
    for i, s in enumerate(series):
        ax.bar([x + i * width for x in range(len(labels))], [groups[g][s] for g in labels], width, label=s)
    ax.set_xticks([x + width * (len(series) - 1) / 2 for x in range(len(labels))], labels)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend()
    return save_figure(fig, name)


def save_figure(fig: Any, name: str, dpi: int = 110) -> Path:
    """Lay out, write bench/results/<name>.png, close; returns the path."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.png"
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path
