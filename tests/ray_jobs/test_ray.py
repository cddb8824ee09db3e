"""Sharded ingest on a local Ray cluster (2 CPUs) that this module starts and stops.

Sharded ingest must give, tenant by tenant, the notes single-process ingest gives (same ids, content,
source ids, link targets); a shard actor killed mid-job must be restarted and the job must end with
every record stored exactly once.
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine import Config, Memory
from engine.errors import ConfigError, InputError
from engine.io.ingest import ingest_files
from engine.io.parquet import parquet_items
from engine.model.note import Interaction
from ray_jobs.router import shard_of
from tests.service.mcp_calls import call
from tests.service.test_mcp_http import session

ray = pytest.importorskip("ray")
pytest.importorskip("ray.data")

from ray_jobs.cluster import worker_env  # noqa: E402
from ray_jobs.ingest import run_ingest, split_llm_limits  # noqa: E402

WORDS = [
    "coffee",
    "paris",
    "dog",
    "cat",
    "music",
    "guitar",
    "tennis",
    "nurse",
    "doctor",
    "hiking",
    "book",
    "movie",
    "train",
    "trip",
    "dinner",
    "sister",
    "garden",
    "piano",
    "python",
    "cooking",
    "pasta",
    "bike",
    "ocean",
    "mountain",
    "denver",
    "teaching",
    "walnut",
    "table",
]


def write_log(path: Path, n: int, tenants: list[str], seed: int, start: int = 0) -> None:
    rng = random.Random(seed)
    with open(path, "w") as f:
        for i in range(n):
            line = {
                "content": " ".join(rng.choices(WORDS, k=9)),
                "timestamp": 1_700_000_000 + (start + i) * 60,
                "speaker": rng.choice(["ann", "bob"]),
                "tenant": rng.choice(tenants),
            }
            f.write(json.dumps(line) + "\n")


def notes_by_tenant(store: Path) -> dict[str, dict[str, tuple[Any, ...]]]:
    with Memory(store, Config.of(read_only=True)) as mem:
        return {
            t: {n.id: (n.content, sorted(n.source_ids), sorted(n.link_targets())) for n in mem.notes(t)}
            for t in mem.tenants()
        }


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, runtime_env=worker_env(), log_to_driver=False)
    yield
    ray.shutdown()


def test_sharded_ingest_matches_single_process(cluster: None, tmp_path: Path) -> None:
    tenants = ["alice", "bob", "carol", "dave"]
    files = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    write_log(files[0], 360, tenants, seed=1)
    write_log(files[1], 240, tenants, seed=2, start=360)
    ingest_files(files, tmp_path / "single", config=Config(), batch_size=48, progress=False)
    # max_wait_ms past the run's length: batches cut by size only, as single-process ingest cuts them.
    report = run_ingest(
        [str(f) for f in files],
        str(tmp_path / "sharded"),
        config=Config(),
        num_shards=3,
        max_batch=48,
        max_wait_ms=600_000,
        progress=False,
    )
    single, sharded = notes_by_tenant(tmp_path / "single"), notes_by_tenant(tmp_path / "sharded")
    assert sorted(sharded) == tenants
    assert sharded == single
    assert report["records"] == 600 and report["restarts"] == 0
    assert report["notes"] == sum(len(v) for v in single.values())
    assert any(
        targets for notes in single.values() for _, _, targets in notes.values()
    )  # links were compared
    per_shard = {s["shard"]: s["tenants"] for s in report["shards"] if s["tenants"]}
    assert per_shard == Counter(shard_of(t, 3) for t in tenants)


def test_rerun_is_resumable(cluster: None, tmp_path: Path) -> None:
    log = tmp_path / "a.jsonl"
    write_log(log, 120, ["x", "y"], seed=3)
    first = run_ingest([str(log)], str(tmp_path / "s"), config=Config(), num_shards=2, progress=False)
    before = notes_by_tenant(tmp_path / "s")
    again = run_ingest([str(log)], str(tmp_path / "s"), config=Config(), num_shards=2, progress=False)
    assert first["notes"] == again["notes"] and notes_by_tenant(tmp_path / "s") == before


def test_killed_shard_restarts_and_loses_nothing(cluster: None, tmp_path: Path) -> None:
    log = tmp_path / "big.jsonl"
    write_log(log, 1500, ["k1", "k2", "k3", "k4"], seed=4)
    result: dict[str, Any] = {}

    def job() -> None:
        try:
            result["report"] = run_ingest(
                [str(log)],
                str(tmp_path / "s"),
                config=Config(),
                num_shards=2,
                max_batch=24,
                max_wait_ms=50,
                progress=False,
                job_name="killtest",
            )
        except BaseException as exc:  # handed to the test thread, which raises it
            result["error"] = exc

    thread = threading.Thread(target=job)
    thread.start()
    victim = _wait_for_progress("killtest-shard-0", thread)
    ray.kill(victim, no_restart=False)
    thread.join(timeout=240)
    assert not thread.is_alive(), "ingest did not finish after the kill"
    if "error" in result:
        raise result["error"]
    assert result["report"]["restarts"] >= 1
    stored = Counter(
        s
        for notes in notes_by_tenant(tmp_path / "s").values()
        for _, sources, _ in notes.values()
        for s in sources
    )
    expected = {rec.interaction.source_id for rec in _read(log)}
    assert set(stored) == expected  # nothing lost
    assert max(stored.values()) == 1  # nothing doubled


def _wait_for_progress(name: str, thread: threading.Thread) -> Any:
    """The shard actor once it has written at least one batch (the job is then mid-way)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and thread.is_alive():
        try:
            actor = ray.get_actor(name)
            if ray.get(actor.status.remote(0)).num_records > 0:
                return actor
        except ValueError:  # not created yet
            pass
        time.sleep(0.05)
    raise AssertionError(f"{name} wrote nothing")


def _read(path: Path) -> list[Any]:
    from engine.io.chatlog import read_chatlog

    with read_chatlog(path) as reader:
        return list(reader)


def test_bad_record_fails_the_run_before_any_write_or_is_skipped(cluster: None, tmp_path: Path) -> None:
    log = tmp_path / "a.jsonl"
    write_log(log, 20, ["x"], seed=5)
    lines = log.read_text().splitlines()
    lines.insert(2, json.dumps({"content": "no time", "tenant": "x"}))
    log.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"a\.jsonl:3.*timestamp"):
        run_ingest([str(log)], str(tmp_path / "s"), config=Config(), num_shards=2, progress=False)
    assert not (tmp_path / "s" / "tenants").exists()
    report = run_ingest(
        [str(log)], str(tmp_path / "s"), config=Config(), num_shards=2, on_error="skip", progress=False
    )
    assert report["records"] == 20 and report["rejected"] == 1 and report["notes"] == 20


def test_shard_worker_acks_a_delivery_only_when_all_of_it_is_written(tmp_path: Path, encoder: Any) -> None:
    from ray_jobs.reader import to_row
    from ray_jobs.shard import ShardWorker

    rng = random.Random(6)
    rows = [
        to_row(
            Interaction(
                " ".join(rng.choices(WORDS, k=8)), datetime(2024, 1, 1, tzinfo=UTC), "ann", {}, f"src{i}"
            ),
            "t",
            "default",
        )
        for i in range(30)
    ]
    worker = ShardWorker(0, str(tmp_path / "s"), Config(), max_batch=16, max_wait_ms=600_000)
    worker.submit(0, "t", rows, cursor=0)
    _until(lambda: worker.status(0).num_records == 16)  # one full batch written, the rest waits for more
    status = worker.submit(0, "t", rows, cursor=0)  # a resend of a seq it holds: ignored
    assert status.acked == [] and status.num_queued == 14 and status.num_ready == 0
    worker.drain(0)
    _until(lambda: worker.status(0).acked == [0])
    assert worker.submit(1, "t", [], cursor=1).acked == [1]  # an empty delivery is done on arrival
    assert worker.close(["t"])["notes"] == {"t": 30}


def _until(check: Any, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.02)


def test_llm_limit_is_split_across_shards() -> None:
    llm = Config.of(
        annotator="llm",
        llm_url="http://127.0.0.1:9/v1",
        llm_max_in_flight=64,
        llm_max_tokens_in_flight=100_000,
    )
    shard = split_llm_limits(llm, 3)
    assert (shard.llm.max_in_flight, shard.llm.max_tokens_in_flight) == (21, 33_333)
    assert 3 * shard.llm.max_in_flight <= llm.llm.max_in_flight
    assert split_llm_limits(Config(), 8) == Config()  # embedded: no LLM, nothing to share
    with pytest.raises(ConfigError, match="at least one request"):
        split_llm_limits(llm.with_(llm_max_in_flight=2), 3)
    with pytest.raises(ConfigError, match="vllm"):
        split_llm_limits(Config.of(annotator="vllm"), 2)


def test_tenants_hash_to_shards_stably() -> None:
    assert [shard_of(t, 4) for t in ("alice", "bob", "carol")] == [
        shard_of(t, 4) for t in ("alice", "bob", "carol")
    ]
    assert {shard_of(f"tenant{i}", 4) for i in range(100)} == {0, 1, 2, 3}


def test_parquet_rows_are_checked_and_get_stable_ids(tmp_path: Path) -> None:
    path = tmp_path / "log.parquet"
    table = pa.table(
        {
            "content": ["hello there", "", "bye"],
            "timestamp": ["2024-01-01T00:00:00Z"] * 3,
            "speaker": ["ann", "bob", None],
            "tenant": ["t1", "t1", None],
            "metadata": ['{"k": 1}', None, None],
        }
    )
    pq.write_table(table, path)
    items = list(parquet_items(path))
    assert isinstance(items[1], InputError) and items[1].field == "content" and "row 2" in str(items[1])
    (first, tenant), (third, none) = items[0], items[2]  # type: ignore[misc]
    assert tenant == "t1" and none is None and first.metadata == {"k": 1}
    assert first.source_id.startswith("log.parquet:row1:")
    assert [i[0].source_id for i in parquet_items(path) if not isinstance(i, InputError)] == [
        first.source_id,
        third.source_id,
    ]


@pytest.mark.skipif(
    not hasattr(Memory, "refresh"), reason="needs Memory.refresh: read-only replicas follow the writer"
)
def test_ray_serve_replicas_serve_the_same_app(cluster: None, tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    import httpx
    from ray import serve

    from ray_jobs.serve import build

    keys = tmp_path / "keys.json"
    keys.write_text(json.dumps({"admin_key": "a" * 20, "keys": {"k" * 20: "alice", "b" * 20: "bob"}}))
    port = _free_port()
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    try:
        serve.run(build(tmp_path / "store", keys, replicas=2), name="amem", route_prefix="/")
        url, alice = f"http://127.0.0.1:{port}", {"Authorization": "Bearer " + "k" * 20}
        r = httpx.post(
            f"{url}/v1/memories",
            headers=alice,
            timeout=60,
            json={"memories": [{"content": "Maya adopted a cat named Miso", "speaker": "maya"}]},
        )
        assert r.status_code == 201, r.text
        [note] = r.json()["ids"]

        def top(_: int) -> str:  # many at once: both replicas answer, queries share encoder batches
            hits = httpx.post(
                f"{url}/v1/search", headers=alice, json={"query": "cat Miso"}, timeout=60
            ).json()
            return str(hits["hits"][0]["note"]["id"])

        with ThreadPoolExecutor(16) as pool:
            assert set(pool.map(top, range(64))) == {note}
        bob = {"Authorization": "Bearer " + "b" * 20}
        assert httpx.get(f"{url}/v1/memories/{note}", headers=bob, timeout=60).status_code == 404
        assert (
            httpx.get(f"{url}/v1/memories/{note}", headers={"Authorization": "Bearer x"}).status_code == 401
        )
        assert httpx.post(f"{url}/v1/search", headers=alice, json={"k": 1}).status_code == 422
        assert httpx.delete(f"{url}/v1/memories/{note}", headers=alice, timeout=60).status_code == 204
        assert httpx.get(f"{url}/v1/memories/{note}", headers=alice, timeout=60).status_code == 404
        anyio.run(_mcp_on_replicas, url, "k" * 20)
    finally:
        serve.shutdown()


async def _mcp_on_replicas(url: str, key: str) -> None:
    """A real MCP client; the proxy sends each of its requests to either replica (stateless MCP)."""
    async with session(url, key) as s:
        (note,) = (await call(s, "add_memory", content="Alice repaints boats in winter"))["ids"]
        for _ in range(6):
            assert (await call(s, "search_memory", query="who repaints boats"))["hits"][0]["id"] == note
        await call(s, "update_memory", id=note, tags=["boats"])
        for _ in range(4):  # a write forwarded by one replica is read on both
            assert (await call(s, "get_memory", id=note))["tags"] == ["boats"]
        assert [v["stage"] for v in (await call(s, "memory_history", id=note))["versions"]] == ["update"]
        page = await call(s, "list_memories", limit=5)
        assert [m["id"] for m in page["memories"]] == [note] and page["next_cursor"] is None


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
