#!/usr/bin/env bash
# Set up (idempotent) and start the app on the embedded default models.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/setup.sh"
cd "$ROOT"
exec "$ROOT/.venv/bin/python" -m streamlit run app.py "$@"
