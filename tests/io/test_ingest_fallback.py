"""`amem ingest` against an LLM server: exit status past --max-fallback-rate, reasons printed; LLM flags/env."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from llm_server import StandIn, dead_url  # tests/llm is on pytest's pythonpath

from engine.cli import main
from engine.config import Config
from engine.errors import ConfigError

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample_chat.jsonl"


def _chat(tmp_path: Path, n: int = 3) -> Path:
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(SAMPLE.read_text().splitlines(keepends=True)[:n]))
    return path


def test_all_fallbacks_exit_non_zero_with_the_reasons(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's silent failure: 100% fallback used to exit 0."""
    args = ["ingest", str(_chat(tmp_path)), "--store", str(tmp_path / "s"), "--llm-url", dead_url()]
    assert main([*args, "--llm-timeout", "2"]) == 3
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert report["notes"] == 3 and report["llm_fallback_rate"] == 1.0  # every line stored all the same
    assert "100% of LLM items fell back" in err and "note:transport x3" in err


def test_a_higher_limit_accepts_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["ingest", str(_chat(tmp_path, 2)), "--store", str(tmp_path / "s"), "--llm-url", dead_url()]
    assert main([*args, "--max-fallback-rate", "1.0", "--llm-max-in-flight", "2"]) == 0
    assert "fell back" not in capsys.readouterr().err


def test_a_working_server_exits_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    server = StandIn().start()
    try:
        args = ["ingest", str(_chat(tmp_path)), "--store", str(tmp_path / "s"), "--llm-url", server.url]
        assert main([*args, "--llm-dialect", "json_schema"]) == 0
    finally:
        server.stop()
    report = json.loads(capsys.readouterr().out)
    assert report["llm_fallback_rate"] == 0.0 and report["cost"]["note"]["calls"] == 3


def test_llm_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AMEM_LLM_MAX_IN_FLIGHT", "3")
    monkeypatch.setenv("AMEM_LLM_TIMEOUT_S", "7.5")
    llm = Config.from_env().llm
    assert (llm.max_in_flight, llm.timeout_s) == (3, 7.5)
    assert Config.from_env(llm_max_in_flight=5).llm.max_in_flight == 5  # a flag beats the environment
    monkeypatch.setenv("AMEM_LLM_TIMEOUT_S", "soon")
    with pytest.raises(ConfigError, match="AMEM_LLM_TIMEOUT_S"):
        Config.from_env()
