"""What real servers do that the plain stand-in did not: response_format dialects, permanent format errors,
truncation at max_tokens, well-formed nonsense (semantic guards), and queueing behind few slots."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import pytest
from llm_server import StandIn, StubFallback

from engine.annotate.schemas import EvolveRequest
from engine.config import Config, Dialect
from engine.cost import CostMeter
from engine.errors import ConfigError, LLMFormatRejected
from engine.llm import LLMAnnotator, make_llm_annotator, prompts
from engine.model.note import Interaction, Note, new_id

pytest_plugins = ["conftest_llm"]

T0 = datetime(2024, 5, 1, 12, tzinfo=UTC)


@contextmanager
def annotator(url: str, cost: CostMeter, fallback: StubFallback, **overrides: Any) -> Iterator[LLMAnnotator]:
    settings: dict[str, Any] = {"llm_retries": 2, "llm_backoff_s": 0.002, "llm_timeout_s": 10.0}
    settings.update(overrides)
    a = make_llm_annotator(Config.of(annotator="llm", llm_url=url, **settings), cost, fallback)
    try:
        yield a  # type: ignore[misc]
    finally:
        a.close()


def items(n: int, fault: str = "") -> list[Interaction]:
    return [
        Interaction(f"Ana planned trip number {i} to Lisbon with Bo {fault if i == 0 else ''}", T0, "ana")
        for i in range(n)
    ]


@pytest.fixture
def cost() -> CostMeter:
    return CostMeter()


@pytest.fixture
def fallback() -> StubFallback:
    return StubFallback()


# --- dialects -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("server", "used", "rejected"),
    [("json_schema", "json_schema", 0), ("llama-cpp-python", "json_object", 1), ("no-format", None, 2)],
)
def test_auto_detects_the_dialect_on_the_first_call(
    server: str, used: str | None, rejected: int, llm_server: StandIn, cost: CostMeter, fallback: StubFallback
) -> None:
    llm_server.state.dialect = server
    with annotator(llm_server.url, cost, fallback, llm_max_in_flight=8) as a:
        out = a.annotate(items(6))
    assert [x.annotated_by for x in out] == ["llm"] * 6
    seen = llm_server.state.seen
    # Only the first request probes; the other five waited for it and went straight to the right form.
    assert [s.fmt for s in seen if s.status == 200] == [used] * 6
    assert sum(1 for s in seen if s.status != 200) == rejected
    row = cost.stages["note"]
    assert (row.calls, row.errors, row.retries, row.fallbacks) == (6 + rejected, rejected, 0, 0)


@pytest.mark.parametrize(("dialect", "fmt"), [("json_schema", "json_schema"), ("json_object", "json_object")])
def test_a_chosen_dialect_is_sent_as_is(
    dialect: str, fmt: str, llm_server: StandIn, cost: CostMeter, fallback: StubFallback
) -> None:
    with annotator(llm_server.url, cost, fallback, llm_dialect=dialect) as a:
        assert [x.annotated_by for x in a.annotate(items(2))] == ["llm"] * 2
    assert {s.fmt for s in llm_server.state.seen} == {fmt}


def test_dialect_none_sends_no_response_format_and_still_validates(
    llm_server: StandIn, cost: CostMeter, fallback: StubFallback
) -> None:
    with annotator(llm_server.url, cost, fallback, llm_dialect="none") as a:
        out = a.annotate(items(2, "<<fault:note:timestamp:all>>"))
    assert {s.fmt for s in llm_server.state.seen} == {None}
    assert [x.annotated_by for x in out] == ["embedded-fallback", "llm"]


def test_format_rejection_is_permanent_not_retried_and_counted(
    llm_server: StandIn, cost: CostMeter, fallback: StubFallback
) -> None:
    """llama-cpp-python answers the OpenAI form with a 500 naming the format: one request per item, no retry."""
    llm_server.state.dialect = "llama-cpp-python"
    with annotator(llm_server.url, cost, fallback, llm_dialect="json_schema") as a:
        out = a.annotate(items(3))
    assert [x.annotated_by for x in out] == ["embedded-fallback"] * 3
    assert [s.status for s in llm_server.state.seen] == [500] * 3
    row = cost.stages["note"]
    assert (row.calls, row.errors, row.retries, row.fallbacks) == (3, 3, 0, 3)
    assert row.fallback_reasons == {"format": 3}


def test_a_plain_500_is_still_retried(llm_server: StandIn, cost: CostMeter, fallback: StubFallback) -> None:
    with annotator(llm_server.url, cost, fallback) as a:
        out = a.annotate(items(1, "<<fault:note:500:1>>"))
    assert out[0].annotated_by == "llm" and cost.stages["note"].retries == 1


def test_client_raises_format_rejection_for_the_body_that_names_it(llm_server: StandIn) -> None:
    from engine.llm.client import HTTPBackend

    llm_server.state.dialect = "llama-cpp-python"
    b = HTTPBackend(
        Config.of(annotator="llm", llm_url=llm_server.url, llm_dialect="json_schema"), CostMeter()
    )
    try:
        [answer] = b.complete_batch("note", [prompts.note_prompt(items(1)[0], 1000)], prompts.SCHEMAS["note"])
    finally:
        b.close()
    assert isinstance(answer, LLMFormatRejected) and "json_object" in str(answer)


def test_bad_dialect_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="llm_dialect"):
        Config.of(llm_dialect="xml")
    assert Config.of(llm_dialect="none").llm.dialect is Dialect.NONE


# --- bounded schemas and truncation -----------------------------------------------------------------------


def _bounded(schema: Any) -> Iterator[str]:
    """Paths of lists without maxItems and strings without maxLength (there should be none)."""
    if isinstance(schema, dict):
        if schema.get("type") == "array" and "maxItems" not in schema:
            yield "array"
        if schema.get("type") == "string" and "maxLength" not in schema:
            yield "string"
        for value in schema.values():
            yield from _bounded(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _bounded(value)


def test_every_list_and_string_is_bounded() -> None:
    schemas = prompts.stage_schemas(Config.of(max_keywords=4, max_tags=2).write)
    assert all(not list(_bounded(s)) for s in schemas.values())
    note = schemas["note"]["properties"]
    assert (note["keywords"]["minItems"], note["keywords"]["maxItems"], note["tags"]["maxItems"]) == (1, 4, 2)


def test_truncated_answer_is_asked_again_with_a_bigger_budget(
    llm_server: StandIn, cost: CostMeter, fallback: StubFallback
) -> None:
    with annotator(llm_server.url, cost, fallback, llm_max_tokens=300) as a:
        out = a.annotate(items(2, "<<fault:note:length>>"))
    assert [x.annotated_by for x in out] == ["llm", "llm"]
    budgets = sorted(s.max_tokens for s in llm_server.state.seen)
    assert budgets == [300, 300, 600]  # the cut-off one again, with twice the room
    assert cost.stages["note"].retries == 1


def test_truncated_twice_falls_back_counted_as_truncation(
    llm_server: StandIn, cost: CostMeter, fallback: StubFallback
) -> None:
    with annotator(llm_server.url, cost, fallback) as a:
        out = a.annotate(items(2, "<<fault:note:length:all>>"))
    assert [x.annotated_by for x in out] == ["embedded-fallback", "llm"]
    assert cost.stages["note"].fallback_reasons == {"truncated": 1}


# --- semantic guards ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fault", "reason"), [("timestamp", "timestamp_context"), ("empty_keywords", "empty_keywords")]
)
def test_nonsense_notes_fall_back_by_reason(
    fault: str, reason: str, llm_server: StandIn, cost: CostMeter, fallback: StubFallback
) -> None:
    with annotator(llm_server.url, cost, fallback) as a:
        out = a.annotate(items(3, f"<<fault:note:{fault}:all>>"))
    assert [x.annotated_by for x in out] == ["embedded-fallback", "llm", "llm"]
    assert out[0].context == "fallback context"  # the fallback's, never the timestamp
    assert cost.stages["note"].fallback_reasons == {reason: 1}


def test_nonsense_once_is_repaired_by_the_re_ask(
    llm_server: StandIn, cost: CostMeter, fallback: StubFallback
) -> None:
    with annotator(llm_server.url, cost, fallback) as a:
        out = a.annotate(items(1, "<<fault:note:timestamp>>"))
    assert out[0].annotated_by == "llm" and "2024" not in out[0].context
    assert llm_server.state.seen[-1].stage == "note" and cost.stages["note"].retries == 1


def _note(content: str, speaker: str, **fields: Any) -> Note:
    return Note(id=new_id(), tenant="t", content=content, timestamp=T0, speaker=speaker, **fields)


def test_off_subject_evolution_falls_back_and_the_neighbour_keeps_its_subject(
    llm_server: StandIn, cost: CostMeter, fallback: StubFallback
) -> None:
    maya = _note(
        "I'm Maya, I work as a nurse at Mount Sinai",
        "maya",
        keywords=["Maya", "nurse", "Mount Sinai"],
        tags=["work"],
        context="Maya introduces herself as a nurse at Mount Sinai.",
    )
    hike = _note(
        "We hiked Mount Rainier near Seattle <<fault:evolve:off_subject:all>>", "leo", keywords=["Rainier"]
    )
    with annotator(llm_server.url, cost, fallback) as a:
        [updates] = a.evolve([EvolveRequest(hike, [maya])])
    assert updates == []  # the stub fallback's answer, not the rewrite
    assert fallback.calls["evolve"] == 1
    reasons = cost.stages["evolve"].fallback_reasons
    assert set(reasons) <= {"off_subject_keywords", "timestamp_context"} and sum(reasons.values()) == 1


def test_a_clean_evolution_passes_the_guard(
    llm_server: StandIn, cost: CostMeter, fallback: StubFallback
) -> None:
    old = _note(
        "Ana lives in Lisbon", "ana", keywords=["Lisbon"], tags=["home"], context="Ana lives in Lisbon."
    )
    new = _note("Ana visited Lisbon's old town", "ana", keywords=["Lisbon"])
    with annotator(llm_server.url, cost, fallback) as a:
        [updates] = a.evolve([EvolveRequest(new, [old])])
    assert len(updates) == 1 and updates[0].target == old.id and cost.stages["evolve"].fallbacks == 0


# --- queueing behind few server slots ------------------------------------------------------------------------


def test_timeout_scales_with_requests_queued_behind_the_servers_slots(
    llm_server: StandIn, cost: CostMeter, fallback: StubFallback
) -> None:
    """One slot, four in flight, 0.3 s a request: the last answer comes after 1.2 s. The server's /props says
    one slot, so a 0.5 s timeout becomes 2 s: nothing times out, nothing is resent."""
    llm_server.state.slots, llm_server.state.latency_s = 1, 0.3
    with annotator(llm_server.url, cost, fallback, llm_max_in_flight=4, llm_timeout_s=0.5) as a:
        out = a.annotate(items(4))
    assert [x.annotated_by for x in out] == ["llm"] * 4
    assert (len(llm_server.state.seen), cost.stages["note"].errors) == (4, 0)


def test_without_slot_knowledge_timeouts_fall_back_without_a_retry_pile_up(
    llm_server: StandIn, cost: CostMeter, fallback: StubFallback
) -> None:
    llm_server.state.slots, llm_server.state.latency_s = 1, 0.3
    settings = {"llm_max_in_flight": 4, "llm_timeout_s": 0.5, "llm_server_slots": 4}  # a wrong claim
    with annotator(llm_server.url, cost, fallback, **settings) as a:
        out = a.annotate(items(4))
    timed_out = cost.stages["note"].fallback_reasons.get("timeout", 0)
    assert timed_out >= 1
    assert [x.annotated_by for x in out].count("embedded-fallback") == timed_out
    assert cost.stages["note"].retries == 0  # a timed-out request is never sent again...
    deadline = time.monotonic() + 5
    while (
        llm_server.state.in_flight and time.monotonic() < deadline
    ):  # the server finishes the abandoned ones
        time.sleep(0.05)
    assert len(llm_server.state.seen) == 4  # ...so the server worked each item exactly once
