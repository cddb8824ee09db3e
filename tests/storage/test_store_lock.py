"""One writer per store, across real processes: a running `amem serve` keeps a second serve and an ingest
out (naming its pid), while read-only commands still work."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx

from tests.service.live import free_socket, wait_healthy

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "sample_chat.jsonl"


def _amem(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "engine.cli", *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)


def _port() -> int:
    sock = free_socket()
    port = int(sock.getsockname()[1])
    sock.close()
    return port


def test_second_writer_refuses_to_start_naming_the_holder(tmp_path: Path) -> None:
    store = tmp_path / "store"
    assert _amem("ingest", str(SAMPLE), "--store", str(store)).returncode == 0
    port = _port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "engine.cli", "serve", "--store", str(store), "--port", str(port)]
    server = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        wait_healthy(f"http://127.0.0.1:{port}")
        for second in (
            ("serve", "--store", str(store), "--port", str(_port())),
            ("ingest", str(SAMPLE), "--store", str(store), "--tenant", "other"),
        ):
            run = _amem(*second)
            assert run.returncode == 2, run.stderr
            assert run.stderr.startswith("amem: error: ") and f"process {server.pid}" in run.stderr
            assert "only one writer" in run.stderr and "Traceback" not in run.stderr
        read = _amem("search", "hiking", "--store", str(store), "--json")  # readers take no lock
        assert read.returncode == 0, read.stderr
        # The first server still writes.
        r = httpx.post(
            f"http://127.0.0.1:{port}/v1/memories", json={"memories": [{"content": "Still mine."}]}
        )
        assert r.status_code == 201, r.text
    finally:
        server.terminate()
        server.communicate(timeout=60)
    # The lock went with its holder: the next writer gets in.
    assert _amem("ingest", str(SAMPLE), "--store", str(store), "--tenant", "other").returncode == 0


def test_lock_of_a_killed_holder_is_free(tmp_path: Path) -> None:
    store = tmp_path / "store"
    code = f"from engine import Memory; m = Memory({str(store)!r}); print('ready', flush=True); input()"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    holder = subprocess.Popen(
        [sys.executable, "-c", code], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == b"ready"
    assert f"process {holder.pid}" in _amem("ingest", str(SAMPLE), "--store", str(store)).stderr
    holder.kill()
    holder.wait()
    assert _amem("ingest", str(SAMPLE), "--store", str(store)).returncode == 0
