"""The packages an assignment needs, and the environment of its own they live in.

An assignment declares them (``[packages]`` in assignment.toml, ``declared``); what the
grader's environment already satisfies needs nothing; the rest is installed once, by the
instructor's action (``python -m grader packages FOLDER --install``, the app's "Install
packages" button, or ``grade``, which installs first), into a Python venv layered on the
grader's and an R library of the assignment's own (``python_env``, ``r_library``), cached
under ``$GRADER_DATA_DIR/envs`` by a hash of the list. Every run of the assignment's
notebooks then uses them (``run_env``): the sandbox starts the kernel from the venv and
puts the library first on R's path. Installs never run inside the sandbox, and never for
a student's code: a student's ``pip install`` has no network there. ``files`` turns a
``requirements.txt`` or an R script beside an imported notebook into the declaration.

May import: errors, sandbox (its environment, for R), and ``inference``'s public names
(``data_dir``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from inference import data_dir

from .declared import Packages, read_packages
from .python_env import build_python_env, ready_python_env, unmet
from .r_library import build_r_library, ready_r_library, unmet_r

__all__ = ["PackageStatus", "Packages", "RunEnv", "envs_root", "install", "read_packages",
           "run_env", "status"]


@dataclass(frozen=True, slots=True)
class RunEnv:
    """What a sandboxed run uses besides the grader's own environment."""

    python: Path | None = None  # the assignment's venv interpreter
    r_library: Path | None = None  # first on R_LIBS

    def folders(self) -> tuple[Path, ...]:
        """The host folders the sandbox must show (read-only)."""
        venv = (self.python.parent.parent,) if self.python else ()
        return venv + ((self.r_library,) if self.r_library else ())

    def __bool__(self) -> bool:
        return bool(self.python or self.r_library)


@dataclass(frozen=True, slots=True)
class PackageStatus:
    """What of the declared packages a run would lack now."""

    packages: Packages
    missing_python: tuple[str, ...] = ()
    missing_r: tuple[str, ...] = ()

    @property
    def ready(self) -> bool:
        return not (self.missing_python or self.missing_r)

    def text(self) -> str:
        """One sentence for the instructor ("" when nothing is missing)."""
        if self.ready:
            return ""
        parts = ([f"Python: {', '.join(self.missing_python)}"] if self.missing_python else [])
        parts += [f"R: {', '.join(self.missing_r)}"] if self.missing_r else []
        return (f"The assignment's packages ({self.packages.source}) are not installed here: "
                f"{'; '.join(parts)}. Install them (the Install packages button, or python -m "
                "grader packages FOLDER --install) before grading: without them the cells "
                "that import them fail for every student and their checks are not charged.")


def envs_root() -> Path:
    return data_dir() / "envs"


def status(packages: Packages, root: Path | None = None) -> PackageStatus:
    root = root or envs_root()
    py = r = ()
    if packages.python and ready_python_env(root, packages.python) is None:
        py = tuple(unmet(packages.python))
    if packages.r and ready_r_library(root, packages.r) is None:
        r = tuple(unmet_r(packages.r))
    return PackageStatus(packages, py, r)


def run_env(packages: Packages, root: Path | None = None) -> RunEnv | None:
    """The built environment of these packages (None when nothing was built: the
    grader's own environment serves, whatever it lacks)."""
    if not packages:
        return None
    root = root or envs_root()
    env = RunEnv(ready_python_env(root, packages.python) if packages.python else None,
                 ready_r_library(root, packages.r) if packages.r else None)
    return env or None


def install(packages: Packages, say: Callable[[str], None] = lambda _: None,
            root: Path | None = None) -> PackageStatus:
    """Install what the grader's environment lacks (raises InputError naming the
    declaration when an installer fails); the status after."""
    root = root or envs_root()
    before = status(packages, root)
    if before.missing_python:
        build_python_env(root, packages.python, packages.source, say)
    if before.missing_r:
        build_r_library(root, packages.r, packages.source, say)
    if before.ready:
        say("Every declared package is installed.")
    return status(packages, root)
