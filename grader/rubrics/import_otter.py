"""Import otter-grader's tests (OK-format files, ``tests/q1.py``) as ``test`` checks.

An OK-format file assigns one dict to ``test``: its ``name``, ``points`` and
``suites`` of ``cases``, each case a doctest (``>>> expression`` lines followed by the
output they must print) with its own ``hidden`` flag. The file is read as data
(``ast.literal_eval`` of that dict), never run. Each question becomes a code criterion
of its points with up to two tests: its visible cases and its hidden ones (``hidden``),
weighted by how many cases each holds. A case runs as otter runs it: with Python's
``doctest`` in the student's namespace (ELLIPSIS and whitespace-normalised
comparisons), so a wrong function fails on the values it returns, not only on its type.

Not carried over, each listed in the report with what to do: per-case points (each
part is weighted by its number of cases), suites' ``setup``/``teardown`` code, and
files that are not OK-format (R's testthat files from otter, which ``test`` checks can
hold: paste them in on the Rubrics page).
"""

from __future__ import annotations

import ast
import doctest
import re
from collections.abc import Iterable
from typing import Any

from ..errors import RubricError
from ..pyast import parse
from .checks import Check
from .import_items import RUBRICS_PAGE, ImportRow
from .schema import Criterion

__all__ = ["doctest_code", "otter_criteria", "output_test_code", "read_ok_test"]

_ID = re.compile(r"[^a-z0-9_-]+")
_RUNNER = '''import doctest as _doctest
_cases = {cases!r}
_failed = []
for _i, _text in enumerate(_cases):
    _test = _doctest.DocTestParser().get_doctest(_text, dict(globals()), "case", None, 0)
    _runner = _doctest.DocTestRunner(verbose=False, optionflags=_doctest.ELLIPSIS
                                     | _doctest.NORMALIZE_WHITESPACE)
    _report = []
    _runner.run(_test, out=_report.append, clear_globs=False)
    if _runner.failures:
        _failed.append("".join(_report).strip().splitlines())
assert not _failed, "\\n".join(
    line for lines in _failed[:1] for line in lines
    if line.strip() and not line.startswith(("*****", "File ")))[:600]
'''


_OUTPUT = '''import ast as _ast, contextlib as _contextlib, doctest as _doctest, io as _io
_source, _want = {code!r}, {want!r}
_tree = _ast.parse(_source)
_last = _tree.body.pop() if _tree.body and isinstance(_tree.body[-1], _ast.Expr) else None
_out = _io.StringIO()
with _contextlib.redirect_stdout(_out):
    exec(compile(_tree, "<test>", "exec"), globals())
    if _last is not None:
        _value = eval(compile(_ast.Expression(_last.value), "<test>", "eval"), globals())
        if _value is not None:
            print(repr(_value))
assert _doctest.OutputChecker().check_output(
    _want, _out.getvalue(), _doctest.ELLIPSIS | _doctest.NORMALIZE_WHITESPACE), (
    f"expected {{_want.strip()[:200]!r}}, got {{_out.getvalue().strip()[:200]!r}}")
'''


def output_test_code(code: str, want: str) -> str:
    """Test code that runs ``code`` as a notebook cell would (the last expression's
    value shown) and requires it to print ``want``, compared as doctest compares."""
    return _OUTPUT.format(code=code, want=want)


def doctest_code(cases: Iterable[str]) -> str:
    """Test code that runs doctest ``cases`` as otter does, failing with doctest's own
    report of the first case that fails (what was expected, what came)."""
    cases = [c for c in cases if c.strip()]
    for text in cases:  # a case that doctest cannot read is the instructor's to fix now
        doctest.DocTestParser().get_examples(text)
    return _RUNNER.format(cases=cases)


def read_ok_test(text: str, source: str) -> dict[str, Any]:
    """The ``test = {...}`` dict of an OK-format file, read as a literal."""
    try:
        tree = parse(text)
    except SyntaxError as exc:
        raise RubricError(source, [f"not Python: {exc.msg} (line {exc.lineno})"]) from None
    for node in getattr(tree, "body", []):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "test"):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                raise RubricError(source, ["`test = {...}` must be a plain dict (otter's "
                                           "OK format): it holds code"]) from None
            if isinstance(value, dict):
                return value
    raise RubricError(source, ["no `test = {...}`: not an otter OK-format test file"])


def otter_criteria(files: Iterable[tuple[str, str]], seen: set[str]
                   ) -> tuple[list[Criterion], list[ImportRow]]:
    """A criterion per OK-format file (``(name, text)`` pairs, in question order)."""
    criteria, rows = [], []
    for name, text in files:
        test = read_ok_test(text, name)
        qname = str(test.get("name") or name.rsplit("/", 1)[-1].removesuffix(".py"))
        points = test.get("points", 1)
        if isinstance(points, list):
            rows.append(ImportRow(f"per-case points of {qname}", name, False, todo=(
                "each part (visible, hidden) is weighted by its number of cases; adjust the "
                f"weights {RUBRICS_PAGE}")))
            points = sum(p for p in points if isinstance(p, int | float))
        if not isinstance(points, int | float) or isinstance(points, bool) or points < 0:
            raise RubricError(name, [f"points must be a non-negative number, not {points!r}"])
        visible, hidden = [], []
        for k, suite in enumerate(test.get("suites") or []):
            if not isinstance(suite, dict):
                raise RubricError(name, [f"suite {k + 1} is not a dict"])
            if suite.get("type", "doctest") != "doctest":
                raise RubricError(name, [f"suite {k + 1} has type {suite.get('type')!r}; "
                                         "only doctest suites are otter's Python tests"])
            for field in ("setup", "teardown"):
                if str(suite.get(field) or "").strip():
                    rows.append(ImportRow(f"{field} code of {qname}, suite {k + 1}", name,
                                          False, todo=f"put it into the test's code "
                                          f"{RUBRICS_PAGE}"))
            for case in suite.get("cases") or []:
                code = str(case.get("code", "")) if isinstance(case, dict) else ""
                (hidden if case.get("hidden") or test.get("hidden") else visible).append(code)
        parts = [(label, cases, hide) for label, cases, hide in
                 (("tests", visible, False), ("hidden tests", hidden, True)) if cases]
        if not parts:
            raise RubricError(name, ["no cases: nothing to test"])
        n = sum(len(cases) for _, cases, _ in parts)
        try:
            checks = tuple(Check("test", len(cases) / n, name=label,
                                 code=doctest_code(cases), hidden=hide,
                                 message="" if hide else f"The tests of {qname} did not pass.")
                           for label, cases, hide in parts)
        except ValueError as exc:
            raise RubricError(name, [f"a case doctest cannot read: {exc}"]) from None
        cid = _cid(qname, seen)
        criteria.append(Criterion(cid, qname, "code", float(points), checks, task=qname,
                                  description=f"otter's tests of {qname}."))
        rows.append(ImportRow(f"tests of {qname} ({float(points):g} points, {n} cases)", name,
                              True, f"criterion {cid}: " + ", ".join(p[0] for p in parts)))
    return criteria, rows


def _cid(raw: str, seen: set[str]) -> str:
    base = _ID.sub("-", raw.lower()).strip("-") or "question"
    cid, k = base, 2
    while cid in seen:
        cid, k = f"{base}-{k}", k + 1
    seen.add(cid)
    return cid
