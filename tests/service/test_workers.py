"""`amem serve --workers`: a reader process answers reads from the store and forwards the rest to the
writer. A reader app over real uvicorn in front of a writer app (both in threads here), then the real
multi-process server: both processes answer on one port, a reader that dies comes back, and every read
sees every acknowledged write whichever process took it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from engine import Memory
from engine.errors import ConfigError
from engine.service import create_app, serve
from engine.service.forward import ForwardWrites, WorkerHeader, forwarded
from engine.service.workers import RefreshingReader
from tests.service import live
from tests.service.mcp_calls import call
from tests.service.test_mcp_http import session

ROOT = Path(__file__).resolve().parents[2]
ADMIN, ALICE = "admin-key-0123456789", "alice-key-0123456789"


@pytest.fixture(scope="module")
def keys_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("keys") / "keys.json"
    path.write_text(json.dumps({"admin_key": ADMIN, "keys": {ALICE: "alice"}}))
    return path


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory, keys_file: Path) -> Iterator[tuple[str, str]]:
    """(writer URL, reader URL) over one store."""
    store = tmp_path_factory.mktemp("store")
    for writer in live.serve(WorkerHeader(create_app(store, keys_file), 0)):
        reader_app = create_app(store, keys_file, memory=RefreshingReader(store), mcp=False)
        yield from ((writer, r) for r in live.serve(WorkerHeader(ForwardWrites(reader_app, writer), 1)))


def client(url: str, key: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=30)


def memories(*contents: str) -> dict[str, list[dict[str, str]]]:
    return {
        "memories": [
            {"content": c, "timestamp": "2024-03-01T10:00:00Z", "speaker": "alice"} for c in contents
        ]
    }


def test_what_a_reader_forwards() -> None:
    assert not forwarded("POST", "/v1/search") and not forwarded("POST", "/v1/search/batch")
    assert not forwarded("GET", "/v1/memories/abc/history")
    assert forwarded("POST", "/v1/memories") and forwarded("DELETE", "/v1/memories/abc")
    assert forwarded("POST", "/v1/keys") and forwarded("GET", "/mcp") and forwarded("POST", "/mcp/")


def test_reader_answers_reads_and_forwards_writes(pair: tuple[str, str]) -> None:
    _, reader = pair
    with client(reader, ALICE) as c:
        r = c.post("/v1/memories", json=memories("Alice keeps bees on her roof in Porto."))
        assert r.status_code == 201 and r.headers["x-amem-worker"] == "0", r.text
        (note,) = r.json()["ids"]
        found = c.post("/v1/search", json={"query": "who keeps bees"})
        assert found.headers["x-amem-worker"] == "1"
        assert found.json()["hits"][0]["note"]["id"] == note  # the reader caught up with the writer's log
        assert c.get(f"/v1/memories/{note}").json()["content"].startswith("Alice keeps bees")
        batch = c.post("/v1/search/batch", json={"queries": ["who keeps bees", "roof in Porto"]})
        assert batch.headers["x-amem-worker"] == "1"
        assert [r["hits"][0]["note"]["id"] for r in batch.json()["results"]] == [note, note]
        assert c.delete(f"/v1/memories/{note}").status_code == 204
        assert c.get(f"/v1/memories/{note}").status_code == 404


def test_forwarded_errors_are_the_writers(pair: tuple[str, str]) -> None:
    _, reader = pair
    with client(reader, "not-a-key-0123456789") as c:
        assert c.post("/v1/memories", json=memories("x")).status_code == 401
    with client(reader, ALICE) as c:
        bad = c.post("/v1/memories", json={"memories": [{"content": "x", "timestamp": "soon"}]})
        assert bad.status_code == 422
        assert bad.json()["detail"][0]["loc"][:4] == ["body", "memories", 0, "timestamp"]


def test_a_key_added_through_a_reader_works_on_both(pair: tuple[str, str]) -> None:
    writer, reader = pair
    with client(reader, ADMIN) as admin:
        r = admin.post("/v1/keys", json={"tenant": "carol", "key": "carol-key-0123456789"})
        assert r.status_code == 201, r.text
    for url in (writer, reader):
        with client(url, "carol-key-0123456789") as c:
            assert c.post("/v1/search", json={"query": "anything"}).status_code == 200


def test_mcp_through_a_reader(pair: tuple[str, str]) -> None:
    _, reader = pair

    async def scenario() -> None:
        async with session(reader, ALICE) as s:
            (note,) = (await call(s, "add_memory", content="Alice repaints boats in winter"))["ids"]
            hits = (await call(s, "search_memory", query="who repaints boats"))["hits"]
            assert hits[0]["id"] == note

    anyio.run(scenario)


def test_a_reader_opens_the_stores_tenants_before_it_serves(tmp_path: Path) -> None:
    with Memory(tmp_path / "s") as writer:
        for tenant in ("ann", "bob", "cyd"):
            writer.add(f"{tenant} keeps a diary", tenant=tenant)
        reader = RefreshingReader(tmp_path / "s")
        assert reader.memory.resident_tenants() == []
        assert reader.warm() == 3
        assert sorted(reader.memory.resident_tenants()) == ["ann", "bob", "cyd"]
        reader.close()


def test_writer_gone_is_503_with_retry_after(tmp_path: Path, keys_file: Path) -> None:
    closed = live.free_socket()
    url = f"http://127.0.0.1:{closed.getsockname()[1]}"  # bound, never listening: connection refused
    app = ForwardWrites(create_app(tmp_path, keys_file, memory=RefreshingReader(tmp_path)), url)
    for reader in live.serve(app):
        with client(reader, ALICE) as c:
            r = c.post("/v1/memories", json=memories("x"))
            assert r.status_code == 503 and r.headers["retry-after"] == "1", r.text
            assert c.post("/v1/search", json={"query": "x"}).status_code == 200  # reads still answer
    closed.close()


# --- the processes ------------------------------------------------------------------------
@pytest.fixture()
def server(tmp_path: Path, keys_file: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    sock = live.free_socket()
    port = sock.getsockname()[1]
    sock.close()  # the server binds it (SO_REUSEPORT); another process taking it meanwhile is unlikely
    cmd = [sys.executable, "-m", "engine.cli", "serve", "--store", str(tmp_path / "s"), "--keys"]
    cmd += [str(keys_file), "--port", str(port), "--workers", "2"]
    proc = subprocess.Popen(cmd, env={**os.environ, "PYTHONPATH": str(ROOT)})
    url = f"http://127.0.0.1:{port}"
    try:
        live.wait_healthy(url)
        yield proc, url
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def answering(url: str, timeout_s: float = 60.0) -> set[str]:
    """Worker numbers seen over fresh connections (the kernel picks a process per connection)."""
    seen: set[str] = set()
    deadline = time.monotonic() + timeout_s
    while seen != {"0", "1"} and time.monotonic() < deadline:
        try:
            seen.add(httpx.get(f"{url}/healthz", timeout=5).headers["x-amem-worker"])
        except httpx.TransportError:
            time.sleep(0.1)
    return seen


def children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rpartition(")")[2].split()[1]) == pid:
                out.append(int(stat.parent.name))
        except (OSError, ValueError):
            continue
    return out


def test_two_processes_serve_one_port_and_reads_see_every_write(
    server: tuple[subprocess.Popen[bytes], str],
) -> None:
    proc, url = server
    assert answering(url) == {"0", "1"}
    for i in range(4):
        with client(url, ALICE) as c:  # a fresh connection: either process
            (note,) = c.post("/v1/memories", json=memories(f"Alice planted {i} lemon trees")).json()["ids"]
        for _ in range(6):
            with client(url, ALICE) as c:
                assert c.get(f"/v1/memories/{note}").status_code == 200
    (reader,) = children(proc.pid)
    os.kill(reader, signal.SIGKILL)
    time.sleep(0.5)
    assert answering(url) == {"0", "1"}  # restarted
    (restarted,) = children(proc.pid)
    assert restarted != reader
    proc.terminate()
    assert proc.wait(timeout=60) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal it stopped on
    assert not Path(f"/proc/{restarted}").exists()  # the writer stopped its reader before exiting


def test_a_port_in_use_is_refused_not_shared(tmp_path: Path, keys_file: Path) -> None:
    # With SO_REUSEPORT a second server of the same user would bind the port too and take half its
    # connections: --workers refuses a port something listens on.
    busy = live.free_socket()
    busy.listen()
    port = busy.getsockname()[1]
    with pytest.raises(ConfigError, match=f"cannot listen on 127.0.0.1:{port}"):
        serve(tmp_path / "s", keys_file, port=port, workers=2)
    with pytest.raises(ConfigError, match="at least 1"):
        serve(tmp_path / "s", keys_file, workers=0)
    busy.close()
