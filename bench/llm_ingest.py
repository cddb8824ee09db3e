"""LLM ingest: the batched pipeline vs the reference A-MEM loop, against a stand-in server with fixed latency.

    python -m bench.llm_ingest [--quick] [--latency 0.1] [--concurrency 1 16 64 256]
    python -m bench.llm_ingest --url http://host:8000/v1 [--notes 8] [--concurrency 1 4]   # a real server
    python -m bench.llm_ingest --serve-llama [--notes 4] [--concurrency 1 4]    # llama-server + SmolLM2

The stand-in (tests/llm/llm_server.py) runs in its own process and answers every request after a fixed
latency, like a remote vLLM whose batch is never full. Both sides ingest the same synthetic chat into
a Memory already holding the same seed notes, so every note gets candidates and makes the same three
calls (note, link, evolve):

- sequential: what the reference A-MEM code does, one note at a time, each call waiting for the last
  (`add_many([item])` with one request in flight);
- batched: `add_many(items)` with `llm_max_in_flight=c`: each stage sends the batch's requests at once.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import table, write_json
from bench.synthetic import chat
from engine import Config, Memory
from engine.encode import Encoder, WordLlamaEncoder

ROOT = Path(__file__).resolve().parents[1]
SEED_NOTES = 16


class StandInProcess:
    """tests/llm/llm_server.py in a subprocess, so its CPU does not compete with the client's event loop."""

    def __init__(self, latency_s: float) -> None:
        cmd = [sys.executable, str(ROOT / "tests" / "llm" / "llm_server.py"), "--latency", str(latency_s)]
        self._proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        assert self._proc.stdout is not None
        self.url = self._proc.stdout.readline().strip()
        if not self.url.startswith("http"):
            self._proc.kill()
            raise RuntimeError(f"stand-in server did not start (said {self.url!r})")

    def stats(self) -> dict[str, int]:
        """Requests and peak concurrency since the last call (the server resets them)."""
        with urllib.request.urlopen(self.url.removesuffix("/v1") + "/stats") as response:
            return json.loads(response.read())

    def close(self) -> None:
        self._proc.terminate()
        self._proc.wait(timeout=10)


def _stream(n: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The seed notes, then the `n` timed ones (one synthetic chat, timestamps increasing)."""
    rows = chat(SEED_NOTES + n, seed=7)
    return rows[:SEED_NOTES], rows[SEED_NOTES:]


def _memory(url: str, encoder: Encoder, concurrency: int, seed: list[dict[str, Any]]) -> Memory:
    config = Config.of(annotator="llm", llm_url=url, llm_max_in_flight=concurrency)
    mem = Memory(config=config, encoder=encoder)
    mem.add_many(seed, tenant="bench")  # untimed: the same starting memory for both sides
    return mem


def _per_note(before: dict[str, Any], after: dict[str, Any], n: int) -> dict[str, dict[str, float]]:
    """Per-stage cost of the timed part only (after minus before), with per-note averages."""
    out = {}
    for stage in ("note", "link", "evolve"):
        row = {k: after[stage][k] - before[stage][k] for k in after[stage]}
        row["tokens_per_note"] = (row["prompt_tokens"] + row["completion_tokens"]) / n
        row["calls_per_note"] = row["calls"] / n
        out[stage] = row
    return out


def _row(
    kind: str,
    concurrency: int,
    n: int,
    seconds: float,
    stages: dict[str, dict[str, float]],
    server: dict[str, int],
) -> dict[str, Any]:
    return {
        "mode": kind,
        "concurrency": concurrency,
        "notes": n,
        "seconds": seconds,
        "notes_per_s": n / seconds,
        "calls_per_note": sum(r["calls_per_note"] for r in stages.values()),
        "tokens_per_note": sum(r["tokens_per_note"] for r in stages.values()),
        "fallbacks": sum(r["fallbacks"] for r in stages.values()),
        "server_peak_in_flight": server["max_in_flight"],
        "per_stage": stages,
    }


def run(server: StandInProcess, encoder: Encoder, n: int, concurrency: int | None) -> dict[str, Any]:
    """`concurrency=None` is the sequential reference loop; otherwise one batch with c requests in flight."""
    seed, items = _stream(n)
    mem = _memory(server.url, encoder, concurrency or 1, seed)
    before = mem.cost.report()
    server.stats()
    started = time.perf_counter()
    if concurrency is None:
        for item in items:
            mem.add_many([item], tenant="bench")
    else:
        mem.add_many(items, tenant="bench")
    seconds = time.perf_counter() - started
    stages = _per_note(before, mem.cost.report(), n)
    mem.close()
    return _row(
        "sequential" if concurrency is None else "batched",
        concurrency or 1,
        n,
        seconds,
        stages,
        server.stats(),
    )


def _best(repeat: int, once: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The fastest of `repeat` runs: on a shared machine the slow ones measure the neighbours."""
    return max((once() for _ in range(repeat)), key=lambda row: row["notes_per_s"])


def real_run(
    url: str, encoder: Encoder, n: int, concurrency: int, args: argparse.Namespace
) -> dict[str, Any]:
    """`n` notes of the synthetic chat into an empty Memory, c requests in flight, against a real server."""
    config = Config.of(
        annotator="llm",
        llm_url=url,
        llm_model=args.model,
        llm_max_in_flight=concurrency,
        llm_max_tokens=args.max_tokens,
        llm_timeout_s=args.timeout,
        k_neighbours=args.k,
    )
    _, items = _stream(n)
    with Memory(config=config, encoder=encoder) as mem:
        started = time.perf_counter()
        mem.add_many(items, tenant="bench")
        seconds = time.perf_counter() - started
        cost = mem.cost
    rows = cost.report().values()
    return {
        "concurrency": concurrency,
        "notes": n,
        "seconds": round(seconds, 2),
        "notes_per_s": n / seconds,
        "calls": sum(r["calls"] for r in rows),
        "errors": sum(r["errors"] for r in rows),
        "prompt_tokens": sum(r["prompt_tokens"] for r in rows),
        "completion_tokens": sum(r["completion_tokens"] for r in rows),
        "completion_tokens_per_s": sum(r["completion_tokens"] for r in rows) / seconds,
        "fallback_rate": round(cost.fallback_rate(), 3),
        "fallbacks": cost.fallback_reasons(),
        "per_stage": cost.report(n),
    }


def real_main(args: argparse.Namespace) -> None:
    levels = args.concurrency or [1, 4]
    encoder = WordLlamaEncoder()
    if args.serve_llama:
        sys.path.insert(0, str(ROOT / "tests"))
        from integration.llama import serve

        # Each slot gets ctx // parallel tokens: give every one of max(levels) slots 2048.
        with serve(ctx=2048 * max(levels), parallel=max(levels)) as url:
            rows = [real_run(url, encoder, args.notes, c, args) for c in levels]
        server = "llama-server (llama-cpp-python 0.3.36 sources) + SmolLM2-135M-Instruct Q4_1, CPU"
    else:
        rows = [real_run(args.url, encoder, args.notes, c, args) for c in levels]
        server = args.url
    columns = ["concurrency", "notes", "seconds", "notes_per_s", "calls", "errors", "prompt_tokens"]
    print(f"server: {server}; max_tokens {args.max_tokens}, k {args.k}")
    print(table(rows, [*columns, "completion_tokens", "completion_tokens_per_s", "fallback_rate"]))
    for row in rows:
        print(f"  in flight {row['concurrency']}: fallbacks by reason {row['fallbacks'] or 'none'}")
    print(f"wrote {write_json(args.name, {'server': server, 'rows': rows})}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small run: fewer notes, concurrency 1 16 64")
    parser.add_argument("--latency", type=float, default=0.1, help="stand-in seconds per request")
    parser.add_argument("--concurrency", type=int, nargs="+", default=None)
    parser.add_argument("--sequential-notes", type=int, default=None)
    parser.add_argument("--waves", type=int, default=None, help="batched notes = waves x concurrency")
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs per setting; the fastest is kept (both sides)"
    )
    parser.add_argument("--url", default=None, help="a real OpenAI-compatible server instead of the stand-in")
    parser.add_argument("--serve-llama", action="store_true", help="start llama-server + SmolLM2 and use it")
    parser.add_argument("--notes", type=int, default=4, help="real server: notes per run")
    parser.add_argument("--model", default="default", help="real server: model name")
    parser.add_argument("--max-tokens", type=int, default=128, help="real server: answer budget")
    parser.add_argument("--timeout", type=float, default=300.0, help="real server: seconds per request")
    parser.add_argument("--k", type=int, default=2, help="real server: link candidates per note")
    parser.add_argument("--name", default="llm_ingest_real", help="real server: bench/results/<name>.json")
    args = parser.parse_args(argv)
    if args.url or args.serve_llama:
        real_main(args)
        return
    levels = args.concurrency or ([1, 16, 64] if args.quick else [1, 16, 64, 256])
    n_seq = args.sequential_notes or (10 if args.quick else 40)
    waves = args.waves or (4 if args.quick else 8)

    encoder = WordLlamaEncoder()
    server = StandInProcess(args.latency)
    try:
        sequential = _best(args.repeat, lambda: run(server, encoder, n_seq, None))
        rows = [
            _best(args.repeat, lambda c=c: run(server, encoder, max(waves * c, n_seq), c)) for c in levels
        ]
    finally:
        server.close()
    for row in rows:
        row["sequential_notes_per_s"] = sequential["notes_per_s"]
        row["speedup"] = row["notes_per_s"] / sequential["notes_per_s"]
    columns = [
        "concurrency",
        "notes",
        "notes_per_s",
        "sequential_notes_per_s",
        "speedup",
        "calls_per_note",
        "tokens_per_note",
        "server_peak_in_flight",
        "fallbacks",
    ]
    print(
        f"stand-in latency {args.latency * 1000:.0f} ms/request; sequential: {n_seq} notes, "
        f"{sequential['calls_per_note']:.2f} calls/note, {sequential['notes_per_s']:.2f} notes/s"
    )
    print(table(rows, columns))
    path = write_json(
        "llm_ingest",
        {
            "latency_s": args.latency,
            "quick": args.quick,
            "repeat": args.repeat,
            "sequential": sequential,
            "batched": rows,
        },
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
