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

# With arguments: one pytest run of what they name. Without: the whole suite, in three
# pytest processes one after another (by file name), so that memory a test process
# keeps (models and contexts of the app's and the engine's tests) is given back between
# them: in one process the suite's resident memory grew past the CI's 24 GiB once.
run_pytest() {
  set +e
  "$ROOT/.venv/bin/python" -m pytest "$@"
  local rc=$?
  set -e
  if [ "$rc" -eq 5 ]; then
    echo "pytest collected no tests ($*): treating as a failure" >&2
    return 1
  fi
  return "$rc"
}
if [ "$#" -gt 0 ]; then
  run_pytest "$@"
  exit $?
fi
rc=0
for group in 'tests/test_[a-d]*.py' 'tests/test_[e-o]*.py' 'tests/test_[p-z]*.py'; do
  # shellcheck disable=SC2086  # the glob is meant to expand
  # --durations: where the suite's time goes, printed in every run (issue 34, item 7)
  run_pytest --durations=25 $group || rc=1
done
all=$(ls "$ROOT"/tests/test_*.py | wc -l)
ran=$(ls "$ROOT"/tests/test_[a-d]*.py "$ROOT"/tests/test_[e-o]*.py "$ROOT"/tests/test_[p-z]*.py | wc -l)
if [ "$all" -ne "$ran" ]; then
  echo "the three groups ran $ran of $all test files: a file name fits none" >&2
  rc=1
fi
exit "$rc"
