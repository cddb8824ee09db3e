#!/usr/bin/env bash
# Set up (if needed), ingest the bundled sample chat log with the embedded defaults, answer questions.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
rm -rf .store/demo
exec .venv/bin/amem demo --store .store/demo
