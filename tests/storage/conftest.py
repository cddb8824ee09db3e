"""The damaged-store tests' template: a store whose newest state is only in the log (test_corruption.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.storage.damaged import BATCHES, ROOT, TENANT


@pytest.fixture(scope="session")
def victim_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("template")
    spec = base / "input.json"
    spec.write_text(json.dumps({"tenant": TENANT, "batches": BATCHES}))
    store = base / "store"
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "tests" / "storage" / "crash_child.py"),
            str(store),
            str(spec),
            "--checkpoint-after",
            "0",
            "1",
            "--exit-without-close",
        ],
        cwd=ROOT,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        timeout=120,
    )
    folder = store / "tenants" / TENANT
    assert sorted(p.name for p in folder.glob("snap-*")) == ["snap-000000000001", "snap-000000000002"]
    return store


@pytest.fixture
def victim(victim_template: Path, tmp_path: Path) -> Path:
    """A copy of the template to harm."""
    copy = tmp_path / "store"
    shutil.copytree(victim_template, copy, copy_function=_linked_stay_linked())
    return copy


def _linked_stay_linked() -> Callable[[str, str], object]:
    """A copy function that keeps hard links (snapshots share versions segments) as links in the copy."""
    first: dict[tuple[int, int], str] = {}

    def copy(src: str, dst: str) -> object:
        st = os.stat(src)
        key = (st.st_dev, st.st_ino)
        if key in first:
            os.link(first[key], dst)
            return dst
        first[key] = dst
        return shutil.copy2(src, dst)

    return copy
