"""``python -m grader import ...`` as an instructor runs it, then the imported
assignment's self-check: shared by the nbgrader and otter import tests."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from grader.assignment import load_assignment
from grader.service.selfcheck import check_assignment

REPO = Path(__file__).resolve().parents[1]


def import_and_check(kind: str, source: Path, out: Path, *extra: str) -> str:
    """Import ``source`` into ``out`` with the CLI, assert that it succeeded and that the
    assignment tells its solution (100%) from its template (<= 5%); the CLI's output."""
    done = subprocess.run([sys.executable, "-m", "grader", "import", kind, str(source),
                           *extra, "--out", str(out)], capture_output=True, text=True,
                          timeout=300, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr
    check = check_assignment(load_assignment(out))
    assert check.solution_percent == pytest.approx(100.0)
    assert check.template_percent is not None
    assert check.template_percent <= 5
    return done.stdout


def assert_imported_assignment_sound(folder: Path) -> None:
    """The imported assignment's self-check: its solution at 100% of the automatic points,
    its template at 0%, nothing to fix, and no criterion titled with markup or a rule."""
    check = check_assignment(load_assignment(folder))
    assert check.solution_percent == 100.0, check.lines()
    assert check.template_percent == 0.0, check.lines()
    assert check.sound, check.lines()
    titles = [c.title for c in load_assignment(folder).rubric.criteria]
    assert not [t for t in titles if re.search(r"^[-*_\s]{3,}$|[$\\]|::|^#", t)], titles
