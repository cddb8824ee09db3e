"""bench/gpu_check.py is import-safe, --help-able, and skips every check cleanly without CUDA."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench import gpu_check
from engine.device import cuda_available

ROOT = Path(__file__).resolve().parents[1]


def test_importing_it_loads_no_gpu_stack() -> None:
    code = "import sys, bench.gpu_check; print(sorted(m for m in ('torch', 'faiss', 'vllm') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        gpu_check.main(["--help"])
    assert exited.value.code == 0 and "--model" in capsys.readouterr().out


@pytest.mark.skipif(cuda_available(), reason="a CUDA device is present: the checks would really run")
def test_without_cuda_every_check_is_skipped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "gpu.json"
    assert gpu_check.main(["--out", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["cuda"] is False and set(report["checks"]) == set(gpu_check.CHECKS)
    assert {r["status"] for r in report["checks"].values()} == {"skipped"}
    assert json.loads(capsys.readouterr().out) == report
