"""Joining (or starting) the Ray cluster the jobs run on."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import ray


@contextmanager
def ray_session() -> Iterator[None]:
    """The running Ray cluster (ray.init already called, or RAY_ADDRESS set), else a local one stopped at the end."""
    if ray.is_initialized():
        yield
        return
    ray.init(include_dashboard=False, runtime_env=worker_env(), log_to_driver=False)
    try:
        yield
    finally:
        ray.shutdown()


def worker_env() -> dict[str, Any]:
    """Workers import engine/ray_jobs from this checkout even when amem is not pip-installed.

    PYTHONPATH only helps workers on this machine; on a multi-node cluster install amem on every node.
    """
    root = str(Path(__file__).resolve().parents[1])
    return {"env_vars": {"PYTHONPATH": root}}
