"""A stand-in for a vLLM server: real HTTP on loopback, OpenAI chat-completions and embeddings protocol.

It reads the JSON input of amem's prompts and answers plausibly per stage (keywords from content
words, links to candidates sharing words, evolution updates), returns `usage`, waits a fixed latency
per request, and records what it saw (stages, tokens, concurrency).

Faults are injected per request by a directive in the new note's content (so the faulty request is
the same whatever order concurrent requests arrive in):

    <<fault:STAGE:KIND>>      first request of that stage for that item only
    <<fault:STAGE:KIND:N>>    first N requests (retries and re-asks count); N='all' for every request

STAGE is note, link, evolve or embed; KIND is one of FAULTS, PROTOCOL_FAULTS or SEMANTIC_FAULTS. A dead
server is `StandIn.stop()`, or a
port nobody listens on (`dead_url()`).

Tests get it as the `llm_server` fixture with `pytest_plugins = ["conftest_llm"]`. The bench (or a
person) runs `python tests/llm/llm_server.py --latency 0.1`: it prints the base URL and serves until killed.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import hashlib
import json
import math
import re
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

CONTENT_FAULTS = ("malformed", "missing", "wrong_type", "unknown_handle")
_STATUS_FAULTS = ("429", "500", "timeout")
FAULTS = CONTENT_FAULTS + _STATUS_FAULTS
PROTOCOL_FAULTS = ("garbled", "no_usage")
"""Not in FAULTS: a 200 whose body is not a chat completion, and a completion without `usage`."""
SEMANTIC_FAULTS = ("length", "timestamp", "empty_keywords", "off_subject")
"""Well-formed answers a small model gives: cut off at max_tokens (finish_reason 'length'), a timestamp as
the note's context, no keywords, an evolution that rewrites a neighbour with the new note's subject."""
DIALECTS = ("json_schema", "llama-cpp-python", "no-format")
"""What the server takes as `response_format`: both schema forms (llama-server, vLLM); only
{"type": "json_object", "schema"} (llama-cpp-python[server]: json_schema is a 500 naming the format);
none at all (any response_format is a 400 naming it)."""
_STAGE = re.compile(r"stage (note|link|evolve)\)")
_DIRECTIVE = re.compile(r"<<fault:(\w+):(\w+)(?::(\w+))?>>")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{2,}")
_STOPWORDS = frozenset(
    re.split(
        r"\s+",
        "the and for are but not you your with this that have has had was were will would can could "
        "our out all any she her his him they them their there then than what when where who why how "
        "about into from just very really also some been being its it's i'm i've we're don't",
    )
)


def words(text: str) -> list[str]:
    """Content words in order, lowercased, without fault directives or stopwords."""
    text = _DIRECTIVE.sub(" ", text)
    return [w.lower() for w in _WORD.findall(text) if w.lower() not in _STOPWORDS]


@dataclass
class Seen:
    """One chat request as the server saw it."""

    stage: str
    fault: str | None
    status: int
    prompt_tokens: int = 0
    completion_tokens: int = 0
    fmt: str | None = None
    """The request's response_format type (None: none sent)."""
    max_tokens: int = 0


@dataclass
class StandInState:
    latency_s: float = 0.0
    timeout_sleep_s: float = 5.0
    embed_dim: int = 48
    dialect: str = "json_schema"
    slots: int | None = None
    """When set, GET /props answers {"total_slots": slots} like llama.cpp's server."""
    seen: list[Seen] = field(default_factory=list)
    """Every request, in arrival order; status 0 marks an injected 429 / 500 / timeout."""
    in_flight: int = 0
    max_in_flight: int = 0
    fault_counts: collections.Counter[tuple[str, str, str]] = field(default_factory=collections.Counter)

    def reset(self) -> None:
        self.seen.clear()
        self.fault_counts.clear()
        self.max_in_flight = self.in_flight  # requests of an earlier test may still sleep in a timeout

    def ok(self, stage: str | None = None) -> list[Seen]:
        return [s for s in self.seen if s.status == 200 and (stage is None or s.stage == stage)]

    def count(self, stage: str, fault: str | None = None) -> int:
        return sum(1 for s in self.seen if s.stage == stage and s.fault == fault)

    def take_fault(self, stage: str, text: str) -> str | None:
        """The fault to inject for this request, if the item's directive still has uses left."""
        for d_stage, kind, times in _DIRECTIVE.findall(text):
            if d_stage != stage:
                continue
            key = (stage, kind, hashlib.sha1(text.encode()).hexdigest())
            limit = math.inf if times == "all" else int(times or 1)
            if self.fault_counts[key] < limit:
                self.fault_counts[key] += 1
                return kind
        return None


# --- plausible answers --------------------------------------------------------------------------------


def answer_note(inp: dict[str, Any]) -> dict[str, Any]:
    terms = list(dict.fromkeys(words(inp["content"])))[:6] or ["smalltalk"]
    who = inp.get("speaker") or "Someone"
    return {
        "keywords": terms,
        "tags": sorted({"dialogue", terms[0]}),
        "context": f"{who} talks about {', '.join(terms[:3])}.",
    }


def answer_link(inp: dict[str, Any]) -> dict[str, Any]:
    mine = set(words(inp["note"]["content"]))
    links = []
    for cand in inp["candidates"]:
        shared = sorted(mine & set(words(cand["content"])))
        if shared:
            links.append({"handle": cand["handle"], "reason": f"both mention {shared[0]}"})
    return {"links": links}


def _supersedes(new: dict[str, Any], old: dict[str, Any]) -> bool:
    """Same speaker, same first three words, different rest: 'I live in Paris' -> 'I live in Berlin'."""
    a, b = new["content"].lower().split(), old["content"].lower().split()
    return new.get("speaker") == old.get("speaker") and len(a) > 3 and a[:3] == b[:3] and a[3:] != b[3:]


def answer_evolve(inp: dict[str, Any]) -> dict[str, Any]:
    note = inp["note"]
    mine = words(note["content"])
    updates = []
    for nb in inp["neighbours"]:
        extra = next((w for w in mine if w not in nb["tags"]), None)
        updates.append(
            {
                "handle": nb["handle"],
                "context": f"{nb['context']} Later related: {' '.join(mine[:2])}.".strip(),
                "keywords": None,
                "tags": nb["tags"] + ([extra] if extra else []),
                "supersedes": _supersedes(note, nb),
                "reason": "new related note",
            }
        )
    return {"updates": updates}


ANSWERS = {"note": answer_note, "link": answer_link, "evolve": answer_evolve}


_LIST_KEY = {"note": "keywords", "link": "links", "evolve": "updates"}


def corrupt(stage: str, kind: str, answer: dict[str, Any]) -> str:
    """The answer text for a content fault (malformed, missing, wrong_type, unknown_handle)."""
    if kind == "malformed":
        return json.dumps(answer)[:-7] + ' "oops'
    if kind == "missing":
        del answer["context" if stage == "note" else _LIST_KEY[stage]]
    elif kind == "wrong_type" and stage == "note":
        answer["keywords"] = ", ".join(answer["keywords"])
    elif kind == "wrong_type":
        bad = (
            {"handle": "0", "reason": "x"}
            if stage == "link"
            else {
                "handle": 0,
                "reason": "x",
                "context": None,
                "keywords": None,
                "tags": None,
                "supersedes": "yes",
            }
        )
        answer[_LIST_KEY[stage]] = [bad]
    elif kind == "unknown_handle" and stage != "note":
        extra: dict[str, Any] = {"handle": 99, "reason": "hallucinated"}
        if stage == "evolve":
            extra |= {"context": "x", "keywords": None, "tags": None, "supersedes": False}
        answer[_LIST_KEY[stage]].append(extra)
    return json.dumps(answer)


def nonsense(kind: str, answer: dict[str, Any], inp: dict[str, Any]) -> str:
    """The answer text for a semantic fault: well-formed JSON a grammar lets through."""
    if kind == "length":
        text = json.dumps(answer)
        return text[: len(text) // 2]  # cut off mid-answer, as at max_tokens
    if kind == "timestamp" and "context" in answer:
        answer["context"] = "2024-13-31T12:00:00+00:00"
    elif kind == "empty_keywords" and "keywords" in answer:
        answer["keywords"] = []
    elif kind == "off_subject" and "updates" in answer:
        theirs = words(inp["note"]["content"])[:4] or ["elsewhere"]
        for update in answer["updates"]:
            update |= {"keywords": theirs, "context": "2024-02-20T12:00:00+00:00", "supersedes": False}
    return json.dumps(answer)


# --- ASGI app -------------------------------------------------------------------------------------------


class StandInApp:
    """The ASGI application; all state in `self.state`."""

    def __init__(self, state: StandInState) -> None:
        self.state = state
        self._slots: dict[int, asyncio.Semaphore] = {}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        status, payload, headers = await self._route(scope["path"], body)
        raw = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
        head = [(b"content-type", b"application/json"), *headers]
        await send({"type": "http.response.start", "status": status, "headers": head})
        await send({"type": "http.response.body", "body": raw})

    async def _route(self, path: str, body: bytes) -> tuple[int, Any, list[tuple[bytes, bytes]]]:
        if path == "/stats":  # for the bench, which runs the server in another process
            stats = {"requests": len(self.state.seen), "max_in_flight": self.state.max_in_flight}
            self.state.reset()
            return 200, stats, []
        if path == "/props" and self.state.slots is not None:
            return 200, {"total_slots": self.state.slots}, []
        if path == "/v1/models":
            return 200, {"object": "list", "data": [{"id": "stand-in", "object": "model"}]}, []
        if path == "/v1/chat/completions":
            return await self._tracked(self._chat, json.loads(body))
        if path == "/v1/embeddings":
            return await self._tracked(self._embeddings, json.loads(body))
        return 404, {"error": {"message": f"no route {path}"}}, []

    async def _tracked(self, handler: Any, request: dict[str, Any]) -> Any:
        state = self.state
        state.in_flight += 1
        state.max_in_flight = max(state.max_in_flight, state.in_flight)
        try:
            return await handler(request)
        finally:
            state.in_flight -= 1

    async def _fault_status(self, kind: str) -> tuple[int, Any, list[tuple[bytes, bytes]]]:
        """The error response for a status fault; a timeout sleeps past the client's patience first."""
        if kind == "429":
            return 429, {"error": {"message": "too many requests"}}, [(b"retry-after", b"0")]
        if kind == "500":
            return 500, {"error": {"message": "internal error"}}, []
        await asyncio.sleep(self.state.timeout_sleep_s)
        return 504, {"error": {"message": "too late"}}, []

    def _format_refusal(self, fmt: str | None) -> tuple[int, Any, list[tuple[bytes, bytes]]] | None:
        if self.state.dialect == "llama-cpp-python" and fmt not in (None, "text", "json_object"):
            detail = {
                "type": "literal_error",
                "loc": ["body", "response_format", "type"],
                "msg": "Input should be 'text' or 'json_object'",
                "input": fmt,
            }
            return 500, {"error": {"message": json.dumps([detail])}}, []
        if self.state.dialect == "no-format" and fmt is not None:
            return 400, {"error": {"message": f"response_format {fmt} is not supported"}}, []
        return None

    async def _chat(self, request: dict[str, Any]) -> tuple[int, Any, list[tuple[bytes, bytes]]]:
        """With `slots` set, like llama-server: that many requests are worked at once, the rest queue."""
        if not self.state.slots:
            return await self._chat_now(request)
        slots = self._slots.setdefault(self.state.slots, asyncio.Semaphore(self.state.slots))
        async with slots:
            return await self._chat_now(request)

    async def _chat_now(self, request: dict[str, Any]) -> tuple[int, Any, list[tuple[bytes, bytes]]]:
        stage = _STAGE.search(request["messages"][0]["content"]).group(1)  # type: ignore[union-attr]
        fmt = (request.get("response_format") or {}).get("type")
        if refusal := self._format_refusal(fmt):
            self.state.seen.append(Seen(stage, "format", refusal[0], fmt=fmt))
            return refusal
        inp = json.loads(request["messages"][1]["content"])
        note_text = inp["content"] if stage == "note" else inp["note"]["content"]
        kind = self.state.take_fault(stage, note_text)
        await asyncio.sleep(self.state.latency_s)
        if kind in _STATUS_FAULTS:
            self.state.seen.append(Seen(stage, kind, 0, fmt=fmt))
            return await self._fault_status(kind)
        answer = ANSWERS[stage](inp)
        text = corrupt(stage, kind, answer) if kind in CONTENT_FAULTS else json.dumps(answer)
        if kind in SEMANTIC_FAULTS:
            text = nonsense(kind, answer, inp)
        prompt_tokens = sum(len(m["content"]) for m in request["messages"]) // 4 + 1
        completion_tokens = len(text) // 4 + 1
        max_tokens = int(request.get("max_tokens") or 0)
        seen = Seen(stage, kind, 200, prompt_tokens, completion_tokens, fmt=fmt, max_tokens=max_tokens)
        self.state.seen.append(seen)
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        finish = "length" if kind == "length" else "stop"
        choice = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}
        body = {"id": "cmpl-standin", "object": "chat.completion", "choices": [choice], "usage": usage}
        if kind == "garbled":
            return 200, {"object": "error", "detail": "proxy hiccup"}, []
        if kind == "no_usage":
            del body["usage"]
        return 200, body, []

    async def _embeddings(self, request: dict[str, Any]) -> tuple[int, Any, list[tuple[bytes, bytes]]]:
        texts = request["input"] if isinstance(request["input"], list) else [request["input"]]
        kind = next((k for t in texts if (k := self.state.take_fault("embed", t))), None)
        await asyncio.sleep(self.state.latency_s)
        if kind in _STATUS_FAULTS:
            self.state.seen.append(Seen("embed", kind, 0))
            return await self._fault_status(kind)
        tokens = sum(len(t) for t in texts) // 4 + 1
        self.state.seen.append(Seen("embed", kind, 200, tokens))
        data = [
            {"object": "embedding", "index": i, "embedding": embed(t, self.state.embed_dim)}
            for i, t in enumerate(texts)
        ]
        # Shuffled order: clients must sort by `index`, as the protocol says.
        return 200, {"object": "list", "data": data[::-1], "usage": {"prompt_tokens": tokens}}, []


def embed(text: str, dim: int) -> list[float]:
    """Deterministic bag-of-words hashing vector, deliberately not normalised."""
    vector = [0.0] * dim
    for word in words(text) or ["empty"]:
        vector[int(hashlib.md5(word.encode()).hexdigest(), 16) % dim] += 1.0
    vector[0] += 0.5
    return vector


# --- running it -------------------------------------------------------------------------------------


class StandIn:
    """The stand-in app served by uvicorn on 127.0.0.1:<ephemeral> in a daemon thread."""

    def __init__(self, **state: Any) -> None:
        import uvicorn

        self.state = StandInState(**state)
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        config = uvicorn.Config(
            StandInApp(self.state),
            log_level="error",
            access_log=False,
            lifespan="off",
            proxy_headers=False,  # nothing proxies loopback; skip the per-request header rewriting
            server_header=False,
            date_header=False,
            timeout_graceful_shutdown=1,
            backlog=4096,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, name="llm-stand-in", daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> StandIn:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("stand-in LLM server did not start")
            time.sleep(0.005)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._sock.close()


def dead_url() -> str:
    """A loopback URL where nothing listens (connection refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


# --- test helpers -------------------------------------------------------------------------------------


class StubFallback:
    """A fallback annotator that answers recognisably and records what it was asked to do."""

    name = "stub-embedded"

    def __init__(self) -> None:
        self.calls: collections.Counter[str] = collections.Counter()

    def annotate(self, items: Any) -> list[Any]:
        from engine.annotate.schemas import Annotation

        self.calls["note"] += len(items)
        return [
            Annotation(
                keywords=words(i.content)[:3] or ["none"], tags=["fallback"], context="fallback context"
            )
            for i in items
        ]

    def judge_links(self, requests: Any) -> list[list[Any]]:
        from engine.annotate.schemas import LinkChoice

        self.calls["link"] += len(requests)
        return [
            [LinkChoice(target=r.candidates[0].note.id, reason="fallback")] if r.candidates else []
            for r in requests
        ]

    def evolve(self, requests: Any) -> list[list[Any]]:
        self.calls["evolve"] += len(requests)
        return [[] for _ in requests]

    def close(self) -> None:
        pass


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.1, help="seconds per request")
    parser.add_argument("--dialect", default="json_schema", choices=DIALECTS)
    args = parser.parse_args(argv)
    server = StandIn(latency_s=args.latency, dialect=args.dialect).start()
    print(server.url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
