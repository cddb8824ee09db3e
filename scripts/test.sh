#!/usr/bin/env bash
# Set up (if needed) and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The real-LLM tier (tests/integration, marker llm_real): llama-server is built once and cached under
# .venv/llama-server (a cold build takes ~8 min on 2 cores; afterwards this returns at once).
bash scripts/llama_server.sh >/dev/null
exec .venv/bin/python -m pytest -q "$@"
