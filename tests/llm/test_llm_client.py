"""The async client and HTTP backend: concurrency, token throttling, retries, accounting, sync entry."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime

import pytest
from llm_server import StandIn, dead_url

from engine.config import Config
from engine.cost import CostMeter
from engine.errors import LLMBadOutput, LLMError, LLMRetryable, LLMTimeout
from engine.llm import prompts
from engine.llm.client import HTTPBackend, LoopThread, TokenGate, api_base, estimate_tokens
from engine.model.note import Interaction

pytest_plugins = ["conftest_llm"]

T0 = datetime(2024, 5, 1, tzinfo=UTC)
SCHEMA = prompts.SCHEMAS["note"]


def note_prompts(n: int, suffix: str = "") -> list[prompts.Prompt]:
    return [
        prompts.note_prompt(Interaction(f"Ana visits Lisbon day {i} {suffix}", T0, "ana"), 8000)
        for i in range(n)
    ]


def backend(url: str, cost: CostMeter, **overrides: object) -> HTTPBackend:
    settings: dict[str, object] = {"llm_retries": 2, "llm_backoff_s": 0.002, "llm_timeout_s": 10.0}
    settings.update(overrides)
    return HTTPBackend(Config.of(annotator="llm", llm_url=url, **settings), cost)  # type: ignore[arg-type]


# --- pure pieces ------------------------------------------------------------------------------------------


def test_api_base_and_estimate() -> None:
    assert api_base("http://h:8000") == api_base("http://h:8000/v1/") == "http://h:8000/v1"
    assert estimate_tokens([{"role": "user", "content": "x" * 400}], 50) == 150


def test_gate_bounds_requests_and_tokens_fifo() -> None:
    async def scenario() -> list[str]:
        gate = TokenGate(max_requests=3, max_tokens=100)
        order: list[str] = []

        async def job(name: str, tokens: int) -> None:
            charged = await gate.acquire(tokens)
            order.append(name)
            assert gate.num_requests <= 3 and gate.num_tokens <= 100
            await asyncio.sleep(0.01)
            gate.release(charged)

        await asyncio.gather(job("a", 60), job("b", 60), job("huge", 500), job("c", 10), job("d", 10))
        assert (gate.num_requests, gate.num_tokens) == (0, 0)
        return order

    # b waits for a (tokens); huge is clamped to the budget and runs alone; FIFO keeps c, d behind it.
    assert asyncio.run(scenario()) == ["a", "b", "huge", "c", "d"]


def test_gate_cancelled_waiter_gives_nothing_away() -> None:
    async def scenario() -> tuple[int, int]:
        gate = TokenGate(max_requests=1, max_tokens=10)
        await gate.acquire(5)
        waiter = asyncio.ensure_future(gate.acquire(5))
        await asyncio.sleep(0)
        waiter.cancel()
        await asyncio.gather(waiter, return_exceptions=True)
        gate.release(5)
        return gate.num_requests, gate.num_tokens

    assert asyncio.run(scenario()) == (0, 0)


# --- over HTTP ----------------------------------------------------------------------------------------------


def test_batch_is_sent_concurrently(llm_server: StandIn) -> None:
    llm_server.state.latency_s = 0.1
    # Dialect and slots given: no first-call probe, so all 128 start together.
    b = backend(
        llm_server.url, CostMeter(), llm_max_in_flight=64, llm_dialect="json_schema", llm_server_slots=64
    )
    try:
        answers = b.complete_batch("note", note_prompts(128), SCHEMA)
    finally:
        b.close()
    assert all(isinstance(a, str) for a in answers)
    assert 48 <= llm_server.state.max_in_flight <= 64


def test_token_budget_throttles_below_request_limit(llm_server: StandIn) -> None:
    llm_server.state.latency_s = 0.02
    one = estimate_tokens(note_prompts(1)[0], 512)
    b = backend(llm_server.url, CostMeter(), llm_max_in_flight=64, llm_max_tokens_in_flight=3 * one + 10)
    try:
        assert all(isinstance(a, str) for a in b.complete_batch("note", note_prompts(24), SCHEMA))
    finally:
        b.close()
    assert 2 <= llm_server.state.max_in_flight <= 3


def test_usage_is_accounted_per_stage(llm_server: StandIn) -> None:
    cost = CostMeter()
    b = backend(llm_server.url, cost)
    try:
        b.complete_batch("note", note_prompts(10), SCHEMA)
    finally:
        b.close()
    row, served = cost.stages["note"], llm_server.state.ok("note")
    assert row.calls == len(served) == 10
    assert row.prompt_tokens == sum(s.prompt_tokens for s in served)
    assert row.completion_tokens == sum(s.completion_tokens for s in served)
    assert cost.report(num_notes=10)["note"]["calls_per_note"] == 1.0


@pytest.mark.parametrize("kind", ["429", "500"])
def test_retryable_faults_are_retried_and_counted(kind: str, llm_server: StandIn) -> None:
    cost = CostMeter()
    b = backend(llm_server.url, cost)
    batch = (
        note_prompts(4)
        + note_prompts(2, f"<<fault:note:{kind}:2>>")
        + note_prompts(1, f"<<fault:note:{kind}:all>>")
    )
    try:
        answers = b.complete_batch("note", batch, SCHEMA)
    finally:
        b.close()
    assert all(isinstance(a, str) for a in answers[:6])
    assert isinstance(answers[6], LLMRetryable)
    row = cost.stages["note"]
    assert row.retries == 2 * 2 + 2  # two faulty twice, one faulty thrice (2 retries allowed)
    assert (row.calls, row.errors) == (6 + 2 * 2 + 3, 2 * 2 + 3)  # failed attempts are calls too
    assert llm_server.state.count("note", kind) == 2 * 2 + 3


def test_a_timeout_is_not_retried(llm_server: StandIn) -> None:
    """The server still works a request the client gave up on: resending it would queue a second copy."""
    cost = CostMeter()
    b = backend(llm_server.url, cost, llm_timeout_s=0.4)
    try:
        answers = b.complete_batch(
            "note", note_prompts(2) + note_prompts(1, "<<fault:note:timeout:all>>"), SCHEMA
        )
    finally:
        b.close()
    assert isinstance(answers[2], LLMTimeout) and all(isinstance(a, str) for a in answers[:2])
    assert (cost.stages["note"].retries, cost.stages["note"].errors) == (0, 1)
    assert llm_server.state.count("note", "timeout") == 1


def test_dead_server_gives_retryable_errors(llm_server: StandIn) -> None:
    cost = CostMeter()
    b = backend(dead_url(), cost)
    try:
        answers = b.complete_batch("note", note_prompts(3), SCHEMA)
    finally:
        b.close()
    assert all(isinstance(a, LLMRetryable) for a in answers)
    assert (cost.stages["note"].calls, cost.stages["note"].errors, cost.stages["note"].retries) == (9, 9, 6)


def test_client_errors_are_not_retried(llm_server: StandIn) -> None:
    cost = CostMeter()
    b = backend(llm_server.url.removesuffix("/v1") + "/nope/v1", cost)  # 404
    try:
        [answer] = b.complete_batch("note", note_prompts(1), SCHEMA)
    finally:
        b.close()
    assert isinstance(answer, LLMError) and not isinstance(answer, LLMRetryable) and "404" in str(answer)
    assert cost.stages["note"].retries == 0


def test_sync_entry_works_inside_a_running_loop_and_from_threads(llm_server: StandIn) -> None:
    b = backend(llm_server.url, CostMeter())

    async def handler() -> list[str | LLMError]:  # e.g. an async web handler calling the sync pipeline
        return b.complete_batch("note", note_prompts(3), SCHEMA)

    results: list[list[str | LLMError]] = []
    try:
        results.append(asyncio.run(handler()))
        threads = [
            threading.Thread(target=lambda: results.append(b.complete_batch("note", note_prompts(5), SCHEMA)))
            for _ in range(4)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        b.close()
    assert sorted(len(r) for r in results) == [3, 5, 5, 5, 5]
    assert all(isinstance(a, str) for r in results for a in r)


def test_loop_thread_refuses_reentry() -> None:
    loop = LoopThread("t")

    async def inner() -> None:
        async def nothing() -> None:
            return None

        loop.run(nothing())

    try:
        with pytest.raises(RuntimeError, match="deadlock"):
            loop.run(inner())
    finally:
        loop.close()


def test_missing_usage_is_estimated_and_garbled_body_is_bad_output(llm_server: StandIn) -> None:
    cost = CostMeter()
    b = backend(llm_server.url, cost)
    try:
        plain, garbled = b.complete_batch(
            "note",
            note_prompts(1, "<<fault:note:no_usage>>") + note_prompts(1, "<<fault:note:garbled>> x"),
            SCHEMA,
        )
    finally:
        b.close()
    assert isinstance(plain, str) and isinstance(garbled, LLMBadOutput)
    row = cost.stages["note"]
    assert row.calls == 2 and row.prompt_tokens > 0 and row.completion_tokens > 0
