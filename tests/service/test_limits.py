"""Limits, strict bodies and error hygiene of the service over real HTTP (uvicorn on loopback)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from engine import Memory
from engine.config import Config
from engine.errors import TooLarge
from engine.service import create_app
from tests.service.live import serve

BIG = 10_000_000
ALICE = "alice-key-0123456789"


@pytest.fixture(scope="module")
def open_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """No keys file: the tenant comes from X-Amem-Tenant."""
    mem = Memory(config=Config.of(max_request_bytes=12_000_000))
    mem.add("Maya adopted a cat named Miso.", tenant="t1")
    yield from serve(create_app(tmp_path_factory.mktemp("s"), None, memory=mem))
    mem.close()


def _detail(r: httpx.Response, status: int) -> list[dict[str, object]]:
    assert r.status_code == status, r.text[:500]
    assert len(r.content) < 4000, "the answer must not echo the input"
    detail = r.json()["detail"]
    assert isinstance(detail, list)
    return detail


def test_ten_megabyte_content_and_query_are_413_naming_the_field(open_url: str) -> None:
    with httpx.Client(base_url=open_url, timeout=60) as c:
        r = c.post("/v1/memories", json={"memories": [{"content": "ok"}, {"content": "x" * BIG}]})
        assert [d["loc"] for d in _detail(r, 413)] == [["body", "memories", 1, "content"]]
        r = c.post("/v1/search", json={"query": "cat " * (BIG // 4)})
        assert [d["loc"] for d in _detail(r, 413)] == [["body", "query"]]
        # Past the body cap nothing is parsed at all.
        r = c.post("/v1/search", content=b'{"query": "' + b"y" * 13_000_000 + b'"}')
        assert [d["loc"] for d in _detail(r, 413)] == [["body"]]
        assert c.post("/v1/search", json={"query": "cat"}, headers={"X-Amem-Tenant": "t1"}).status_code == 200


def test_batch_over_the_item_limit_is_413_without_echo(open_url: str) -> None:
    items = [{"content": f"note {i}", "speaker": "a" * 50} for i in range(20_000)]
    r = httpx.post(f"{open_url}/v1/memories", json={"memories": items}, timeout=60)
    assert [d["loc"] for d in _detail(r, 413)] == [["body", "memories"]]


def test_many_bad_items_give_a_short_422(open_url: str) -> None:
    items = [{"content": 5, "speaker": "b" * 1000} for _ in range(5000)]
    r = httpx.post(f"{open_url}/v1/memories", json={"memories": items}, timeout=60)
    detail = _detail(r, 422)
    assert detail[0]["loc"] == ["body", "memories", 0, "content"] and len(detail) <= 20
    assert r.json()["more_errors"] == 5000 - 20


def test_lone_surrogate_is_422_not_500(open_url: str) -> None:
    for path, body in (
        ("/v1/search", b'{"query": "cat \\ud800 here"}'),
        ("/v1/memories", b'{"memories": [{"content": "hi \\udfff"}]}'),
        ("/v1/search", b'{"query": "\\ud800", "k": "\\ud800"}'),
    ):
        r = httpx.post(open_url + path, content=body, headers={"content-type": "application/json"})
        assert r.status_code == 422, r.text
        json.dumps(r.json(), ensure_ascii=False).encode("utf-8")  # the answer itself is valid UTF-8


@pytest.mark.parametrize("k", [True, "5", 2.0])
def test_k_is_strictly_an_integer(open_url: str, k: object) -> None:
    r = httpx.post(f"{open_url}/v1/search", json={"query": "cat", "k": k})
    assert [d["loc"] for d in _detail(r, 422)] == [["body", "k"]]


def test_duplicate_json_keys_are_refused(open_url: str) -> None:
    body = b'{"query": "cat", "k": 1, "k": 50}'
    r = httpx.post(f"{open_url}/v1/search", content=body, headers={"content-type": "application/json"})
    assert _detail(r, 422)[0]["loc"] == ["body", "k"]


def test_bad_tenant_header_is_reported_at_the_header(open_url: str) -> None:
    r = httpx.post(f"{open_url}/v1/search", json={"query": "cat"}, headers={"X-Amem-Tenant": "../etc"})
    assert [d["loc"] for d in _detail(r, 422)] == [["header", "X-Amem-Tenant"]]


def test_keys_file_trouble_fails_closed_without_paths(tmp_path: Path) -> None:
    keys = tmp_path / "secret-dir" / "keys.json"
    keys.parent.mkdir()
    keys.write_text(json.dumps({"admin_key": "admin-key-0123456789", "keys": {ALICE: "alice"}}))
    mem = Memory()
    for url in serve(create_app(tmp_path / "s", keys, memory=mem)):
        auth = {"Authorization": f"Bearer {ALICE}"}
        assert httpx.post(f"{url}/v1/search", json={"query": "x"}, headers=auth).status_code == 200
        for damage in ("{not json", json.dumps({"keys": {ALICE: "../bad tenant"}}), None):
            if damage is None:
                keys.unlink()
            else:
                keys.write_text(damage + " " * len(damage))  # a new size: the file is re-read
            r = httpx.post(f"{url}/v1/search", json={"query": "x"}, headers=auth)
            assert r.status_code == 503 and "secret-dir" not in r.text, r.text
            health = httpx.get(f"{url}/healthz")
            assert health.status_code == 503 and "secret-dir" not in health.text
    mem.close()


def test_api_refuses_past_the_limits_and_clips_within_them() -> None:
    with Memory() as mem:
        with pytest.raises(TooLarge, match="content"):
            mem.add("x" * BIG)
        with pytest.raises(TooLarge, match="query"):
            mem.search("cat " * (BIG // 4))
        with pytest.raises(TooLarge, match="memories"):
            mem.add_many([{"content": "a"}] * 1001)
    # Raise the limits past 10 MB: every expensive step (annotator, encoder, fact rules, dedup) sees a
    # clipped text, so this finishes in seconds (it took 36 s when the facts rules read the whole text).
    big = ("Alice moved to Paris and bought a red car. " * 250_000)[:BIG]
    with Memory(config=Config.of(max_content_bytes=2 * BIG, max_query_bytes=2 * BIG)) as mem:
        mem.add("Alice lives in Berlin and drives a blue car.", speaker="Alice")
        first = mem.add(big, speaker="Alice")
        assert mem.get(first).content == big  # stored whole
        mem.add(big, speaker="Alice")  # dedup's token sets over the clipped texts
        assert mem.search(big, k=1)[0].note.content == big
