"""The recall service over real HTTP on loopback: uvicorn in a thread (and `amem serve` in a subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from engine.errors import ConfigError
from engine.service import create_app, serve
from tests.service import live

ROOT = Path(__file__).resolve().parents[2]
ADMIN, ALICE, BOB = "admin-key-0123456789", "alice-key-0123456789", "bob-key-0123456789ab"


@pytest.fixture(scope="module")
def keys_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("keys") / "keys.json"
    path.write_text(json.dumps({"admin_key": ADMIN, "keys": {ALICE: "alice", BOB: "bob"}}))
    return path


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory, keys_file: Path) -> Iterator[str]:
    yield from live.serve(create_app(tmp_path_factory.mktemp("store"), keys_file))


def client(url: str, key: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.Client(base_url=url, headers=headers, timeout=30)


def add(c: httpx.Client, *contents: str) -> list[str]:
    r = c.post(
        "/v1/memories",
        json={
            "memories": [
                {"content": x, "speaker": "maya", "timestamp": f"2024-01-0{i + 1}T10:00:00Z"}
                for i, x in enumerate(contents)
            ]
        },
    )
    assert r.status_code == 201, r.text
    return r.json()["ids"]


def test_add_search_get_history_delete(base_url: str) -> None:
    with client(base_url, ALICE) as c:
        [one] = add(c, "I adopted a cat named Miso from the shelter.")
        many = add(c, "I moved to Denver for a teaching job.", "My sister plays the cello.")
        assert len(set([one, *many])) == 3
        hits = c.post("/v1/search", json={"query": "what pet did I adopt", "k": 2}).json()["hits"]
        assert hits[0]["note"]["id"] == one and hits[0]["note"]["content"].startswith("I adopted")
        assert c.get(f"/v1/memories/{one}").json()["speaker"] == "maya"
        # The same words again from the same speaker merge into the first note: a version in its history.
        again = c.post(
            "/v1/memories",
            json={
                "memories": [
                    {
                        "content": "I adopted a cat named Miso from the shelter.",
                        "speaker": "maya",
                        "timestamp": "2024-02-01T10:00:00Z",
                        "source_id": "repeat-1",
                    }
                ]
            },
        ).json()["ids"]
        assert again == [one]
        history = c.get(f"/v1/memories/{one}/history").json()
        assert history["id"] == one and [v["stage"] for v in history["versions"]] == ["merge"]
        assert c.delete(f"/v1/memories/{one}").status_code == 204
        assert c.get(f"/v1/memories/{one}").status_code == 404
        assert c.delete(f"/v1/memories/{one}").status_code == 404
        hits = c.post("/v1/search", json={"query": "what pet did I adopt"}).json()["hits"]
        assert one not in [h["note"]["id"] for h in hits]


def test_wrong_or_missing_key_is_401(base_url: str) -> None:
    for key in (None, "not-a-key", ALICE + "x"):
        with client(base_url, key) as c:
            r = c.post("/v1/search", json={"query": "anything"})
            assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    r = httpx.post(f"{base_url}/v1/search", json={"query": "x"}, headers={"X-API-Key": ALICE})
    assert r.status_code == 200  # the other header form works too


def test_other_tenants_note_is_404_like_a_missing_one(base_url: str) -> None:
    with client(base_url, BOB) as bob, client(base_url, ALICE) as alice:
        [secret] = add(bob, "My bank PIN hint is the name of my first dog.")
        assert bob.get(f"/v1/memories/{secret}").status_code == 200
        for path in (f"/v1/memories/{secret}", f"/v1/memories/{secret}/history"):
            theirs, missing = alice.get(path), alice.get(path.replace(secret, "0" * 32))
            assert theirs.status_code == missing.status_code == 404
            assert theirs.json() == missing.json()
        assert alice.delete(f"/v1/memories/{secret}").status_code == 404
        hits = alice.post("/v1/search", json={"query": "bank PIN dog"}).json()["hits"]
        assert secret not in [h["note"]["id"] for h in hits]
        assert bob.get(f"/v1/memories/{secret}").status_code == 200  # untouched by alice's delete


def _error_fields(r: httpx.Response) -> list[list[object]]:
    assert r.status_code == 422, r.text
    return [e["loc"] for e in r.json()["detail"]]


def test_malformed_body_is_422_naming_the_field(base_url: str) -> None:
    with client(base_url, ALICE) as c:
        assert ["body", "query"] in _error_fields(c.post("/v1/search", json={"k": 3}))
        assert ["body", "k"] in _error_fields(c.post("/v1/search", json={"query": "x", "k": 0}))
        assert ["body", "as_of"] in _error_fields(
            c.post("/v1/search", json={"query": "x", "as_of": "last week"})
        )
        bad_time = {"memories": [{"content": "ok"}, {"content": "hi", "timestamp": "yesterday"}]}
        assert ["body", "memories", 1, "timestamp"] in _error_fields(c.post("/v1/memories", json=bad_time))
        typo = {"memories": [{"contnt": "hi"}]}
        assert ["body", "memories", 0, "contnt"] in _error_fields(c.post("/v1/memories", json=typo))
        assert ["body", "memories"] in _error_fields(c.post("/v1/memories", json={"memories": []}))
        r = c.post("/v1/memories", content=b"{not json", headers={"content-type": "application/json"})
        assert r.status_code == 422


def test_admin_manages_keys_and_the_file_keeps_only_hashes(base_url: str, keys_file: Path) -> None:
    with client(base_url, ADMIN) as admin, client(base_url, ALICE) as alice:
        assert alice.post("/v1/keys", json={"tenant": "carol"}).status_code == 403
        made = admin.post("/v1/keys", json={"tenant": "carol"}).json()
        assert made["tenant"] == "carol" and len(made["key"]) >= 32
        with client(base_url, made["key"]) as carol:
            add(carol, "Carol likes hiking in the Alps.")
            assert {"id": made["id"], "tenant": "carol", "key": None} in admin.get("/v1/keys").json()
            assert admin.delete(f"/v1/keys/{made['id']}").status_code == 204
            assert carol.post("/v1/search", json={"query": "hiking"}).status_code == 401
        text = keys_file.read_text()
        assert ADMIN not in text and ALICE not in text and made["key"] not in text
        assert alice.post("/v1/search", json={"query": "x"}).status_code == 200  # hashed entries still work


def test_health_and_openapi_docs(base_url: str) -> None:
    assert httpx.get(f"{base_url}/healthz").json() == {"status": "ok"}
    assert httpx.get(f"{base_url}/docs").status_code == 200
    paths = httpx.get(f"{base_url}/openapi.json").json()["paths"]
    assert {"/v1/memories", "/v1/search", "/v1/memories/{note_id}", "/v1/memories/{note_id}/history"} <= set(
        paths
    )


def test_no_keys_file_only_on_loopback(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no authentication"):
        serve(tmp_path / "s", keys=None, host="0.0.0.0", port=1)


def test_amem_serve_subprocess(tmp_path: Path, keys_file: Path) -> None:
    sock = live.free_socket()
    port = sock.getsockname()[1]
    sock.close()  # the child binds it; a race with another process taking the port is harmless here
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [
        sys.executable,
        "-m",
        "engine.cli",
        "serve",
        "--store",
        str(tmp_path / "s"),
        "--keys",
        str(keys_file),
        "--port",
        str(port),
    ]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        live.wait_healthy(f"http://127.0.0.1:{port}")
        with client(f"http://127.0.0.1:{port}", BOB) as c:
            [note] = add(c, "Leo builds walnut furniture in his workshop.")
            assert c.post("/v1/search", json={"query": "furniture"}).json()["hits"][0]["note"]["id"] == note
    finally:
        proc.terminate()
        out = proc.communicate(timeout=30)[0].decode()
    assert proc.returncode in (0, -15), out


def test_batch_search_answers_each_query_in_order(base_url: str) -> None:
    with client(base_url, BOB) as c:
        ids = add(c, "Bob restores antique cuckoo clocks.", "Bob grows heirloom tomatoes on the balcony.")
        r = c.post("/v1/search/batch", json={"queries": ["who restores cuckoo clocks", "heirloom tomatoes"]})
        assert r.status_code == 200, r.text
        results = r.json()["results"]
        assert [res["hits"][0]["note"]["id"] for res in results] == ids
        assert results[1] == c.post("/v1/search", json={"query": "heirloom tomatoes"}).json()
        blank = c.post("/v1/search/batch", json={"queries": ["fine", "  "]})
        assert blank.status_code == 422 and blank.json()["detail"][0]["loc"] == ["body", "queries", 1]
        many = c.post("/v1/search/batch", json={"queries": ["q"] * 65})
        assert many.status_code == 413 and many.json()["detail"][0]["loc"] == ["body", "queries"]
