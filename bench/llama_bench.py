"""Build and run llama.cpp's own ``llama-bench``: the reference our engine is held to.

The binary is built from the llama.cpp sources vendored in the llama-cpp-python
sdist of the exact version installed, with the CPU features the installed library
was built with (so both sides run the same kernels; OpenMP as by default). Not
with -march=native, as scripts/setup.sh explains: on a CPU with AMX (Sapphire
Rapids) in a VM, ggml's AMX backend crashed every decode (llama-bench and
llama-batched-bench segfaulted on the first one). The sdist comes from PyPI like
every other package; the build lands in a cache directory named by the version and
those features, and is reused.

It builds three targets of llama.cpp's tools, in one build: ``llama-bench`` (one
sequence: prompt and generation speed), ``llama-batched-bench`` (several sequences
decoded together, see bench.batch) and ``llama-server`` (``-np`` slots with
continuous batching, see bench.serve). A cache that holds some of them builds only
the others.

    python -m bench.llama_bench        # build all three (once, ~12 min on 2 cores), print the paths
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "notebook-grader"


def llama_cpp_version() -> str:
    return importlib.metadata.version("llama-cpp-python")


# The llama.cpp tools we build; a build makes every one that is not cached yet.
TARGETS = ("llama-bench", "llama-batched-bench", "llama-server")


# ggml's CPU feature options, by the names llama_print_system_info reports them with.
_CPU_FEATURES = ("AVX", "AVX_VNNI", "AVX2", "F16C", "FMA", "BMI2", "AVX512", "AVX512_VBMI",
                 "AVX512_VNNI", "AVX512_BF16")


@functools.cache
def cpu_flags() -> tuple[str, ...]:
    """The cmake flags that build ggml with the CPU features of the installed
    llama-cpp-python's library (scripts/setup.sh chose them: AVX2/FMA/F16C, AVX-512
    where the CPU has it, no AMX)."""
    import llama_cpp

    info = llama_cpp.llama_print_system_info().decode(errors="replace")
    have = set(re.findall(r"(\w+) = 1", info))
    flags = ["-DGGML_NATIVE=OFF"]
    flags += [f"-DGGML_{f}={'ON' if f in have else 'OFF'}" for f in _CPU_FEATURES]
    amx = "ON" if "AMX_INT8" in have else "OFF"
    flags += [f"-DGGML_AMX_TILE={amx}", f"-DGGML_AMX_INT8={amx}", "-DGGML_AMX_BF16=OFF"]
    return tuple(flags)


def binary_path(version: str | None = None, target: str = "llama-bench") -> Path:
    version = version or llama_cpp_version()
    key = hashlib.sha256(" ".join(cpu_flags()).encode()).hexdigest()[:10]
    return cache_dir() / f"llama-bench-{version}-{key}" / "bin" / target


def _run(cmd: list[str], cwd: Path | None = None) -> None:
    log.info("running %s", " ".join(cmd))
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])} failed ({proc.returncode}):\n"
                           f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")


def ensure_llama_bench(target: str = "llama-bench") -> Path:
    """Path of ``target`` (one of TARGETS) built from the installed llama-cpp-python's
    sources. A build makes every target not cached yet, in one cmake build."""
    if target not in TARGETS:
        raise ValueError(f"unknown llama.cpp target {target!r}: not one of {TARGETS}")
    version = llama_cpp_version()
    wanted = binary_path(version, target)
    if wanted.exists():
        return wanted
    missing = [t for t in TARGETS if not binary_path(version, t).exists()]
    root = wanted.parent.parent
    with tempfile.TemporaryDirectory(prefix="llama-bench-src-") as tmp:
        tmpdir = Path(tmp)
        _run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
              "-q", "-d", str(tmpdir), f"llama-cpp-python=={version}"])
        sdist = next(tmpdir.glob("llama_cpp_python-*.tar.gz"))
        with tarfile.open(sdist) as tar:
            tar.extractall(tmpdir, filter="data")
        src = next(tmpdir.glob("llama_cpp_python-*/vendor/llama.cpp"))
        build = tmpdir / "build"
        _run(["cmake", "-S", str(src), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
              "-DBUILD_SHARED_LIBS=OFF", "-DLLAMA_CURL=OFF", "-DLLAMA_BUILD_TESTS=OFF",
              "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_SERVER=ON", *cpu_flags()])
        _run(["cmake", "--build", str(build), "--target", *missing,
              "-j", str(os.cpu_count() or 2)])
        wanted.parent.mkdir(parents=True, exist_ok=True)
        for name in missing:
            shutil.copy2(next(build.rglob(f"bin/{name}")), binary_path(version, name))
    (root / "BUILT_FROM").write_text(f"llama-cpp-python=={version} sdist, vendor/llama.cpp, "
                                     f"{' '.join(cpu_flags())}\n")
    return wanted


@dataclass(frozen=True)
class BenchResult:
    test: str  # "pp512" or "tg128"
    n_prompt: int
    n_gen: int
    threads: int
    tokens_per_s: float
    stddev: float


def run_llama_bench(model: Path, threads: int, n_prompt: int, n_gen: int,
                    repetitions: int = 3, flash_attn: str = "auto",
                    depth: int = 0) -> list[BenchResult]:
    """Run llama-bench for a prompt test (-p) and a generation test (-n).

    ``depth`` (-d) fills the context with that many tokens first, so a decode
    test can run at the same context depth as the decode it is compared with.
    """
    exe = ensure_llama_bench()
    cmd = [str(exe), "-m", str(model), "-t", str(threads), "-p", str(n_prompt),
           "-n", str(n_gen), "-r", str(repetitions), "-fa", flash_attn, "-d", str(depth),
           "-o", "json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"llama-bench failed ({proc.returncode}): {proc.stderr[-2000:]}")
    rows = json.loads(proc.stdout)
    out = []
    for row in rows:
        test = f"pp{row['n_prompt']}" if row["n_prompt"] else f"tg{row['n_gen']}"
        out.append(BenchResult(test, row["n_prompt"], row["n_gen"], row["n_threads"],
                               row["avg_ts"], row["stddev_ts"]))
    return out


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for name in TARGETS:
        print(ensure_llama_bench(name))
