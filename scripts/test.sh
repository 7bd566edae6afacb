#!/usr/bin/env bash
# Set up (idempotent), lint, and run the whole test suite (all markers).
# Extra arguments go to pytest. pytest's exit 5 ("no tests collected") is a failure.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/setup.sh"
cd "$ROOT"
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
