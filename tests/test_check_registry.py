"""One check type, one module (issue 34): the registry of ``grader.checks`` is what every
part of the grader iterates, each type declares every facet, and nothing keeps a table of
its own beside it (the tables the issue found: scoring's layers, the editor's fields and
targets, the stale check, the letters' readers, the docs' table, the examples' types).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from grader import check_types as checks
from grader.check_types import CheckType, docs_table
from grader.rubrics.check_fields import CHECK_FIELDS, KINDS, Check
from grader.rubrics.check_text import TARGET_FIELD
from grader.rubrics.edit import APPLIES, target_help, type_help

ROOT = Path(__file__).resolve().parents[1]
TYPES = checks.types()
# Modules that kept a table of check types before the registry (issue 34's list).
FORMER_TABLES = ["grader/scoring.py", "grader/rubrics/edit.py", "grader/rubrics/check_text.py",
                 "grader/layers/outputs.py", "grader/layers/stale.py",
                 "grader/layers/structure.py", "grader/letters/check_reading.py",
                 "app_pages/rubrics.py", "tests/test_examples_files.py",
                 "grader/service/rescore.py"]


def test_every_module_of_the_package_is_a_registered_type() -> None:
    modules = {p.stem for p in (ROOT / "grader" / "checks").glob("*.py")
               if not p.stem.startswith("_")}
    assert modules == set(checks.names())
    assert len(TYPES) >= 13


@pytest.mark.parametrize("kind", TYPES, ids=[t.name for t in TYPES])
def test_a_registered_type_declares_every_facet(kind: CheckType) -> None:
    assert kind.kind in KINDS
    assert kind.name in KINDS[kind.kind]
    assert kind.layer in ("L1", "L2")
    assert kind.summary.endswith(".")
    assert kind.scores
    assert kind.example
    assert kind.produced_by
    for facet in (kind.target, kind.evaluate, kind.letter, kind.validate):
        assert callable(facet)
    assert set(kind.fields) <= {*CHECK_FIELDS, "accept"}, "a field no rubric file can hold"
    assert kind.target_field is None or kind.target_field in kind.fields
    assert isinstance(kind.target(Check(type=kind.name)), str)
    assert kind.no_code in ("evaluate", "zero", "not_run")
    assert kind.reads_outputs in ("", "cells", "errors")
    assert kind.layer == "L2" or kind.no_code == "evaluate", "layer 1 reads the code itself"


def test_the_editor_and_the_parser_take_their_tables_from_the_registry() -> None:
    assert set(APPLIES) == set(checks.names())
    assert all(APPLIES[t.name] == t.fields for t in TYPES)
    assert {t.name: t.target_field for t in TYPES if t.target_field} == TARGET_FIELD
    assert [n for names in KINDS.values() for n in names] == [
        t.name for kind in KINDS for t in TYPES if t.kind == kind]
    for kind in TYPES:
        assert f"{kind.name}: " in target_help()
        assert kind.summary in type_help()


def test_the_docs_table_of_check_types_is_the_registrys() -> None:
    """To update it: ``python -c "import grader; from grader.check_types import
    docs_table; print(docs_table())"`` into docs/rubric-format.md's "Check types"."""
    text = (ROOT / "docs" / "rubric-format.md").read_text(encoding="utf-8")
    assert docs_table() in text


def _type_tables(source: str) -> list[tuple[int, list[str]]]:
    """Literal tuples, lists, sets and dicts of three or more check type names."""
    found = []
    for node in ast.walk(ast.parse(source)):
        items = (node.keys if isinstance(node, ast.Dict) else node.elts
                 if isinstance(node, ast.Tuple | ast.List | ast.Set) else [])
        named = [i.value for i in items if isinstance(i, ast.Constant)
                 and i.value in checks.names()]
        if len(named) >= 3:
            found.append((node.lineno, named))
    return found


@pytest.mark.parametrize("path", FORMER_TABLES)
def test_no_module_keeps_a_table_of_check_types_beside_the_registry(path: str) -> None:
    assert _type_tables((ROOT / path).read_text(encoding="utf-8")) == []


def test_the_table_finder_finds_a_table() -> None:
    assert _type_tables('X = ("calls", "assigns", "runs")\n') == [
        (1, ["calls", "assigns", "runs"])]


def test_letters_read_no_message() -> None:
    """Every sentence a student reads is made from the result's facts: no module of the
    letters reads a check's ``message`` (the hidden-text redaction rewrites it, unread)."""
    for path in sorted((ROOT / "grader" / "letters").glob("*.py")):
        reads = [n for n, line in enumerate(path.read_text().splitlines(), 1)
                 if re.search(r"\bch\.message\b", line) and "redact" not in line]
        assert reads == [], f"{path.name} reads ch.message at lines {reads}"
