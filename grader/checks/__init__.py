"""Check types, one module each: everything about a type in one place.

Each module defines ``TYPE = grader.check_types.CheckType(...)``: its fields, how it
is evaluated, what it found (``grader.types.Facts``), how the student's letter says it,
what makes it stale, what may produce it. Importing this package registers every module
of it (``grader/__init__`` does, when the grader loads), so a new check type is one
module here, its test, and its row in the docs' table (a test compares the table with
the registry); nothing else lists the types.

A type's module reaches into the rooms that evaluate and say it only inside the
functions it declares, so registering the types loads nothing else.

May import: check_types, types, errors, analysis, rubrics, layers, letters.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from ..check_types import CheckType, register


def _register_modules() -> tuple[str, ...]:
    found = []
    for info in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if info.name.startswith("_"):
            continue  # what several types share, not a type
        module = importlib.import_module(f"{__name__}.{info.name}")
        kind = getattr(module, "TYPE", None)
        if not isinstance(kind, CheckType):
            raise TypeError(f"{module.__name__} defines no TYPE = CheckType(...)")
        if kind.name != info.name:
            raise TypeError(f"{module.__name__} declares the type {kind.name!r}: a type's "
                            "module is named after it")
        register(kind)
        found.append(kind.name)
    return tuple(found)


MODULES = _register_modules()
