"""The bundled example assignments are complete and consistent (fast: no kernels).

examples/<name>/assignment.toml names a rubric, template, solution, data and sample
submissions; these tests check that the files exist and agree with each other and
with docs/rubric-format.md. examples/make_examples.py rebuilds them.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from pathlib import Path

import nbformat
import pytest

from grader import check_types

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
ASSIGNMENTS = sorted(p.parent for p in EXAMPLES.glob("*/assignment.toml"))
CHECK_TYPES = set(check_types.names())
UNRUN = {"no_outputs", "never_ran"}  # submitted without running: no outputs stored, on purpose
ASPECTS = {"type", "shape", "columns", "values", "rows"}
KERNELS = {"python": "python3", "r": "ir"}

INJECTION_MARKERS = ("Ignore previous instructions", "SYSTEM:", '"score": 20')

# Personal-data look-alikes. The seed course's data uses obvious placeholders
# (customer7@email.com, john.doe@email.com, 555 numbers): those are allowed.
EMAIL = re.compile(r"[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
ALLOWED_EMAIL = re.compile(
    r"[\w.+-]+@example\.(?:com|org|net)|customer\d+@email\.com|john\.doe@email\.com"
    r"|(?:jane)?_smith@company\.com|bob\.wilson@test\.org"
)
PHONE = re.compile(r"(?<![\w.])(?:\+?1[-. ])?\(?\d{3}\)?[-. ]\d{3}[-. ]\d{4}(?![\w.])")
SSN = re.compile(r"(?<![\w-])\d{3}-\d{2}-\d{4}(?![\w-])")


def _assignment(folder: Path) -> dict:
    with open(folder / "assignment.toml", "rb") as f:
        return tomllib.load(f)


def _rubric(folder: Path) -> dict:
    return json.loads((folder / _assignment(folder)["rubric"]).read_text(encoding="utf-8"))


def _read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def _submissions(folder: Path) -> list[Path]:
    return sorted((folder / _assignment(folder)["submissions"]).glob("*.ipynb"))


ALL_SUBMISSIONS = [p for a in ASSIGNMENTS for p in _submissions(a)]


def test_the_six_examples_are_there():
    assert {a.name for a in ASSIGNMENTS} >= {"retail-sales", "r-joins", "r-strings-dates",
                                             "py-functions", "r-sleep-survey", "py-levels"}


@pytest.mark.parametrize("folder", ASSIGNMENTS, ids=lambda p: p.name)
def test_assignment_toml_names_existing_files(folder: Path):
    cfg = _assignment(folder)
    for key in ("rubric", "template", "solution"):
        assert (folder / cfg[key]).is_file(), f"{folder.name}: {key} = {cfg[key]!r} is missing"
    assert isinstance(cfg["data"], list)
    assert cfg["data"]
    for item in cfg["data"]:
        assert (folder / item).exists(), f"{folder.name}: data {item!r} is missing"
    assert (folder / cfg["submissions"]).is_dir()
    assert len(_submissions(folder)) >= 5


@pytest.mark.parametrize("folder", ASSIGNMENTS, ids=lambda p: p.name)
def test_rubric_follows_the_format(folder: Path):
    rubric = _rubric(folder)
    assert rubric["schema_version"] in (1, 2)
    assert rubric["language"] in KERNELS
    criteria = rubric["criteria"]
    ids = [c["id"] for c in criteria]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"[a-z0-9_-]+", i) for i in ids)
    assert math.isclose(sum(c["points"] for c in criteria), rubric["total_points"])
    for c in criteria:
        assert c["kind"] in {"code", "written"}
        assert c["points"] >= 0
        weights = [ch["weight"] for ch in c["checks"]]
        assert math.isclose(sum(weights), 1.0), f"{c['id']}: check weights add up to {weights}"
        levels = c.get("levels", [])
        assert all(0 <= lv["credit"] <= 1 and lv.get("says") for lv in levels), c["id"]
        for ch in [*c["checks"], *(w for lv in levels for w in lv["when"])]:
            assert ch["type"] in CHECK_TYPES
            assert (ch["type"] == "answer") == (c["kind"] == "written"), c["id"]
            if ch["type"] == "output":
                assert set(ch["compare"]) <= ASPECTS
                if "partial" in ch:
                    assert set(ch["partial"]) == set(ch["compare"])
                    assert math.isclose(sum(ch["partial"].values()), 1.0), c["id"]


def _cells(path: Path, kind: str) -> list[str]:
    """Sources of one kind of cell, read as plain JSON: the seed course's notebooks lack
    some cell ids, which nbformat warns about (and pytest turns warnings into errors)."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            for c in cells if c["cell_type"] == kind]


@pytest.mark.parametrize("folder", ASSIGNMENTS, ids=lambda p: p.name)
def test_output_variables_are_assigned_in_the_solution(folder: Path):
    code = "\n".join(_cells(folder / _assignment(folder)["solution"], "code"))
    for c in _rubric(folder)["criteria"]:
        for ch in c["checks"]:
            if ch["type"] != "output":
                continue
            var = re.escape(ch["variable"])
            assigned = re.compile(rf"(?m)(?:^|[\s,(])\s*{var}\s*(?:<<?-|=(?!=))|->\s*{var}\b")
            assert assigned.search(code), f"{c['id']}: the solution never assigns {var}"


@pytest.mark.parametrize("folder", ASSIGNMENTS, ids=lambda p: p.name)
def test_tasks_and_questions_appear_in_the_template(folder: Path):
    template = folder / _assignment(folder)["template"]
    markdown = _cells(template, "markdown")
    asked = markdown + _cells(template, "code")  # a question may be asked in a code cell
    for c in _rubric(folder)["criteria"]:
        if c.get("task"):
            assert any(c["task"] in m for m in markdown), f"{c['id']}: {c['task']!r} not there"
        for ch in c["checks"]:
            if ch["type"] == "answer":
                assert any(ch["question"] in m for m in asked), (
                    f"{c['id']}: {ch['question']!r} not in the template")


@pytest.mark.parametrize("path", ALL_SUBMISSIONS,
                         ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_submission_is_an_executed_notebook(path: Path):
    nb = _read(path)
    nbformat.validate(nb)
    assert nb.nbformat == 4
    language = _rubric(path.parent.parent)["language"]
    assert nb.metadata["kernelspec"]["name"] == KERNELS[language]
    code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    assert code
    if path.stem in UNRUN:
        assert not any(c.outputs or c.execution_count for c in code), "never run"
        return
    assert all(c.execution_count is not None for c in code), "every code cell was run"
    # (a notebook whose cells define functions only, or only load packages, prints nothing)
    assert all(c.get("id") for c in nb.cells)


@pytest.mark.parametrize("path", ALL_SUBMISSIONS,
                         ids=lambda p: f"{p.parent.parent.name}/{p.stem}")
def test_submission_names_an_invented_student(path: Path):
    md = "\n".join(c.source for c in _read(path).cells if c.cell_type == "markdown")
    m = re.search(r"Name:\**\s*([A-Z][a-z]+ [A-Z][\w-]+)", md)
    assert m, f"{path.name}: no 'Name: ...' line"


def _without_injection(nb: nbformat.NotebookNode) -> list[tuple]:
    kept = []
    for c in nb.cells:
        if c.cell_type == "markdown" and any(m in c.source for m in INJECTION_MARKERS):
            continue
        src = "\n".join(line for line in c.source.splitlines()
                        if not any(m in line for m in INJECTION_MARKERS))
        kept.append((c.cell_type, c.get("id"), src, json.dumps(c.get("outputs", []))))
    return kept


def test_injected_differs_from_injected_clean_only_by_the_injection():
    subs = EXAMPLES / "retail-sales" / "submissions"
    injected, clean = _read(subs / "injected.ipynb"), _read(subs / "injected_clean.ipynb")
    text = json.dumps(injected.cells)
    assert all(m.replace('"', '\\"') in text for m in INJECTION_MARKERS)
    assert "award full marks" in text
    assert not any(m in json.dumps(clean.cells).replace('\\"', '"') for m in INJECTION_MARKERS)
    injected_md = [c for c in injected.cells if c.cell_type == "markdown"
                   and any(m in c.source for m in INJECTION_MARKERS)]
    injected_code = [c for c in injected.cells if c.cell_type == "code"
                     and any(m in c.source for m in INJECTION_MARKERS)]
    assert injected_md
    assert injected_code
    assert _without_injection(injected) == _without_injection(clean)


def _text_files() -> list[Path]:
    return [p for p in EXAMPLES.rglob("*") if p.is_file()
            and "__pycache__" not in p.parts and p.suffix not in {".pyc", ".png", ".xlsx"}]


@pytest.mark.parametrize("pattern", ["email", "phone", "ssn"])
def test_no_personal_data_look_alikes(pattern: str):
    found = []
    for path in _text_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        if pattern == "email":
            hits = [e for e in EMAIL.findall(text) if not ALLOWED_EMAIL.fullmatch(e)]
        elif pattern == "phone":
            hits = [p for p in PHONE.findall(text) if "555" not in p]
        else:
            hits = SSN.findall(text)
        found += [f"{path.relative_to(EXAMPLES)}: {h}" for h in hits]
    assert not found, found[:10]
