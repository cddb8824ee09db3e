"""Bounded queueing: past `max_waiting` waiting requests, or past `request_timeout_s` of waiting, the
service answers 503 with Retry-After instead of queueing without end behind a slow request."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from engine import Config, Memory
from engine.model.note import Hit
from engine.service import create_app
from tests.service.live import serve

WORKERS = os.cpu_count() or 1  # the read pool's width


class Gated(Memory):
    """A real Memory whose searches wait for a gate: the slow request, made on demand."""

    def __init__(self, config: Config) -> None:
        super().__init__(config=config)
        self.gate = threading.Event()
        self.started = threading.Semaphore(0)

    def search(self, query: str, *args: Any, **kwargs: Any) -> list[Hit]:
        if query == "slow":
            self.started.release()
            self.gate.wait(30)
        return super().search(query, *args, **kwargs)


def _app(tmp: Any, **service: Any) -> Iterator[tuple[str, Gated]]:
    mem = Gated(Config.of(**service))
    mem.add("Maya adopted a cat named Miso.")
    for url in serve(create_app(tmp, None, memory=mem)):
        yield url, mem
    mem.close()


def _occupy(url: str, mem: Gated, pool: ThreadPoolExecutor) -> list[Any]:
    """Hold every worker with a slow search. Each asks for another `k`: searches queued together with the
    same options would run as one batch on one worker (engine/service/batcher.py)."""
    slow = [
        pool.submit(httpx.post, f"{url}/v1/search", json={"query": "slow", "k": 1 + i}, timeout=60)
        for i in range(WORKERS)
    ]
    for _ in range(WORKERS):
        assert mem.started.acquire(timeout=30)
    return slow


def test_no_room_to_wait_is_503_at_once(tmp_path: Any) -> None:
    for url, mem in _app(tmp_path, max_waiting=0):
        with ThreadPoolExecutor(WORKERS + 1) as pool:
            slow = _occupy(url, mem, pool)
            r = httpx.post(f"{url}/v1/search", json={"query": "cat"}, timeout=10)
            assert r.status_code == 503 and r.headers["retry-after"] == "1"
            mem.gate.set()
            assert [f.result().status_code for f in slow] == [200] * WORKERS
        assert httpx.post(f"{url}/v1/search", json={"query": "cat"}).status_code == 200


def test_waiting_past_the_deadline_is_503(tmp_path: Any) -> None:
    for url, mem in _app(tmp_path, request_timeout_s=0.5):
        with ThreadPoolExecutor(WORKERS + 1) as pool:
            slow = _occupy(url, mem, pool)
            r = httpx.post(f"{url}/v1/search", json={"query": "cat"}, timeout=10)
            assert r.status_code == 503 and "no worker free within 0.5 s" in r.text
            assert r.headers["retry-after"] == "1"
            mem.gate.set()
            assert [f.result().status_code for f in slow] == [200] * WORKERS
