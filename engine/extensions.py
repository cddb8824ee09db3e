"""Runners other packages register for amem's `--ray` paths, found by entry point, never imported by name.

`ray_jobs` declares them in pyproject.toml (group `amem.ray`: `ingest`, `serve`), so the engine stays
below the Ray jobs in the import graph and runs where Ray is not installed.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from engine.errors import ConfigError

GROUP = "amem.ray"


def ray_runner(name: str) -> Callable[..., Any]:
    """The registered Ray runner `name` ('ingest' or 'serve')."""
    found = entry_points(group=GROUP, name=name)
    if not found:
        raise ConfigError(f"no Ray runner {name!r} is installed (group {GROUP!r}); reinstall amem")
    return next(iter(found)).load()
