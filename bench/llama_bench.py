"""Build and run llama.cpp's own ``llama-bench``: the reference our engine is held to.

The binary is built from the llama.cpp sources vendored in the llama-cpp-python
sdist of the exact version installed (so both sides run the same kernels, built
with the same default flags: native CPU, OpenMP). The sdist comes from PyPI like
every other package; the build lands in a cache directory and is reused.

    python -m bench.llama_bench        # build (once, ~8 min on 2 cores) and print the path
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import os
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


def binary_path(version: str | None = None) -> Path:
    version = version or llama_cpp_version()
    return cache_dir() / f"llama-bench-{version}" / "bin" / "llama-bench"


def _run(cmd: list[str], cwd: Path | None = None) -> None:
    log.info("running %s", " ".join(cmd))
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:3])} failed ({proc.returncode}):\n"
                           f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")


def ensure_llama_bench() -> Path:
    """Path of a llama-bench built from the installed llama-cpp-python's sources."""
    version = llama_cpp_version()
    target = binary_path(version)
    if target.exists():
        return target
    root = target.parent.parent
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
              "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_SERVER=OFF"])
        _run(["cmake", "--build", str(build), "--target", "llama-bench",
              "-j", str(os.cpu_count() or 2)])
        built = next(build.rglob("bin/llama-bench"))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built, target)
    (root / "BUILT_FROM").write_text(f"llama-cpp-python=={version} sdist, vendor/llama.cpp\n")
    return target


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
    print(ensure_llama_bench())
