#!/usr/bin/env bash
# The one command for a lent CUDA machine (the `device` tool runs it in a copy of the repo):
#   bash bench/device_run.sh
# That machine has torch, triton and pyarrow but none of amem's other packages and no network: they
# travel as wheels in .whl/ (ignored by git; fetch them with `pip download --no-deps --python-version
# 3.12 --platform manylinux2014_x86_64 ...`: faiss-cpu, tantivy, wordllama, pydantic, pydantic-core,
# toml, annotated-types, typing-inspection, typing-extensions, at the versions pyproject.toml pins).
# faiss-gpu 1.15.1 (135 MB, built on CUDA 12 libraries) does not fit through that door; without it the
# engine's GPU search runs on kernels.masked_topk (Triton), and the faiss_gpu rows say skipped.
# Writes everything to $OUT (the device tool's folder), else bench/results.
set -uo pipefail
OUT=${OUT:-bench/results}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 OMP_WAIT_POLICY=PASSIVE
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
python3 -m bench.gpu_check --only faiss_gpu kernels engine_index engine_memory --out "$OUT/gpu_check.json" \
  2>&1 | tail -60
python3 -m bench.kernels --sizes 10000,100000,1000000 2>&1 | tee "$OUT/kernels.txt"
cp bench/results/kernels.json "$OUT/kernels.json"
# The engine's state and recall tests with the device left on AUTO: every search goes through the GPU.
timeout 200 python3 -m pytest -q -p no:cacheprovider -o addopts="" tests/kernels tests/state tests/recall \
  2>&1 | tail -40 | tee "$OUT/pytest_gpu.txt"
