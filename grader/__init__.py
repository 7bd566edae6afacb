"""The grader: notebooks in, grades with evidence out. Never imports streamlit.

    from grader import Grader, GradeInput, load_assignment
    assignment = load_assignment(Path("examples/retail-sales"))
    report = Grader(assignment).grade(GradeInput.from_path(Path("sub.ipynb")))
    report.score, report.max_score, report.criteria  # no models: deterministic only

The rooms, from the bottom up (each package's docstring says what it owns and what
it may import; ``tests/test_layout.py`` holds the arrows to these rules):

- ``errors``, ``types``, ``safe_text``, ``events``, ``pyast`` (thread-safe parsing): the
  vocabulary every room uses;
- ``notebooks``: files in (notebooks, ZIPs, whose notebook it is);
- ``check_types``: what a check type is, and the registry of them;
- ``rubrics``: the rubric language, its editor's text and the importers;
  ``assignment``: an assignment folder (rubric, template, solution, data);
- ``analysis``: reading the student's work without running it;
- ``sandbox``: running untrusted notebooks and inspecting their variables;
- ``layers``: L1 structure, L2 outputs, L3 code analysis and L4 feedback (models);
- ``integrity``: is this the right notebook, free of prompt injection;
- ``scoring`` and ``pipeline``: one notebook through the layers to a ``GradeReport``;
- ``store``: SQLite (grades, overrides, batches, rubric versions, files);
- ``letters`` and ``exports``: what the student and the gradebook receive;
- ``views``: the rows and words the pages show; ``service``: what the pages call;
- ``cli``: ``python -m grader``;
- ``checks``: one module per check type, registered when this package loads (each
  reaches down into the layers and the letters to evaluate and say it).

The names below are the public surface; they load on first use, so importing one
room (the sandbox runner's, say) does not import them all.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .assignment import Assignment, load_assignment
    from .errors import (
        ArchiveError,
        GraderError,
        InputError,
        NotebookError,
        PromptBudgetError,
        RubricError,
        SandboxError,
        StoreError,
    )
    from .layers.base import GradeOptions
    from .notebooks.load import load_notebook
    from .pipeline import GradeInput, Grader
    from .rubrics.schema import Rubric, load_rubric, save_rubric
    from .store.database import Store
    from .types import GradeReport, Notebook

from . import checks as _checks  # noqa: F401  (registers the check types: grader.check_types)

_WHERE = {
    "Assignment": "assignment", "load_assignment": "assignment",
    "ArchiveError": "errors", "GraderError": "errors", "InputError": "errors",
    "NotebookError": "errors", "PromptBudgetError": "errors", "RubricError": "errors",
    "SandboxError": "errors", "StoreError": "errors",
    "GradeOptions": "layers.base",
    "load_notebook": "notebooks.load",
    "GradeInput": "pipeline", "Grader": "pipeline",
    "Rubric": "rubrics.schema", "load_rubric": "rubrics.schema", "save_rubric": "rubrics.schema",
    "Store": "store.database",
    "GradeReport": "types", "Notebook": "types",
}

__all__ = [
    "ArchiveError",
    "Assignment",
    "GradeInput",
    "GradeOptions",
    "GradeReport",
    "Grader",
    "GraderError",
    "InputError",
    "Notebook",
    "NotebookError",
    "PromptBudgetError",
    "Rubric",
    "RubricError",
    "SandboxError",
    "Store",
    "StoreError",
    "load_assignment",
    "load_notebook",
    "load_rubric",
    "save_rubric",
]


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'grader' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{where}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
