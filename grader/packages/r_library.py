"""An assignment's own R library: the R packages it declares that R here lacks.

The library (``$GRADER_DATA_DIR/envs/r<version>-<hash>``) comes first on the sandbox's
``R_LIBS``, before R's own libraries. ``install.packages`` runs in ``Rscript`` outside the
sandbox, never for student code, from ``GRADER_R_REPOS`` (default
``https://cloud.r-project.org``; a local CRAN-like folder works as ``file:///...``), with
the packages' dependencies; it is built in a folder of its own and moved into place once
every package loads from it, so a failed install leaves nothing half made.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from ..errors import InputError
from ..sandbox.view import sandbox_env
from .building import build_once, run_installer

__all__ = ["build_r_library", "r_library_folder", "r_repos", "ready_r_library", "unmet_r"]

STAMP = ".grader-env.json"
DEFAULT_REPOS = "https://cloud.r-project.org"
# the packages of the arguments that no library (the given one first) holds
_MISSING = ('a <- commandArgs(TRUE); lib <- a[1]; p <- a[-1]; '
            'libs <- c(if (nzchar(lib) && dir.exists(lib)) lib, .libPaths()); '
            'cat(p[!nzchar(vapply(p, function(x) system.file(package = x, lib.loc = libs), '
            '""))], sep = "\\n")')
_INSTALL = ('a <- commandArgs(TRUE); options(warn = 1); '
            'install.packages(a[-(1:2)], lib = a[1], repos = a[2], '
            'dependencies = c("Depends", "Imports", "LinkingTo"), Ncpus = 2L)')


def r_repos() -> str:
    return os.environ.get("GRADER_R_REPOS") or DEFAULT_REPOS


def _rscript() -> str | None:
    return shutil.which("Rscript")


@functools.cache
def _version() -> str:
    rscript = _rscript()
    if rscript is None:
        return "none"
    out = subprocess.run([rscript, "-e", "cat(as.character(getRversion()))"],
                         capture_output=True, text=True, timeout=60, check=False)
    return out.stdout.strip() or "unknown"


def r_library_folder(root: Path, names: tuple[str, ...]) -> Path:
    version = _version()
    digest = hashlib.sha256(json.dumps([sorted(names), version]).encode()).hexdigest()[:16]
    return root / f"r{version}-{digest}"


def ready_r_library(root: Path, names: tuple[str, ...]) -> Path | None:
    folder = r_library_folder(root, names)
    try:
        stamp = json.loads((folder / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return folder if stamp.get("names") == sorted(names) else None


def unmet_r(names: tuple[str, ...], library: Path | None = None) -> list[str]:
    """The packages that neither ``library`` nor R's own libraries hold (all of them when
    R is missing)."""
    rscript = _rscript()
    if not names:
        return []
    if rscript is None:
        return list(names)
    env = sandbox_env() | {"HOME": os.environ.get("HOME", "/")}
    out = subprocess.run([rscript, "--no-init-file", "-e", _MISSING, str(library or ""),
                          *names], capture_output=True, text=True, timeout=120, check=False,
                         env=env)
    if out.returncode != 0:
        return list(names)
    return [line for line in out.stdout.splitlines() if line.strip()]


def build_r_library(root: Path, names: tuple[str, ...], source: str,
                    say: Callable[[str], None]) -> Path:
    """Build (once) the library for ``names``; its folder. Raises InputError naming
    ``source`` when R is missing or a package does not load after the install."""
    rscript = _rscript()
    if rscript is None:
        raise InputError(source, "the assignment needs R packages and R is not installed")
    folder = r_library_folder(root, names)

    def build(into: Path) -> None:
        into.mkdir(mode=0o755)
        wanted = [n for n in names if n in unmet_r(names)]
        say(f"R packages: install.packages({', '.join(wanted)}) from {r_repos()}")
        tail = run_installer([rscript, "--no-init-file", "-e", _INSTALL, str(into), r_repos(),
                              *wanted], say) if wanted else None
        if still := unmet_r(names, into):
            raise InputError(source, f"R could not install {', '.join(still)} from "
                                     f"{r_repos()}: {tail or 'see the install log'}")
        (into / STAMP).write_text(json.dumps({"names": sorted(names)}), encoding="utf-8")

    build_once(folder, lambda: ready_r_library(root, names) is not None, build, say,
               "R packages")
    return folder
