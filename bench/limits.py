"""What a 10 MB input costs: refused over HTTP (default limits), and through the API with the limits
raised past it (every expensive step sees a clipped text, so only storing and BM25 grow with it).

    python -m bench.limits [--mb 10]

Before the limits (issue 16): a 10 MB query took 34.7 s (WordLlama over the whole text) and a 10 MB
add 36.4 s (the fact rules over the whole content).
"""

from __future__ import annotations

import argparse
import threading
import time
from typing import Any

import httpx
import uvicorn

from bench.common import table, write_json
from engine import Config, Memory
from engine.service import create_app


def _timed(fn: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    out = fn()
    return time.perf_counter() - started, out


def api_rows(size: int) -> list[dict[str, Any]]:
    big = ("Alice moved to Paris and bought a red car. " * (size // 43 + 1))[:size]
    config = Config.of(max_content_bytes=2 * size, max_query_bytes=2 * size)
    with Memory(config=config) as mem:
        mem.add("Alice lives in Berlin and drives a blue car.", speaker="Alice")
        add_s, _ = _timed(lambda: mem.add(big, speaker="Alice"))
        query_s, _ = _timed(lambda: mem.search(big))
    return [
        {"path": "API, limits raised", "call": "add", "mb": size / 1e6, "seconds": add_s, "status": "stored"},
        {
            "path": "API, limits raised",
            "call": "search",
            "mb": size / 1e6,
            "seconds": query_s,
            "status": "ok",
        },
    ]


def http_rows(size: int) -> list[dict[str, Any]]:
    mem = Memory()
    server = uvicorn.Server(uvicorn.Config(create_app(None, None, memory=mem), port=0, log_level="warning"))  # type: ignore[arg-type]
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    rows = []
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as c:
        for call, path, body in (
            ("add", "/v1/memories", {"memories": [{"content": "x" * size}]}),
            ("search", "/v1/search", {"query": "y" * size}),
        ):
            seconds, r = _timed(lambda p=path, b=body: c.post(p, json=b))
            rows.append(
                {
                    "path": "HTTP, defaults",
                    "call": call,
                    "mb": size / 1e6,
                    "seconds": seconds,
                    "status": r.status_code,
                }
            )
    server.should_exit = True
    thread.join(timeout=30)
    mem.close()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=10.0)
    size = int(ap.parse_args().mb * 1e6)
    rows = http_rows(size) + api_rows(size)
    print(table(rows, ["path", "call", "mb", "seconds", "status"]))
    write_json("limits", {"rows": rows})


if __name__ == "__main__":
    main()
