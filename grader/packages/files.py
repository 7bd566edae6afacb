"""Package lists that arrive as files: ``requirements.txt`` beside an imported notebook or
among the uploads, otter's ``requirements.R``, an ``install.R`` or an ``r-packages.txt``.

``declare`` writes them into an assignment folder as its declaration (an R script becomes
``r-packages.txt``: the names its ``install.packages(...)``, ``library(...)`` and
``require(...)`` calls name) and returns assignment.toml's ``[packages]`` table; they are
never data. What the lines may hold is checked when the folder loads
(``declared.read_packages``).
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["PACKAGE_FILES", "declare", "r_names"]

PYTHON_FILE = "requirements.txt"
R_FILE = "r-packages.txt"
R_SCRIPTS = ("requirements.R", "install.R")
PACKAGE_FILES = frozenset({PYTHON_FILE, R_FILE, *R_SCRIPTS})
_CALL = re.compile(r"\b(install\.packages|library|require|requireNamespace|p_load)\s*\(")
_STRING = re.compile(r"[\"']([A-Za-z][A-Za-z0-9.]*)[\"']")
_NAMED_ARG = re.compile(r",\s*[A-Za-z_.]+\s*=")


def _argument(text: str, start: int) -> str:
    """The text of a call's arguments, from just after its "(" to the matching ")"."""
    depth = 1
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return text[start:i]
    return text[start:]


def r_names(script: str) -> list[str]:
    """The packages an R script installs or loads, in order, once each."""
    script = "\n".join(line.split("#", 1)[0] for line in script.splitlines())
    names: list[str] = []
    for m in _CALL.finditer(script):
        args = _argument(script, m.end())
        first = _NAMED_ARG.split(args, 1)[0]  # before repos = ..., lib = ...
        if _STRING.search(first):
            names += _STRING.findall(first)
        elif m.group(1) == "p_load":  # pacman's bare names: p_load(dplyr, readr)
            names += re.findall(r"[A-Za-z][A-Za-z0-9.]*", first)
        elif re.fullmatch(r"\s*[A-Za-z][A-Za-z0-9.]*\s*", first):
            names.append(first.strip())
    return list(dict.fromkeys(n for n in names if n not in ("c", "character")))


def declare(folder: Path, files: dict[str, bytes]) -> str:
    """Write the package files among ``files`` (name -> bytes) into ``folder``; the
    ``[packages]`` table for its assignment.toml ("" when there are none)."""
    table = []
    if PYTHON_FILE in files:
        (folder / PYTHON_FILE).write_bytes(files[PYTHON_FILE])
        table.append(f'python = "{PYTHON_FILE}"')
    r: list[str] = []
    if R_FILE in files:
        r += files[R_FILE].decode("utf-8", errors="replace").splitlines()
    for script in R_SCRIPTS:
        if script in files:
            r += r_names(files[script].decode("utf-8", errors="replace"))
    r = list(dict.fromkeys(n.strip() for n in r if n.strip()))
    if r:
        (folder / R_FILE).write_text("\n".join(r) + "\n", encoding="utf-8")
        table.append(f'r = "{R_FILE}"')
    return "[packages]\n" + "\n".join(table) + "\n" if table else ""
