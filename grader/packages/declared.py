"""The packages an assignment declares: ``[packages]`` in assignment.toml.

```toml
[packages]
python = "requirements.txt"   # a pip requirements file of the folder, or a list of lines
r = ["janitor", "skimr"]      # R package names, or a file of the folder (one name a line)
```

Python lines are pip's requirement specifiers (``tqdm>=4.60``, ``seaborn``, markers
allowed) and these options only: ``--index-url``/``-i``, ``--extra-index-url``,
``--find-links``/``-f``, ``--no-index``, ``--pre``. Editable installs, nested ``-r``/``-c``
files and other options are refused, naming the file and the line: what is installed must
be readable in one place. R names are CRAN package names (versions are not pinned: the
repository gives its current one). Problems are collected, never raised one at a time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

__all__ = ["Packages", "python_requirements", "read_packages"]

OPTIONS = {"--index-url": True, "-i": True, "--extra-index-url": True, "--find-links": True,
           "-f": True, "--no-index": False, "--pre": False}  # option -> takes a value
_R_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9.]*[A-Za-z0-9]$")


@dataclass(frozen=True, slots=True)
class Packages:
    """What an assignment's notebooks need beyond the grader's own environment."""

    python: tuple[str, ...] = ()  # requirement lines and options, as pip reads them
    r: tuple[str, ...] = ()  # R package names
    source: str = ""  # where they were declared ("requirements.txt", "assignment.toml")

    def __bool__(self) -> bool:
        return bool(self.python or self.r)

    @property
    def requirements(self) -> tuple[Requirement, ...]:
        """The Python requirements (not the options)."""
        return python_requirements(self.python)

    def describe(self) -> str:
        parts = [", ".join(str(r) for r in self.requirements)] if self.python else []
        parts += [f"R: {', '.join(self.r)}"] if self.r else []
        return "; ".join(p for p in parts if p) or "none"


def python_requirements(lines: tuple[str, ...]) -> tuple[Requirement, ...]:
    return tuple(Requirement(line) for line in lines if not line.startswith("-"))


def read_packages(root: Path, table: Any, where: str, problems: list[str]) -> Packages:
    """The ``[packages]`` table of ``root``'s assignment.toml; each problem appended to
    ``problems`` as a sentence naming the file (and line) it is about."""
    if table is None:
        return Packages()
    if not isinstance(table, dict):
        problems.append("`packages` must be a table: [packages] with python = ... and r = ...")
        return Packages()
    for key in sorted(set(table) - {"python", "r"}):
        problems.append(f"[packages]: unknown key {key!r} (python and r only)")
    sources = []
    python = _lines(root, table.get("python"), "python", problems, sources)
    r = _lines(root, table.get("r"), "r", problems, sources)
    python = tuple(line for n, line in python if _python_line(line, n, problems))
    r = tuple(line for n, line in r if _r_name(line, n, problems))
    if len({canonicalize_name(q.name) for q in python_requirements(python)}) < \
            len(python_requirements(python)):
        problems.append(f"{sources[0] if sources else where}: a Python package is named twice")
    return Packages(python, tuple(dict.fromkeys(r)), ", ".join(sources) or where)


def _lines(root: Path, value: Any, key: str, problems: list[str],
           sources: list[str]) -> list[tuple[str, str]]:
    """(where, line) for each non-empty, non-comment line of the value: a file of the
    folder, or a list of strings."""
    if value is None:
        return []
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        sources.append("assignment.toml")
        return [(f"[packages] {key}, item {i}", v.strip()) for i, v in enumerate(value, 1)
                if v.strip()]
    if not isinstance(value, str):
        problems.append(f"[packages] {key} must name a file of the folder or list the "
                        "packages")
        return []
    path = (root / value).resolve()
    if not path.is_relative_to(root.resolve()):
        problems.append(f"[packages] {key}: {value!r} leads outside the assignment folder")
        return []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(f"[packages] {key}: cannot read {value!r} ({exc})")
        return []
    sources.append(value)
    out = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = re.sub(r"(^|\s)#.*$", "", raw).strip()
        if line:
            out.append((f"{value}, line {n}", line))
    return out


def _python_line(line: str, where: str, problems: list[str]) -> bool:
    if line.startswith("-"):
        option, _, value = line.partition(" ") if " " in line else line.partition("=")
        if option not in OPTIONS:
            problems.append(f"{where}: {option!r} is not allowed here (only package names "
                            f"and {', '.join(sorted(OPTIONS))})")
            return False
        if OPTIONS[option] and not value.strip():
            problems.append(f"{where}: {option} needs a value")
            return False
        return True
    try:
        req = Requirement(line)
    except InvalidRequirement as exc:
        problems.append(f"{where}: {line!r} is not a package requirement ({exc})")
        return False
    if req.url and not req.url.startswith(("https:", "http:", "file:")):
        problems.append(f"{where}: {line!r}: only http(s) and file URLs are allowed")
        return False
    return True


def _r_name(line: str, where: str, problems: list[str]) -> bool:
    if not _R_NAME.match(line):
        problems.append(f"{where}: {line!r} is not an R package name")
        return False
    return True
