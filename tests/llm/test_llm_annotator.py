"""LLMAnnotator against the loopback stand-in: every fault, every stage; plus the pure validators."""

from __future__ import annotations

import json
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from llm_server import CONTENT_FAULTS, FAULTS, StandIn, StubFallback, dead_url

from engine.annotate.schemas import Candidate, EvolveRequest, LinkRequest
from engine.config import Config
from engine.cost import CostMeter
from engine.errors import ConfigError, LLMBadOutput
from engine.llm import LLMAnnotator, answers, make_llm_annotator, prompts
from engine.llm.client import HTTPBackend
from engine.model.note import Interaction, Note, new_id

pytest_plugins = ["conftest_llm"]

T0 = datetime(2024, 5, 1, 12, tzinfo=UTC)


def note(content: str, speaker: str = "ana", **fields: Any) -> Note:
    return Note(
        id=new_id(),
        tenant="t",
        content=content,
        timestamp=T0,
        speaker=speaker,
        keywords=fields.pop("keywords", ["k"]),
        tags=fields.pop("tags", ["t"]),
        context=fields.pop("context", "ctx"),
        **fields,
    )


def link_request(content: str, candidates: list[Note]) -> LinkRequest:
    return LinkRequest(note(content), [Candidate(h, c, 0.9 - h / 100) for h, c in enumerate(candidates)])


@pytest.fixture
def cost() -> CostMeter:
    return CostMeter()


@pytest.fixture
def fallback() -> StubFallback:
    return StubFallback()


def _timeout_for(kind: str) -> float:
    """Short enough that an injected 'timeout' fault times out quickly."""
    return 0.4 if kind == "timeout" else 10.0


@contextmanager
def annotator(
    server_url: str, cost: CostMeter, fallback: StubFallback, **overrides: Any
) -> Iterator[LLMAnnotator]:
    config = Config.of(
        annotator="llm",
        llm_url=server_url,
        llm_retries=2,
        llm_backoff_s=0.002,
        llm_timeout_s=overrides.pop("llm_timeout_s", 10.0),
        **overrides,
    )
    a = make_llm_annotator(config, cost, fallback)
    try:
        yield a  # type: ignore[misc]
    finally:
        a.close()


@pytest.fixture
def ann(llm_server: StandIn, cost: CostMeter, fallback: StubFallback):
    with annotator(llm_server.url, cost, fallback) as a:
        yield a


# --- validators: pure, no server ----------------------------------------------------------------------------


def test_parse_annotation_accepts_and_cleans() -> None:
    raw = (
        '```json\n{"keywords": ["Paris", "paris", " trip  plan "], "tags": ["travel"],'
        ' "context": " A trip. "}\n```'
    )
    got = answers.parse_annotation(raw, max_keywords=12, max_tags=5)
    assert got.keywords == ["Paris", "trip plan"] and got.tags == ["travel"] and got.context == "A trip."
    assert got.annotated_by == "llm"


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ('{"keywords": ["a"], "tags": []', "not valid JSON"),
        ('["a"]', "JSON list"),
        ('{"keywords": ["a"], "tags": []}', "'context'"),
        ('{"keywords": "a, b", "tags": [], "context": "c"}', "'keywords'"),
        ('{"keywords": ["a", 3], "tags": [], "context": "c"}', "'keywords[1]'"),
        ('{"keywords": [], "tags": [], "context": "c"}', "'keywords': empty"),
    ],
)
def test_parse_annotation_names_the_bad_field(raw: str, field: str) -> None:
    with pytest.raises(LLMBadOutput, match=field.replace("[", r"\[").replace("]", r"\]")):
        answers.parse_annotation(raw, max_keywords=12, max_tags=5)


def test_parse_links_maps_handles_to_ids_and_counts_unknown() -> None:
    cands = [Candidate(h, note(f"n{h}"), 0.5) for h in range(3)]
    raw = json.dumps(
        {
            "links": [
                {"handle": 2, "reason": "r2"},
                {"handle": 7, "reason": "?"},
                {"handle": 2, "reason": "dup"},
                {"handle": 0, "reason": "r0"},
            ]
        }
    )
    choices, dropped = answers.parse_links(raw, cands)
    assert [c.target for c in choices] == [cands[2].note.id, cands[0].note.id] and dropped == 1
    with pytest.raises(LLMBadOutput, match=r"links\[0\].handle"):
        answers.parse_links('{"links": [{"handle": true, "reason": "r"}]}', cands)


def test_parse_updates_targets_by_handle_not_rank() -> None:
    """The reference code writes evolution back by result rank; handle 1 must change neighbour 1 only."""
    neighbours = [note("first"), note("second"), note("third")]
    raw = json.dumps(
        {
            "updates": [
                {
                    "handle": 1,
                    "context": "new ctx",
                    "keywords": None,
                    "tags": ["x"],
                    "supersedes": True,
                    "reason": "moved",
                },
                {
                    "handle": 5,
                    "context": None,
                    "keywords": None,
                    "tags": None,
                    "supersedes": False,
                    "reason": "",
                },
            ]
        }
    )
    updates, dropped = answers.parse_updates(raw, neighbours, max_keywords=12, max_tags=5)
    assert dropped == 1 and len(updates) == 1
    assert updates[0].target == neighbours[1].id and updates[0].supersedes and updates[0].keywords is None
    with pytest.raises(LLMBadOutput, match=r"updates\[0\].supersedes"):
        answers.parse_updates(raw.replace("true", '"yes"'), neighbours, max_keywords=12, max_tags=5)


def test_prompts_fixed_prefix_and_variable_json_last() -> None:
    a = prompts.note_prompt(Interaction("hello there", T0, "ana"), 8000)
    b = prompts.note_prompt(Interaction("something else entirely", T0, "bo"), 8000)
    assert a[0] == b[0] and a[0]["role"] == "system" and prompts.PROMPT_VERSION in a[0]["content"]
    assert json.loads(a[-1]["content"])["content"] == "hello there"
    req = link_request("new", [note("c0"), note("c1")])
    payload = json.loads(prompts.link_prompt(req, 8000)[-1]["content"])
    assert [c["handle"] for c in payload["candidates"]] == [0, 1]
    keys = {"type", "properties", "required", "additionalProperties"}
    assert all(set(schema) == keys for schema in prompts.SCHEMAS.values())


# --- end to end over HTTP ---------------------------------------------------------------------------------


def items(n: int, fault: str = "", every: int = 1) -> list[Interaction]:
    return [
        Interaction(
            f"Ana planned trip number {i} to Lisbon with Bo {fault if i % every == 0 else ''}",
            T0 + timedelta(minutes=i),
            "ana",
        )
        for i in range(n)
    ]


def test_clean_batch_all_llm(ann: LLMAnnotator, llm_server: StandIn, cost: CostMeter) -> None:
    out = ann.annotate(items(12))
    assert all(a.annotated_by == "llm" and a.keywords and a.context for a in out)
    assert "lisbon" in out[0].keywords
    row = cost.stages["note"]
    assert (row.calls, row.retries, row.fallbacks) == (12, 0, 0)
    served = llm_server.state.ok("note")
    assert row.prompt_tokens == sum(s.prompt_tokens for s in served) > 0
    assert row.completion_tokens == sum(s.completion_tokens for s in served) > 0
    assert row.latency_s > 0


@pytest.mark.parametrize("kind", FAULTS)
def test_note_fault_once_is_recovered(
    kind: str, llm_server: StandIn, cost: CostMeter, fallback: StubFallback
) -> None:
    timeout = _timeout_for(kind)
    with annotator(llm_server.url, cost, fallback, llm_timeout_s=timeout) as a:
        out = a.annotate(items(6, f"<<fault:note:{kind}>>", every=3))
    row = cost.stages["note"]
    if kind == "timeout":  # not retried (the server still works the first copy): those two fall back
        assert (row.retries, row.fallbacks, fallback.calls["note"]) == (0, 2, 2)
        assert row.fallback_reasons == {"timeout": 2}
        return
    assert all(x.annotated_by == "llm" for x in out)  # unknown_handle has no meaning for this stage
    expected_retries = 0 if kind == "unknown_handle" else 2  # items 0 and 3 carry the fault
    assert (row.retries, row.fallbacks, fallback.calls["note"]) == (expected_retries, 0, 0)


@pytest.mark.parametrize("kind", [k for k in FAULTS if k != "unknown_handle"])
def test_note_fault_persisting_falls_back_for_that_item_only(
    kind: str, llm_server: StandIn, cost: CostMeter, fallback: StubFallback
) -> None:
    timeout = _timeout_for(kind)
    with annotator(llm_server.url, cost, fallback, llm_timeout_s=timeout) as a:
        out = a.annotate(items(5, f"<<fault:note:{kind}:all>>", every=4))  # items 0 and 4
    assert [x.annotated_by for x in out] == ["embedded-fallback", "llm", "llm", "llm", "embedded-fallback"]
    assert all(x.keywords and x.context for x in out)
    row = cost.stages["note"]
    # content faults: one re-ask each; status faults: the client's two retries each; timeouts: none.
    retries = 2 if kind in CONTENT_FAULTS else 0 if kind == "timeout" else 4
    assert (row.fallbacks, row.retries, fallback.calls["note"]) == (2, retries, 2)


@pytest.mark.parametrize("kind", ["malformed", "missing", "wrong_type", "500"])
def test_link_and_evolve_faults(
    kind: str, ann: LLMAnnotator, cost: CostMeter, fallback: StubFallback
) -> None:
    cands = [note("Ana booked a Lisbon flight"), note("Bo likes chess"), note("Lisbon hotel for Ana")]
    reqs = [
        link_request(
            f"Ana trip Lisbon plan {i} <<fault:link:{kind}:all>>" if i == 1 else f"Ana trip Lisbon plan {i}",
            cands,
        )
        for i in range(3)
    ]
    links = ann.judge_links(reqs)
    assert [len(x) for x in links] == [2, 1, 2]  # item 1 got the fallback's single link
    assert links[0][0].target == cands[0].id and links[0][1].target == cands[2].id
    assert (cost.stages["link"].fallbacks, fallback.calls["link"]) == (1, 1)

    evs = [EvolveRequest(r.note, [cands[0], cands[2]]) for r in reqs]
    evs[2].note.content += f" <<fault:evolve:{kind}>>"  # once: recovered by re-ask or retry
    updates = ann.evolve(evs)
    assert [len(u) for u in updates] == [2, 2, 2]
    assert [u.target for u in updates[2]] == [cands[0].id, cands[2].id]
    assert cost.stages["evolve"].retries == 1 and cost.stages["evolve"].fallbacks == 0


def test_garbled_response_is_asked_again(ann: LLMAnnotator, cost: CostMeter) -> None:
    out = ann.annotate(items(3, "<<fault:note:garbled>>", every=2))
    assert [x.annotated_by for x in out] == ["llm"] * 3
    assert (cost.stages["note"].retries, cost.stages["note"].fallbacks) == (2, 0)


def test_unknown_handles_are_dropped_and_counted(ann: LLMAnnotator, cost: CostMeter) -> None:
    cands = [note("Lisbon flight"), note("Lisbon hotel")]
    reqs = [link_request(f"Lisbon trip {i} <<fault:link:unknown_handle:all>>", cands) for i in range(4)]
    links = ann.judge_links(reqs)
    assert all({c.target for c in x} == {cands[0].id, cands[1].id} for x in links)
    row = cost.stages["link"]
    assert (row.dropped_links, row.retries, row.fallbacks) == (4, 0, 0)
    evs = [EvolveRequest(note("Lisbon again <<fault:evolve:unknown_handle>>"), cands)]
    assert {u.target for u in ann.evolve(evs)[0]} == {cands[0].id, cands[1].id}
    assert cost.stages["evolve"].dropped_links == 1


def test_supersedes_reaches_the_right_neighbour(ann: LLMAnnotator) -> None:
    old = [note("Bo plays chess weekly", speaker="bo"), note("I live in Paris near the river")]
    updates = ann.evolve([EvolveRequest(note("I live in Berlin since May"), old)])[0]
    assert {u.target: u.supersedes for u in updates} == {old[0].id: False, old[1].id: True}


def test_empty_inputs_make_no_calls(ann: LLMAnnotator, llm_server: StandIn) -> None:
    assert ann.annotate([]) == []
    assert ann.judge_links([LinkRequest(note("x"), [])]) == [[]]
    assert ann.evolve([EvolveRequest(note("x"), [])]) == [[]]
    assert llm_server.state.seen == []


def test_dead_server_every_item_falls_back(cost: CostMeter, fallback: StubFallback) -> None:
    with annotator(dead_url(), cost, fallback) as a:
        out = a.annotate(items(4))
        reqs = [link_request(f"Lisbon {i}", [note("Lisbon flight")]) for i in range(4)]
        links = a.judge_links(reqs)
        evolved = a.evolve([EvolveRequest(r.note, [r.candidates[0].note]) for r in reqs])
    assert [x.annotated_by for x in out] == ["embedded-fallback"] * 4
    assert all(len(x) == 1 for x in links) and evolved == [[], [], [], []]
    for stage in ("note", "link", "evolve"):
        row = cost.stages[stage]
        # 2 retries per request; every attempt is a call, and a failed one
        assert (row.calls, row.errors, row.fallbacks, row.retries) == (12, 12, 4, 8)
        assert row.fallback_reasons == {"transport": 4}
    assert dict(fallback.calls) == {"note": 4, "link": 4, "evolve": 4}


def test_server_stopped_mid_session_falls_back(cost: CostMeter, fallback: StubFallback) -> None:
    server = StandIn().start()
    with annotator(server.url, cost, fallback) as a:
        assert [x.annotated_by for x in a.annotate(items(3))] == ["llm"] * 3
        server.stop()
        assert [x.annotated_by for x in a.annotate(items(3))] == ["embedded-fallback"] * 3
    assert cost.stages["note"].fallbacks == 3


def test_mixed_faults_in_one_batch(ann: LLMAnnotator, llm_server: StandIn, cost: CostMeter) -> None:
    batch = items(40)
    for i, kind in enumerate(FAULTS):
        batch[i * 5].content += f" <<fault:note:{kind}>>"
    batch[39].content += " <<fault:note:malformed:all>>"
    out = ann.annotate(batch)
    assert len(out) == 40 and all(x.keywords and x.context for x in out)
    assert [i for i, x in enumerate(out) if x.annotated_by != "llm"] == [39]
    row = cost.stages["note"]
    # six faults that retry (unknown_handle means nothing to this stage; 'timeout' is a slow 504 within
    # this client's 10 s), plus the re-ask of item 39
    assert row.fallbacks == 1 and row.retries == 6 + 1
    assert row.calls == len(llm_server.state.seen)
    assert row.errors == sum(1 for s in llm_server.state.seen if s.status != 200)


def test_make_llm_annotator_rejects_embedded_and_missing_vllm(
    cost: CostMeter, fallback: StubFallback
) -> None:
    with pytest.raises(ConfigError):
        make_llm_annotator(Config(), cost, fallback)
    if "vllm" not in sys.modules:
        try:
            import vllm  # noqa: F401
        except ImportError:
            with pytest.raises(ConfigError, match="vllm"):
                make_llm_annotator(Config.of(annotator="vllm"), cost, fallback)


# --- in-process vLLM backend, with a fake vllm module ----------------------------------------------------


class _FakeLLM:
    def __init__(self, model: str, **_: Any) -> None:
        self.model = model
        self.params: list[Any] = []

    def get_tokenizer(self) -> Any:
        return types.SimpleNamespace(apply_chat_template=lambda msgs, **_: json.dumps(msgs))

    def generate(self, texts: list[str], params: Any, use_tqdm: bool = False) -> list[Any]:
        self.params.append(params)
        outs = []
        for text in texts:
            payload = json.loads(json.loads(text)[1]["content"])
            content = payload.get("content", "")
            answer = (
                "not json"
                if "bad" in content
                else json.dumps(
                    {"keywords": content.split()[:2], "tags": ["x"], "context": f"Someone says {content}."}
                )
            )
            out = types.SimpleNamespace(text=answer, token_ids=[0] * 5)
            outs.append(types.SimpleNamespace(prompt_token_ids=[0] * 11, outputs=[out]))
        return outs


@pytest.fixture
def fake_vllm(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    mod = types.ModuleType("vllm")
    sampling = types.ModuleType("vllm.sampling_params")
    mod.LLM = _FakeLLM  # type: ignore[attr-defined]
    mod.SamplingParams = lambda **kw: kw  # type: ignore[attr-defined]
    sampling.StructuredOutputsParams = lambda **kw: ("structured", kw)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm", mod)
    monkeypatch.setitem(sys.modules, "vllm.sampling_params", sampling)
    return mod


def test_vllm_backend_shares_the_validation_path(
    fake_vllm: Any, cost: CostMeter, fallback: StubFallback
) -> None:
    a = make_llm_annotator(Config.of(annotator="vllm", llm_model="m"), cost, fallback)
    out = a.annotate([Interaction("alpha beta gamma", T0), Interaction("bad output here", T0)])
    a.close()
    assert out[0].annotated_by == "llm" and out[0].keywords == ["alpha", "beta"], out
    assert out[1].annotated_by == "embedded-fallback"  # bad twice (answer, re-ask): falls back
    row = cost.stages["note"]
    # 2 answers + 1 re-ask, each 11 prompt and 5 completion tokens as the fake reports them
    assert (row.calls, row.prompt_tokens, row.completion_tokens) == (3, 33, 15)
    assert (row.retries, row.fallbacks) == (1, 1)


def test_vllm_params_use_the_stage_schema(fake_vllm: Any, cost: CostMeter) -> None:
    from engine.llm.vllm_backend import VLLMBackend

    backend = VLLMBackend(Config.of(annotator="vllm"), cost)
    prompt = prompts.link_prompt(link_request("x", [note("y")]), 100)
    assert backend.complete_batch("link", [prompt], prompts.SCHEMAS["link"]) == [
        '{"keywords": [], "tags": ["x"], "context": "Someone says ."}'
    ]
    params = backend._llm.params[0]
    assert params["structured_outputs"] == ("structured", {"json": prompts.SCHEMAS["link"]})
    assert params["temperature"] == 0.0


def test_http_backend_is_a_backend(llm_server: StandIn, cost: CostMeter) -> None:
    backend = HTTPBackend(Config.of(annotator="llm", llm_url=llm_server.url), cost)
    try:
        got = backend.complete_batch(
            "note", [prompts.note_prompt(Interaction("Lisbon trip", T0), 100)], prompts.SCHEMAS["note"]
        )
    finally:
        backend.close()
    assert isinstance(got[0], str) and "lisbon" in got[0]


# --- through the engine -----------------------------------------------------------------------------------


def test_memory_marks_fallbacks_and_reannotate_redoes_them(llm_server: StandIn, encoder: Any) -> None:
    from engine import Memory

    config = Config.of(annotator="llm", llm_url=llm_server.url, llm_retries=1, llm_backoff_s=0.002)
    mem = Memory(config=config, encoder=encoder)
    try:
        ids = mem.add_many(
            [
                {"content": "Ana booked a flight to Lisbon for May", "timestamp": "2024-04-01T10:00:00Z"},
                {
                    "content": "Ana found a hotel in Lisbon <<fault:note:malformed:2>>",
                    "timestamp": "2024-04-02T10:00:00Z",
                },
                {"content": "Bo is learning to play chess", "timestamp": "2024-04-03T10:00:00Z"},
            ],
            tenant="t",
        )
        notes = [mem.get(i, tenant="t") for i in ids]
        assert [n.annotated_by for n in notes] == ["llm", "embedded-fallback", "llm"]
        assert all(n.keywords and n.context for n in notes)
        assert mem.cost.stages["note"].fallbacks == 1
        assert mem.reannotate(tenant="t") == 1  # the directive's two faulty answers are used up
        assert mem.get(ids[1], tenant="t").annotated_by == "llm"
    finally:
        mem.close()
