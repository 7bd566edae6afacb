"""An assignment's own Python environment: a venv layered on the grader's.

The venv (``$GRADER_DATA_DIR/envs/py3.11-<hash>``, the hash of its requirement lines, this
interpreter and the grader's environment) holds only what the grader's environment lacks
or holds at another version: a ``.pth`` file adds the grader's site-packages after its
own, so the assignment's versions come first and everything else is the grader's. pip
runs as a program (``pip --python <venv>``), outside the sandbox and never for student
code, from wheels only (``--only-binary :all:``: no package's build script runs on the
grader's machine). The venv is built once (``building.build_once``) and moved into place only
once pip succeeded and every requirement reads as satisfied from inside it.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import venv
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from ..errors import InputError
from .building import build_once, run_installer
from .declared import python_requirements

__all__ = ["build_python_env", "python_env_folder", "ready_python_env", "unmet"]

STAMP = ".grader-env.json"
_CHECK = """
import json, sys
from importlib import metadata
from packaging.requirements import Requirement
bad = []
for line in json.loads(sys.argv[1]):
    req = Requirement(line)
    if req.marker is not None and not req.marker.evaluate():
        continue
    try:
        have = metadata.version(req.name)
    except metadata.PackageNotFoundError:
        bad.append(line)
        continue
    if not req.specifier.contains(have, prereleases=True):
        bad.append(f"{line} (found {have})")
print(json.dumps(bad))
"""


def _our_site() -> list[str]:
    return [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))
            and Path(p).is_dir()]


def python_env_folder(root: Path, lines: tuple[str, ...]) -> Path:
    key = json.dumps([sorted(lines), sys.version, sys.prefix, _our_site()])
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return root / f"py{sys.version_info[0]}.{sys.version_info[1]}-{digest}"


def _python(folder: Path) -> Path:
    return folder / "bin" / "python"


def ready_python_env(root: Path, lines: tuple[str, ...]) -> Path | None:
    """The interpreter of the built venv for ``lines``; None when it is not built."""
    folder = python_env_folder(root, lines)
    try:
        stamp = json.loads((folder / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return _python(folder) if stamp.get("lines") == sorted(lines) else None


def unmet(lines: tuple[str, ...]) -> list[str]:
    """The requirements the grader's own environment does not satisfy (markers that do not
    apply here are met)."""
    out = []
    for req in python_requirements(lines):
        if req.marker is not None and not req.marker.evaluate():
            continue
        try:
            have = metadata.version(req.name)
        except metadata.PackageNotFoundError:
            out.append(str(req))
            continue
        if not req.specifier.contains(have, prereleases=True):
            out.append(f"{req} (the grader has {have})")
    return out


def build_python_env(root: Path, lines: tuple[str, ...], source: str,
                     say: Callable[[str], None]) -> Path:
    """Build (once) the venv for ``lines``; its interpreter. Raises InputError naming
    ``source`` with pip's last lines when pip fails or a requirement is still unmet."""
    folder = python_env_folder(root, lines)
    build_once(folder, lambda: ready_python_env(root, lines) is not None,
               lambda into: _build(into, lines, source, say), say, "Python packages")
    return _python(folder)


def _build(folder: Path, lines: tuple[str, ...], source: str, say: Callable[[str], None]) -> None:
    venv.EnvBuilder(symlinks=True, with_pip=False, clear=True).create(folder)
    folder.chmod(0o755)  # the sandbox's own uid reads it
    site = folder / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    (site / "_grader_base.pth").write_text(
        "import site; " + "; ".join(f"site.addsitedir({p!r})" for p in _our_site()) + "\n",
        encoding="utf-8")
    (folder / "requirements.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    argv = [sys.executable, "-m", "pip", "--python", str(_python(folder)), "install",
            "--disable-pip-version-check", "--no-input", "--only-binary", ":all:",
            "--no-warn-script-location", "-r", str(folder / "requirements.txt")]
    say(f"Python packages: pip install {' '.join(str(r) for r in python_requirements(lines))}")
    tail = run_installer(argv, say)
    if tail is not None:
        raise InputError(source, f"pip could not install the assignment's Python packages: "
                                 f"{tail}")
    wanted = [str(r) for r in python_requirements(lines)]
    out = subprocess.run([str(_python(folder)), "-c", _CHECK, json.dumps(wanted)],
                         capture_output=True, text=True, timeout=120, check=False)
    still = json.loads(out.stdout or "null") if out.returncode == 0 else None
    if still is None or still:
        raise InputError(source, "after pip, still not importable in the assignment's "
                                 f"environment: {', '.join(still or wanted)} "
                                 f"{out.stderr[-500:]}".strip())
    (folder / STAMP).write_text(json.dumps({"lines": sorted(lines), "python": sys.version,
                                            "grader": sys.prefix}), encoding="utf-8")
