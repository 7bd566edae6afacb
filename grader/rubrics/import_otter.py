"""Import otter-grader's tests (OK-format files, ``tests/q1.py``) as ``test`` checks.

An OK-format file assigns one dict to ``test``: its ``name``, ``points`` and
``suites`` of ``cases``, each case a doctest (``>>> expression`` lines followed by the
output they must print) with its own ``hidden`` flag. The file is read as data
(``ast.literal_eval`` of that dict), never run. Each question becomes a code criterion
of its points with a ``test`` check per case, weighted by the case's points as otter
resolves them (a case is ``hidden`` unless it says ``hidden: False``, as in otter; an
``all_or_nothing`` file is one check). A case runs as otter runs it: with Python's
``doctest`` in the student's namespace, its output compared exactly as doctest does
(its own ``# doctest:`` directives apply), so a wrong function fails on the values it
returns, not only on its type; and where otter runs it: each check's ``after`` is the
notebook's ``grader.check("q1")``, so it runs right after that cell, before the cells
below it (a notebook without one: after the notebook, and the report says so).

Not carried over, each listed in the report with what to do: suites'
``setup``/``teardown`` code (otter refuses them too), and
files that are not OK-format (R's testthat files from otter, which ``test`` checks can
hold: paste them in on the Rubrics page).
"""

from __future__ import annotations

import ast
import doctest
import re
import textwrap
from collections.abc import Iterable
from typing import Any

from ..errors import RubricError
from ..pyast import parse
from .check_fields import Check
from .import_items import RUBRICS_PAGE, ImportRow, criterion_id
from .schema import Criterion

__all__ = ["check_call", "doctest_code", "otter_criteria", "output_test_code", "read_ok_test",
           "resolve_points"]

_RUNNER = '''import doctest as _doctest
_cases = {cases!r}
_failed = []
for _i, _text in enumerate(_cases):
    _test = _doctest.DocTestParser().get_doctest(_text, dict(globals()), "case", None, 0)
    _runner = _doctest.DocTestRunner(verbose=False)
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
assert _doctest.OutputChecker().check_output(_want, _out.getvalue(), 0), (
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


def resolve_points(total: Any, given: list[float | None]) -> list[float]:
    """Each case's points as otter resolves them: a list gives them one by one; a total
    is shared by the cases without points of their own, after those with; no total
    gives the cases without points 0 when some have points, else 1 shared among them."""
    if isinstance(total, dict):  # otter assign's {each: p}
        each = total.get("each", 1)
        if not isinstance(each, int | float) or isinstance(each, bool):
            raise ValueError(f"points' each must be a number, not {each!r}")
        total = each * len(given)
    if isinstance(total, list):
        if len(total) != len(given):
            raise ValueError(f"{len(total)} points for {len(given)} cases")
        given, total = list(total), None
    for p in [*given, total]:
        if p is not None and (not isinstance(p, int | float) or isinstance(p, bool) or p < 0):
            raise ValueError(f"points must be non-negative numbers, not {p!r}")
    fixed = sum(p for p in given if p is not None)
    free = sum(1 for p in given if p is None)
    if total is not None:
        if fixed > total + 1e-9:
            raise ValueError(f"the cases' points ({fixed:g}) exceed the question's ({total:g})")
        share = (total - fixed) / free if free else 0.0
    else:
        # otter: only zeros given -> the question is worth 1, shared by the others
        share = 1 / free if free and not fixed else 0.0
    return [float(p) if p is not None else share for p in given]


def check_call(qname: str, cells: Iterable[str] | None = None) -> str:
    """Where otter checks question ``qname``: its ``grader.check("qname")`` call as the
    notebook's ``cells`` (code sources) write it; "" when none does (None: otter's own
    spelling, the notebook unknown)."""
    if cells is None:
        return f'grader.check("{qname}")'
    call = re.compile(r"""grader\.check\(\s*(["'])""" + re.escape(qname) + r"\1\s*\)")
    return next((m.group(0) for c in cells if (m := call.search(c))), "")


def otter_criteria(files: Iterable[tuple[str, str]], seen: set[str],
                   cells: Iterable[str] | None = None
                   ) -> tuple[list[Criterion], list[ImportRow]]:
    """A criterion per OK-format file (``(name, text)`` pairs, in question order): a
    ``test`` check per case, weighted by the case's points as otter resolves them
    (otter scores each case, unless the file says ``all_or_nothing``), each run where
    otter checks it: right after the student's ``grader.check("q1")`` (``check_call``
    of the notebook's code ``cells``)."""
    criteria, rows = [], []
    cells = None if cells is None else list(cells)
    for name, text in files:
        test = read_ok_test(text, name)
        qname = str(test.get("name") or name.rsplit("/", 1)[-1].removesuffix(".py"))
        after = check_call(qname, cells)
        cases: list[dict[str, Any]] = []
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
            cases += [c for c in suite.get("cases") or [] if isinstance(c, dict)
                      and str(c.get("code", "")).strip()]
        if not cases:
            raise RubricError(name, ["no cases: nothing to test"])
        texts = [textwrap.dedent(str(c["code"])) for c in cases]
        whole = bool(test.get("all_or_nothing"))
        try:
            points = resolve_points(test.get("points"), [c.get("points") for c in cases])
            codes = [doctest_code(texts)] if whole else [doctest_code([t]) for t in texts]
        except ValueError as exc:
            raise RubricError(name, [str(exc)]) from None
        # otter: a case is hidden unless it says otherwise
        hides = [bool(c.get("hidden", True)) for c in cases]
        total = sum(points)
        if whole:
            checks: tuple[Check, ...] = (Check("test", 1.0, name=qname, hidden=any(hides),
                                               code=codes[0], after=after),)
        else:
            checks = tuple(Check(
                "test", p / total if total else 1 / len(cases),
                name=str(c.get("name") or f"{qname} - {j + 1}") + (" (hidden)" if hide else ""),
                code=code, hidden=hide, after=after,
                message="" if hide else str(c.get("failure_message") or ""))
                for j, (c, p, code, hide) in enumerate(zip(cases, points, codes, hides,
                                                           strict=True)))
        cid = criterion_id(qname, seen)
        criteria.append(Criterion(cid, qname, "code", float(total), checks, task=qname,
                                  description=f"otter's tests of {qname}."))
        shown = sum(1 for h in hides if not h)
        n = len(cases)
        rows.append(ImportRow(f"tests of {qname} ({total:g} point{'s' * (total != 1)}, {n} "
                              f"case{'s' * (n != 1)})", name,
                              True, f"criterion {cid}: {shown} visible and "
                              f"{len(cases) - shown} hidden test checks"
                              + (" (all or nothing: one check)" if whole else ""),
                              "" if after else f"the notebook has no grader.check({qname!r}): "
                              "its tests run after the whole notebook"))
    return criteria, rows
