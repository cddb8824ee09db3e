"""The LLM annotator against a real server: llama-server + SmolLM2-135M-Instruct on loopback.

Asserts the protocol, not quality a 135M model cannot give: every request answered 200 in the dialect
detected on the first call, usage recorded, calls made, no transport, timeout or format fallbacks (a
semantic rejection of a poor answer is allowed and counted). One request in flight, a small token budget.
Needs `bash scripts/llama_server.sh` (skipped otherwise). Run: pytest -q -m llm_real tests/integration
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine import Config, Memory
from integration.llama import missing, serve

pytestmark = [
    pytest.mark.llm_real,
    pytest.mark.skipif(missing() is not None, reason=missing() or ""),
]

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample_chat.jsonl"
TURNS = 3
NO_ANSWER = {"transport", "timeout", "format", "http"}
"""Fallback reasons that mean a request got no usable HTTP answer."""


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with serve(ctx=2048, parallel=1) as url:
        yield url


def _turns() -> list[dict[str, Any]]:
    return [json.loads(line) for line in SAMPLE.read_text().splitlines()[:TURNS]]


@pytest.mark.timeout(900)  # ~60 s on an idle 2-core box; ~200 s measured at load 18
def test_memory_with_the_llm_annotator_over_a_real_server(base_url: str, encoder: Any) -> None:
    config = Config.of(
        annotator="llm",
        llm_url=base_url,
        llm_max_in_flight=1,
        llm_max_tokens=128,
        llm_timeout_s=300,  # a loaded CI box decodes a few tokens a second; the protocol is under test
        k_neighbours=2,
    )
    with Memory(config=config, encoder=encoder) as mem:
        mem.add_many(_turns(), tenant="real")
        notes = mem.notes("real")
        cost = mem.cost
        client = mem.annotator._backend._client  # type: ignore[attr-defined]
    assert len(notes) == TURNS
    assert client.dialect is not None and client.dialect.value == "json_schema"  # llama-server's form
    note = cost.stages["note"]
    assert note.calls >= TURNS and note.prompt_tokens > 0 and note.completion_tokens > 0
    for stage in ("note", "link", "evolve"):
        row = cost.stages[stage]
        assert row.errors == 0, (stage, row)  # every request answered HTTP 200
        assert not NO_ANSWER & set(row.fallback_reasons), (stage, row.fallback_reasons)
    assert all(n.keywords and n.context for n in notes)
    assert all(n.annotated_by in ("llm", "embedded-fallback") for n in notes)
