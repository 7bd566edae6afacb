"""Assignments imported from nbgrader and otter, written as our assignment folders.

``import_nbgrader_folder`` reads an nbgrader source notebook (the instructor's version
with solutions and hidden tests); ``import_otter_master`` an otter assign master
notebook; ``import_otter_folder`` otter's OK-format test files with the student
notebook (``template``) and the instructor's solution. Each
write ``template.ipynb``, ``solution.ipynb``, ``rubric.json`` and ``assignment.toml``
into ``out``, copy the data files found next to the source, declare the packages a
``requirements.txt`` (otter's ``requirements.R``, an ``install.R``) next to it lists
(``grader.packages.files``), and return the import report (what became of each item,
and what was not carried over).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import shutil
import tomllib
from pathlib import Path
from typing import Any

import nbformat
import yaml

from ..assignment import data_problems
from ..errors import InputError, RubricError
from ..packages.declared import read_packages
from ..packages.files import PACKAGE_FILES, declare
from ..rubrics.import_items import ImportReport, ImportRow
from ..rubrics.import_nbgrader import TEXT_STUB, ImportedAssignment, import_nbgrader
from ..rubrics.import_otter import otter_criteria
from ..rubrics.import_otter_assign import import_otter_assign
from ..rubrics.schema import Rubric, save_rubric

__all__ = ["import_nbgrader_folder", "import_otter_folder", "import_otter_master",
           "write_assignment"]

SKIPPED = {".ipynb_checkpoints", "__pycache__", "tests", "submissions", "autograder"}


def _read(path: Path) -> Any:
    try:
        return nbformat.read(path, as_version=4)
    except (OSError, ValueError, json.JSONDecodeError) as exc:
        raise InputError(str(path), f"not a readable notebook ({exc})") from None


def _data_beside(source: Path, out: Path) -> list[str]:
    """Copy the files and folders next to ``source`` (not notebooks, tests or hidden
    ones) into ``out``; their names, for assignment.toml's ``data``. A link that leads out
    of the source's folder (or nowhere), a fifo or a device is refused (RubricError naming
    it, nothing copied): the data of an assignment never reads the host's files."""
    items = [item for item in sorted(source.parent.iterdir())
             if not (item.name.startswith(".") or item.name in SKIPPED | PACKAGE_FILES
                     or item.suffix == ".ipynb" or item.resolve() == out.resolve())]
    if problems := [p for item in items for p in data_problems(source.parent, item)]:
        raise RubricError(str(source.parent), problems)
    names = []
    for item in items:
        target = out / item.name
        if item.is_dir():
            shutil.copytree(item, target, dirs_exist_ok=True)
        else:
            shutil.copy2(item, target)
        names.append(item.name)
    return names


def write_assignment(imported: ImportedAssignment, out: Path, data: list[str],
                     source: Path | None = None, named: Path | None = None) -> ImportReport:
    """Write the folder; the report, with a row for the packages found beside ``source``
    (``named``: a requirements file the source names, read as ``requirements.txt``)."""
    out.mkdir(parents=True, exist_ok=True)
    files = {p.name: p.read_bytes() for p in sorted(source.parent.iterdir())
             if p.name in PACKAGE_FILES and p.is_file()} if source is not None else {}
    if named is not None:
        files["requirements.txt"] = named.read_bytes()
    packages, problems = declare(out, files), []
    if packages:
        read_packages(out, tomllib.loads(packages)["packages"], "assignment.toml", problems)
        packages = "" if problems else packages
    nbformat.write(imported.template, out / "template.ipynb")
    nbformat.write(imported.solution, out / "solution.ipynb")
    save_rubric(imported.report.rubric, out / "rubric.json")
    lines = [f"title = {json.dumps(imported.report.rubric.title)}", 'rubric = "rubric.json"',
             'template = "template.ipynb"', 'solution = "solution.ipynb"']
    if data:
        lines.append("data = [" + ", ".join(json.dumps(d) for d in data) + "]")
    (out / "assignment.toml").write_text("\n".join(lines) + "\n" + packages, encoding="utf-8")
    if not files:
        return imported.report
    item, where = f"the packages it needs ({', '.join(files)})", str(source.parent)
    if problems:
        row = ImportRow(item, where, False, todo="fix the list and declare it ([packages] "
                                                 "in assignment.toml): " + "; ".join(problems))
    else:
        row = ImportRow(item, where, True, imported_as="[packages] in assignment.toml: "
                        + packages.split("\n", 1)[1].replace("\n", " ").strip(),
                        todo=f"install them before grading: python -m grader packages {out} "
                             "--install (the app offers a button; grade does it first)")
    return dataclasses.replace(imported.report, rows=(*imported.report.rows, row))


def import_nbgrader_folder(source: Path, out: Path) -> ImportReport:
    imported = import_nbgrader(_read(source), str(source))
    out.mkdir(parents=True, exist_ok=True)
    return write_assignment(imported, out, _data_beside(source, out), source)


def import_otter_master(source: Path, out: Path) -> ImportReport:
    """An otter assign master notebook (questions, solutions and tests in one); its
    config's ``requirements`` file (otter's default: ``requirements.txt`` beside it) is
    the assignment's packages."""
    nb = _read(source)
    imported = import_otter_assign(nb, str(source))
    out.mkdir(parents=True, exist_ok=True)
    return write_assignment(imported, out, _data_beside(source, out), source,
                            _otter_requirements(nb, source))


def _otter_requirements(nb: Any, source: Path) -> Path | None:
    """The requirements file an otter master's ASSIGNMENT CONFIG names (None: none named,
    or otter's default, found beside it anyway); InputError when it names a missing one."""
    for cell in nb.cells:
        text = "".join(cell.source) if isinstance(cell.source, list) else cell.source
        if cell.cell_type != "raw" or not text.lstrip().upper().startswith("# ASSIGNMENT CONFIG"):
            continue
        try:
            config = yaml.safe_load(text.split("\n", 1)[1] if "\n" in text else "") or {}
        except yaml.YAMLError:
            return None  # the importer reports the config itself
        named = config.get("requirements") if isinstance(config, dict) else None
        if not isinstance(named, str) or named == "requirements.txt":
            return None
        path = (source.parent / named).resolve()
        if not path.is_relative_to(source.parent.resolve()) or not path.is_file():
            raise InputError(str(source), f"its assignment config names the requirements file "
                                          f"{named!r}, which is not in its folder")
        return path
    return None


def import_otter_folder(template: Path, solution: Path, tests: Path, out: Path
                        ) -> ImportReport:
    """``tests``: a folder of OK-format files (``q1.py``, ...), in name order."""
    files = sorted(p for p in tests.glob("*.py") if not p.name.startswith("__"))
    if not files:
        raise InputError(str(tests), "no OK-format test files (q1.py, ...) in this folder")
    rows: list[ImportRow] = []
    texts = []
    for p in files:
        try:
            texts.append((str(p), p.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(str(p), f"cannot be read ({exc})") from None
    tpl, sol = _read(template), _read(solution)
    criteria, rows = otter_criteria(texts, set(), [c.source for c in tpl.cells
                                                   if c.cell_type == "code"])
    lang = str((tpl.metadata.get("kernelspec") or {}).get("language", "python")).lower()
    if lang != "python":
        raise RubricError(str(tests), ["otter's OK-format tests are Python doctests; this "
                                       f"notebook's language is {lang}"])
    total = sum(c.points for c in criteria)
    title = next((line.strip().lstrip("#").strip() for c in tpl.cells
                  if c.cell_type == "markdown" for line in c.source.splitlines()
                  if line.strip().startswith("#")), template.stem)
    rubric = Rubric(title, "python", total, tuple(criteria), (TEXT_STUB, "..."))
    rows.append(ImportRow("grader.check(...) and otter.Notebook() cells", str(template), False,
                          todo="nothing to do: kept as given; without otter installed they "
                               "fail here, and a given cell's error is never the student's "
                               "(each question's tests run right after its grader.check "
                               "cell, judged outside the student's kernel)"))
    imported = ImportedAssignment(ImportReport(rubric, tuple(rows), "otter's tests"),
                                  copy.deepcopy(tpl), copy.deepcopy(sol))
    out.mkdir(parents=True, exist_ok=True)
    return write_assignment(imported, out, _data_beside(template, out), template)
