"""A slip charged where it happened: a later cell's error is not charged again to an
earlier part whose variable it was about to change.

An ``output`` check compares a variable as the notebook leaves it. A later part often
changes an earlier part's variable (Task 3 adds a ``revenue`` column to Task 2's
``orders``), so the solution's ``orders`` has that column. When the student's Task 3
cell stops with an error before adding it, their Task 2 work is the same as the key's,
yet ``orders`` lacks ``revenue``: without this rule Task 2 loses its points for Task 3's
typo, which is already charged where it happened (the ``runs`` check counts the error;
Task 3's own checks miss what the cell did not make).

``charged_where_it_failed``: a column that the solution's variable has and the
student's lacks is left out of the comparison, on both sides, when a cell of the
student's that stopped with an error in our run would have written it into the
variable (``v["col"] = ...``, ``v.loc[:, "col"] = ...``, ``v = v.assign(col=...)``;
R: ``v$col <- ...``, ``v[["col"]] <- ...``, ``v <- v %>% mutate(col = ...)``), and that
cell is another part's: it comes after the last cell that makes the variable, makes
(assigns whole) a name another criterion checks, and makes none this criterion checks.
Every other column, row and value is still compared; the result says which column was
left out and why (``SLIP_NOTE``). Work left undone is never relieved: only a cell that
ran and failed is.

``absent_because``: an output check whose variable does not exist after the run, when
a cell of the student's that makes it stopped with an error, names that cell and its
error as evidence, so the letter says the cause ("cell 13 stops with an error") rather
than "complete the code". When that error names a column an earlier failed cell would
have written (cell 13's ``KeyError: 'revenue'`` after cell 11 failed to add
``revenue``), the earlier cell is the first cause: the message adds ``FIRST_CAUSE`` and
the earlier cell is the second evidence.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from ..analysis.facts import live_code, strip_comments
from ..pyast import parse
from ..rubrics.check_fields import Check
from ..rubrics.schema import Criterion
from ..sandbox.execution import ExecutionResult
from ..sandbox.inspect_code import VariableSummary
from ..types import CheckResult, Evidence
from .base import SubmissionContext

__all__ = ["FIRST_CAUSE", "SLIP_NOTE", "absent_because", "charged_where_it_failed",
           "columns_written", "made_names", "without_columns"]

SLIP_NOTE = "; not charged here: "  # what follows names the columns, the cell and why
FIRST_CAUSE = "; first cause: "  # absent_because: the earlier failed cell (evidence 2)


@dataclass(frozen=True, slots=True)
class _Failed:
    cell_id: str
    index: int
    error: str
    source: str


def charged_where_it_failed(ctx: SubmissionContext, crit: Criterion, check: Check,
                            run: ExecutionResult | None, sol: ExecutionResult | None,
                            score: Callable[[ExecutionResult | None], CheckResult]
                            ) -> CheckResult:
    """``score(sol)``, or, when a later part's failed cell explains columns the student's
    variable lacks, ``score`` against the solution without those columns (see above)."""
    result = score(sol)
    if result.score >= 1 or result.status != "ok" or run is None or sol is None or run.error:
        return result
    var = check.variable
    got, want = run.variables.get(var), sol.variables.get(var)
    if got is None or want is None or not got.exists or not want.exists \
            or got.columns is None or want.columns is None:
        return result
    missing = [c for c in want.columns if c not in got.columns]
    if not missing:
        return result
    language = ctx.submission.language
    left_out: dict[str, _Failed] = {}
    for cell in _later_parts_failed(ctx, crit, var, run):
        for col in columns_written(cell.source, language, var):
            if col in missing:
                left_out.setdefault(col, cell)
    reduced = without_columns(want, set(left_out)) if left_out else None
    if reduced is None:
        return result
    again = score(replace(sol, variables={**sol.variables, var: reduced}))
    if again.score <= result.score:
        return result
    by_cell: dict[str, list[str]] = {}
    for col, cell in left_out.items():
        by_cell.setdefault(cell.cell_id, []).append(col)
    cells = {c.cell_id: c for c in left_out.values()}
    said = "; ".join(f"{', '.join(repr(c) for c in cols)} would have been added by cell "
                     f"{cid}, which stopped with an error ({cells[cid].error})"
                     for cid, cols in by_cell.items())
    return replace(again, message=f"{again.message}{SLIP_NOTE}{said}: that error is charged "
                   "where it happened, so the comparison leaves these columns out",
                   evidence=again.evidence + tuple(
                       Evidence(cid, None, cells[cid].error) for cid in by_cell))


def absent_because(ctx: SubmissionContext, check: Check, run: ExecutionResult | None,
                   result: CheckResult) -> CheckResult:
    """``result`` of an output check whose variable does not exist after the run, with the
    failed cells of the student's that make it as evidence (their errors)."""
    var = check.variable
    if run is None or run.error or result.evidence or result.facts.state != "undefined":
        return result
    language = ctx.submission.language
    every = _failed_cells(ctx, run)
    failed = [f for f in every if var in made_names(f.source, language)]
    if not failed:
        return result
    evidence = [Evidence(f.cell_id, None, f.error) for f in failed]
    first = failed[0]
    cause = next((e for e in every if e.index < first.index and any(
        re.search(rf"(?<![\w.]){re.escape(col)}(?![\w.])", first.error)
        for name in made_names(e.source, language) | _written_names(e.source, language)
        for col in columns_written(e.source, language, name))), None)
    if cause is None:
        return replace(result, evidence=tuple(evidence))
    return replace(result, message=f"{result.message}{FIRST_CAUSE}cell {cause.cell_id} "
                   f"stopped with an error before it wrote what cell {first.cell_id} needs",
                   facts=replace(result.facts, counts=(*result.facts.counts, ("first_cause", 1))),
                   evidence=(evidence[0], Evidence(cause.cell_id, None, cause.error),
                             *evidence[1:]))


def _failed_cells(ctx: SubmissionContext, run: ExecutionResult) -> list[_Failed]:
    """The student's own code cells that stopped with an error in our run."""
    own = {o.cell.id for o in ctx.match.student_code_cells}
    out = []
    for c in run.cells:
        cell = ctx.submission.cell(c.cell_id) if not c.ok and c.cell_id in own else None
        if cell is not None:
            out.append(_Failed(c.cell_id, c.index, c.error, cell.source))
    return out


def _names_of(crit: Criterion) -> set[str]:
    """The variables a criterion's checks look at (output variables, assigned names)."""
    return {n for ch in crit.evaluated for n in (ch.variable, *ch.names) if n}


def _later_parts_failed(ctx: SubmissionContext, crit: Criterion, var: str,
                        run: ExecutionResult) -> list[_Failed]:
    """Failed cells of other parts that come after the last cell making ``var``."""
    language = ctx.submission.language
    makers = [c.index for c in ctx.submission.cells
              if c.kind == "code" and var in made_names(c.source, language)]
    last_made = max(makers, default=-1)
    mine = _names_of(crit)
    others = {n for c in ctx.assignment.rubric.criteria if c.id != crit.id
              for n in _names_of(c)} - mine
    out = []
    for cell in _failed_cells(ctx, run):
        made = made_names(cell.source, language)
        if cell.index > last_made and made & others and not made & mine:
            out.append(cell)
    return out


# --- what a cell writes -------------------------------------------------------------------

def made_names(code: str, language: str) -> set[str]:
    """The names ``code`` assigns whole (``x = ...``, ``x <- ...``), never a part of one
    (``x["a"] = ...``); ``v = v.assign(...)`` adds columns to ``v`` and does not count."""
    if language.lower() == "r":
        live = strip_comments(code, "r")
        found = set(_R_MADE.findall(live)) | set(_R_MADE_RIGHT.findall(live))
        return {n for n in found if not re.search(
            rf"(?m)^\s*{re.escape(n)}\s*(?:<<-|<-|=)\s*{re.escape(n)}\s*(?:%>%|\|>)\s*"
            r"(?:dplyr::)?(?:mutate|transform)\s*\(", live)
            and not re.search(rf"(?m)^\s*{re.escape(n)}\s*(?:<<-|<-|=)\s*(?:dplyr::)?"
                              rf"(?:mutate|transform)\s*\(\s*{re.escape(n)}\b", live)}
    tree = _tree(code)
    if tree is None:
        return set()
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for name in _whole(t):
                    if not _assign_call(node.value, name):
                        out.add(name)
    return out


def _written_names(code: str, language: str) -> set[str]:
    """The names whose columns ``code`` may write (``v[...] =``, ``v$c <-``)."""
    if language.lower() == "r":
        return set(re.findall(rf"(?<![\w.])({_R_NAME})\s*(?:\$|\[)", strip_comments(code, "r")))
    tree = _tree(code)
    return {n.value.id if isinstance(n.value, ast.Name) else n.value.value.id
            for n in (ast.walk(tree) if tree is not None else ())
            if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store) and (
                isinstance(n.value, ast.Name) or (isinstance(n.value, ast.Attribute)
                                                  and isinstance(n.value.value, ast.Name)))}


def columns_written(code: str, language: str, var: str) -> set[str]:
    """The columns ``code`` writes into ``var`` (see the module's docstring)."""
    if language.lower() == "r":
        return _r_columns(strip_comments(code, "r"), var)
    tree = _tree(code)
    if tree is None:
        return set()
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                out |= _subscript_columns(t, var)
                if isinstance(t, ast.Name) and t.id == var and \
                        (call := _assign_call(node.value, var)) is not None:
                    out |= {k.arg for k in call.keywords if k.arg}
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            out |= _subscript_columns(node.target, var)
    return out


def _tree(code: str) -> ast.Module | None:
    """The live code's tree; IPython's ``%`` and ``!`` lines read as blank ones."""
    live = live_code(code, "python")
    plain = "\n".join("" if line.lstrip().startswith(("%", "!")) else line
                      for line in live.split("\n"))
    for attempt in dict.fromkeys((live, plain)):
        try:
            tree = parse(attempt)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        return tree if isinstance(tree, ast.Module) else None
    return None


def _whole(target: ast.expr) -> Iterable[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, ast.Tuple | ast.List):
        for elt in target.elts:
            yield from _whole(elt)
    elif isinstance(target, ast.Starred):
        yield from _whole(target.value)


def _assign_call(value: ast.expr | None, var: str) -> ast.Call | None:
    """``var.assign(...)`` (the whole right-hand side), else None."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
            and value.func.attr == "assign" and isinstance(value.func.value, ast.Name) \
            and value.func.value.id == var:
        return value
    return None


def _strings(node: ast.expr) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.List | ast.Tuple):
        return {e.value for e in node.elts
                if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return set()


def _subscript_columns(target: ast.expr, var: str) -> set[str]:
    """``var["c"]``, ``var[["a", "b"]]``, ``var.loc[:, "c"]``, ``var.loc[rows, ["a"]]``."""
    if not isinstance(target, ast.Subscript):
        return set()
    base = target.value
    if isinstance(base, ast.Name) and base.id == var:
        return _strings(target.slice)
    if isinstance(base, ast.Attribute) and base.attr in ("loc", "at") \
            and isinstance(base.value, ast.Name) and base.value.id == var \
            and isinstance(target.slice, ast.Tuple) and len(target.slice.elts) == 2:
        return _strings(target.slice.elts[1])
    return set()


_R_NAME = r"[A-Za-z.][\w.]*"
_R_MADE = re.compile(rf"(?m)^\s*({_R_NAME})\s*(?:<<-|<-|=)(?!=)")
_R_MADE_RIGHT = re.compile(rf"(?:->>|->)\s*({_R_NAME})\s*$", re.M)


def _r_columns(code: str, var: str) -> set[str]:
    v = re.escape(var)
    out = set(re.findall(rf"(?<![\w.]){v}\$`?([\w. ]+?)`?\s*(?:<<-|<-|=)(?!=)", code))
    out |= set(re.findall(rf"(?<![\w.]){v}\[\[\s*[\"']([^\"']+)[\"']\s*\]\]\s*(?:<<-|<-|=)(?!=)",
                          code))
    out |= set(re.findall(rf"(?<![\w.]){v}\[\s*,\s*[\"']([^\"']+)[\"']\s*\]\s*(?:<<-|<-|=)(?!=)",
                          code))
    starts = [m.end() for m in re.finditer(
        rf"(?m)^\s*{v}\s*(?:<<-|<-|=)\s*(?:{v}\s*(?:%>%|\|>)\s*(?:dplyr::)?(?:mutate|transform)"
        rf"\s*\(|(?:dplyr::)?(?:mutate|transform)\s*\(\s*{v}\s*,)", code)]
    for start in starts:
        out |= _top_level_names(code, start)
    return {c.strip() for c in out if c.strip()}


def _top_level_names(code: str, start: int) -> set[str]:
    """``name =`` arguments at the top level of the call whose arguments begin at
    ``start`` (nested calls' named arguments are not columns)."""
    arg = re.compile(rf"\s*({_R_NAME}|`[^`]+`)\s*=(?!=)")
    names: set[str] = set()
    depth, at_arg = 0, True
    for i in range(start, len(code)):
        if at_arg and depth == 0 and (m := arg.match(code, i)):
            names.add(m.group(1).strip("`"))
        ch = code[i]
        at_arg = False
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth < 0:
                break
        elif ch == "," and depth == 0:
            at_arg = True
    return names


# --- the solution's variable without some columns -------------------------------------------

def without_columns(s: VariableSummary, drop: set[str]) -> VariableSummary | None:
    """``s`` without the columns ``drop``: columns, dtypes, shape, rows and the numeric
    summaries; None when its values are not rows that can be cut."""
    if s.columns is None or not drop:
        return None
    keep = [i for i, c in enumerate(s.columns) if c not in drop]
    width = len(s.columns)

    def cut(rows: object) -> object:
        if rows is None:
            return None
        if not (isinstance(rows, list) and all(isinstance(r, list) and len(r) == width
                                               for r in rows)):
            raise ValueError("not rows")
        return [[r[i] for i in keep] for r in rows]

    try:
        values, head = cut(s.values), cut(s.head)
    except ValueError:
        return None
    shape = s.shape
    if shape is not None and len(shape) == 2:
        shape = (shape[0], len(keep))
    dtypes = tuple(s.dtypes[i] for i in keep) if s.dtypes and len(s.dtypes) == width \
        else s.dtypes
    summary = {k: v for k, v in s.summary.items() if k.rpartition(":")[0] not in drop}
    return replace(s, columns=tuple(s.columns[i] for i in keep), dtypes=dtypes, shape=shape,
                   values=values, head=head, summary=summary)
