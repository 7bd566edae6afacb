#!/usr/bin/env bash
# Set up (idempotent), lint, and run the whole test suite (all markers).
# Extra arguments go to pytest. pytest's exit 5 ("no tests collected") is a failure.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/setup.sh"
cd "$ROOT"

# Test-only tools (the real nbgrader and otter-grader, for tests/test_*_differential.py) in a venv of
# their own: never in .venv, never imported by grader/ or inference/. Built once with pip's
# cache, rebuilt from scratch only when requirements-tools.txt (or Python's version) changes.
TOOLS="$ROOT/.venv-tools"
TOOLS_PY="${PYTHON:-python3.11}"
command -v "$TOOLS_PY" >/dev/null 2>&1 || TOOLS_PY=python3
tools_want="$( (cat "$ROOT/requirements-tools.txt"; "$TOOLS_PY" --version) | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$TOOLS/.tools-stamp" 2>/dev/null)" != "$tools_want" ]; then
  echo "[test] building $TOOLS from requirements-tools.txt (once)" >&2
  "$TOOLS_PY" -m venv --clear "$TOOLS"
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$TOOLS/bin/python" -m pip install -q \
    -r "$ROOT/requirements-tools.txt"
  echo "$tools_want" > "$TOOLS/.tools-stamp"
fi

"$ROOT/.venv/bin/python" -m ruff check .
set +e
"$ROOT/.venv/bin/python" -m pytest "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests: treating as a failure" >&2
  exit 1
fi
exit "$rc"
