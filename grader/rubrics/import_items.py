"""What became of each item of an old-system rubric file: the import report's rows.

``grader.rubrics.import_seed`` converts the file; this module describes the outcome item
by item, in the old rubric's words, for the instructor: what each section became
(criterion and checks), and for everything that was not carried over (regex
verifications, penalties and deductions, regex partial-credit rules, strict-scoring
switches, prose notes) what the instructor can do instead, concretely and on which
page. Every not-carried row says what to do; none points at documentation.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from .check_fields import alternatives
from .schema import Criterion, Rubric

__all__ = ["OVERRIDE", "RUBRICS_PAGE", "RUNS_TODO", "TEMPLATE_TODO", "ImportReport", "ImportRow",
           "criterion_id", "describe", "other_rows", "penalty_todo", "report_lines",
           "section_extra_row", "table_rows", "top_rows", "value_text", "words"]

RUBRICS_PAGE = "on the Rubrics page"
_ID = re.compile(r"[^a-z0-9_-]+")
OVERRIDE = "where a student's work deserves other credit, override the criterion in Review"
RUNS_TODO = ("Not needed: the grader runs every notebook itself, so a cell the student left "
         "unrun costs nothing and hides nothing. To take points when cells fail, add a "
         f"criterion with a runs check {RUBRICS_PAGE}.")
TEMPLATE_TODO = ("Nothing to do: code copied from the template earns nothing here, so an "
             "unfilled template scores 0 on the code checks.")


def criterion_id(raw: str, seen: set[str], fallback: str = "question") -> str:
    """A criterion id from an imported name (lower case, ``-`` for anything else),
    made unique among ``seen`` with ``-2``, ``-3``..., and added to it."""
    base = _ID.sub("-", raw.lower()).strip("-") or fallback
    cid, n = base, 2
    while cid in seen:
        cid, n = f"{base}-{n}", n + 1
    seen.add(cid)
    return cid


@dataclass(frozen=True, slots=True)
class ImportRow:
    """One item of the old rubric file and what became of it."""

    item: str  # what it was, in the old rubric's words
    source: str  # where it sits in the old file (JSON keys, dot-separated; ", " between)
    carried: bool  # carried over into the new rubric
    imported_as: str = ""  # the criteria and checks it became ("" when not carried)
    todo: str = ""  # what the instructor should do ("" when nothing is needed)


@dataclass(frozen=True, slots=True)
class ImportReport:
    rubric: Rubric
    rows: tuple[ImportRow, ...] = ()
    origin: str = "the old rubric"  # what was imported, as the summary names it

    @property
    def carried(self) -> list[ImportRow]:
        return [r for r in self.rows if r.carried]

    @property
    def not_carried(self) -> list[ImportRow]:
        return [r for r in self.rows if not r.carried]

    @property
    def dropped(self) -> list[str]:
        """The items not carried over, one line each, with what to do."""
        return [f"{r.item}: {r.todo}" for r in self.not_carried]

    def summary(self) -> str:
        n, total, left = len(self.rubric.criteria), self.rubric.total_points, \
            len(self.not_carried)
        return (f"Imported {n} criteria ({total:g} points) from {len(self.carried)} items of "
                f"{self.origin}; {left} item{'s' if left != 1 else ''} not carried over"
                + (", each with what to do." if left else "."))

    def retitled(self, title: str, why: str = "as you typed it") -> ImportReport:
        """The report with the rubric titled ``title`` (the title the instructor typed;
        ``why`` says where it comes from)."""
        old = self.rubric.title
        if not title.strip() or title == old:
            return self
        rows = tuple(dataclasses.replace(
            r, imported_as=f"title {title!r} ({why}; the old title {old!r} is not used), "
            f"total {self.rubric.total_points:g} points")
            if r.imported_as.startswith("title ") else r for r in self.rows)
        return ImportReport(dataclasses.replace(self.rubric, title=title), rows, self.origin)


IMPORTED, NOT_CARRIED = "imported", "not carried over"


def table_rows(report: ImportReport) -> list[dict[str, str]]:
    """The report as table rows for the app: what was imported first, then what was not,
    each in the old file's order."""
    return [{"status": IMPORTED if r.carried else NOT_CARRIED, "in the old rubric": r.item,
             "imported as": r.imported_as, "what to do": r.todo,
             "where in the old file": r.source}
            for r in [*report.carried, *report.not_carried]]


def report_lines(report: ImportReport) -> list[str]:
    """The report as plain text lines (the command line's output)."""
    lines = [report.summary()]
    lines += [f"  imported: {r.item} -> {r.imported_as}" for r in report.carried]
    lines += [f"  not carried over: {r.item}\n      what to do: {r.todo}"
              for r in report.not_carried]
    return lines


def words(key: str) -> str:
    """no_output_no_points -> "no output no points"."""
    return key.replace("_", " ").strip()


def value_text(v: Any) -> str:
    """An old rubric's value as a line of the report (yes/no, lists, objects)."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, list):
        return ", ".join(map(value_text, v))
    if isinstance(v, dict):
        return "; ".join(f"{words(k)}: {value_text(x)}" for k, x in v.items())
    return str(v)


def _first_lower(text: Any) -> str:
    s = str(text)
    return s[:1].lower() + s[1:]


def _listing(items: list[str], limit: int = 3) -> str:
    more = len(items) - limit
    return "; ".join(items[:limit]) + (f"; and {more} more" if more > 0 else "")


def _part(key: str) -> str:
    """part2_string_cleaning -> "2" ("" when the key names no part)."""
    m = re.match(r"part_?(\d+)", key)
    return m.group(1) if m else ""


def _variables(c: Criterion) -> list[str]:
    return [n for ch in c.checks if ch.type == "assigns" for n in ch.names]


def _checks(c: Criterion) -> str:
    return "; ".join(f"{ch.type} {ch.target}" for ch in c.checks)


def describe(c: Criterion) -> str:
    return f"criterion {c.id} ({c.points:g} points): {_checks(c)}"


# -- a section's fields that no check represents -------------------------------------------
def _output_hint(c: Criterion, compare: str, why: str) -> str:
    names = _variables(c)
    if not names:
        return f"Not applied. {why}, add an output check to {c.id} {RUBRICS_PAGE}."
    of = names[0] + (f" (or {', '.join(names[1:])})" if len(names) > 1 else "")
    return (f"Not applied. {why}, add to {c.id} an output check of {of} with "
            f"compare={compare} {RUBRICS_PAGE}: it compares with the solution's run.")


def section_extra_row(key: str, extra: str, value: Any, c: Criterion) -> ImportRow:
    """A field of an autograder section that no check of ours represents."""
    label = f"{c.title}: {words(extra)}"
    label += f" ({value_text(value)})" if isinstance(value, dict) else f" {value_text(value)}"
    name = extra.lower()
    if "column" in name:
        todo = _output_hint(c, "columns", "To check these columns")
    elif "expected" in name or "rows" in name:
        todo = _output_hint(c, "shape", "To check the number of rows")
    elif "validation" in name:
        todo = _output_hint(c, "values", "To check the values (missing ones included)")
    elif "flexible" in name or "accept" in name:
        todo = (f"Nothing to do: {c.id} checks variable names and function calls only, so "
                "any of these approaches passes it.")
    elif "output" in name:
        todo = (f"Not checked automatically: look at these outputs in Review; {OVERRIDE}. "
                f"A function that must be used can be added to {c.id}'s calls check "
                f"{RUBRICS_PAGE}.")
    else:
        todo = f"Not applied: add a check to {c.id} {RUBRICS_PAGE} if it should count; {OVERRIDE}."
    return ImportRow(label, f"autograder_checks.sections.{key}.{extra}", False, "", todo)


# -- the rest of the file --------------------------------------------------------------------
def penalty_todo(key: str, text: str) -> str:
    said = f"{key} {text}".lower()
    if "template" in said:
        return TEMPLATE_TODO
    if "syntax" in said or "error" in said:
        return (f"Not applied: add a criterion with a runs check {RUBRICS_PAGE}; it scores "
                "the share of the student's cells that ran without errors.")
    if any(w in said for w in ("unexecuted", "output", "executed", "run")):
        return RUNS_TODO
    if "pipe" in said or "%>%" in said:
        return ("Not checked: the checks read variable names and function calls, not "
                f"operators. Look at the style in Review; {OVERRIDE}.")
    if "data" in said or "rows" in said:
        return ("Not applied: an output check of the cleaned table with compare=rows "
                f"{RUBRICS_PAGE} compares its rows with the solution's.")
    return f"Not applied: {OVERRIDE}."


def _credit_todo(c: Criterion | None) -> str:
    if c is None:
        return f"Not applied: {OVERRIDE}."
    return (f"Not applied: {c.id} scores from its checks. Where a student's approach deserves "
            f"this credit, override {c.id} in Review.")


def _same(name: str) -> str:
    return name.replace("ize", "ise")  # summarize() is summarise()


def _verification(where: str, sec_key: str, sec: dict[str, Any],
                  by_part: dict[str, Criterion], credit: set[str]) -> list[ImportRow]:
    part = _part(sec_key)
    c = by_part.get(part)
    tasks = sec.get("subtasks") if isinstance(sec.get("subtasks"), dict) else {}
    patterns = [p for t in [sec, *tasks.values()] if isinstance(t, dict)
                for p in t.get("verification", []) if isinstance(p, str)]
    item = f"regex verification of {f'part {part}' if part else words(sec_key)}"
    if sec.get("description"):
        item += f": {sec['description']}"
    if tasks:
        split = " + ".join(f"{float(t.get('points', 0)):g}" for t in tasks.values()
                           if isinstance(t, dict))
        item += f" ({len(tasks)} tasks, {split} points)"
    if c is None:
        todo = f"Not imported, and no criterion covers it: add one {RUBRICS_PAGE} if it counts."
    else:
        todo = (f"Not imported (patterns anywhere in the notebook matched the template too). "
                f"{c.id} scores it: {_checks(c)}.")
        called = {_same(f) for ch in c.checks for e in ch.functions for f in alternatives(e)}
        missing = list(dict.fromkeys(
            m.group(1) for p in patterns if (m := re.fullmatch(r"([A-Za-z_.][\w.]*)\(", p))
            and _same(m.group(1)) not in called))
        if missing:
            todo += (f" The old patterns also looked for {', '.join(f + '()' for f in missing)}:"
                     f" add {'it' if len(missing) == 1 else 'them'} to its calls check "
                     f"{RUBRICS_PAGE} if {'it' if len(missing) == 1 else 'they'} must be used.")
        if _variables(c):
            todo += (f" To compare values with the solution's, add an output check of "
                     f"{_variables(c)[0]} to it.")
    rows = [ImportRow(item, f"{where}.{sec_key}", False, "", todo)]
    levels = bool(part) and part in credit
    for tkey, task in tasks.items():
        if isinstance(task, dict) and isinstance(task.get("grading"), dict):
            label = words(re.sub(r"_(\d+)_(\d+)_.*", r" \1.\2", tkey))
            rows.append(ImportRow(
                f"partial credit, {label} ({task.get('description', '')}): "
                f"{value_text(task['grading'])}",
                f"{where}.{sec_key}.subtasks.{tkey}.grading", False, "", _credit_todo(c)))
        rows += _accepted_rows(f"{where}.{sec_key}.subtasks.{tkey}", tkey, task, c, levels)
    return rows


def _accepted_rows(where: str, tkey: str, task: Any, c: Criterion | None,
                   levels: bool) -> list[ImportRow]:
    """A task's accepted alternatives: functions, approaches, column names."""
    if not isinstance(task, dict) or c is None:
        return []
    label = words(re.sub(r"_(\d+)_(\d+)_.*", r" \1.\2", tkey))
    rows = []
    if isinstance(task.get("accepts_functions"), list):
        said = f"{label}: accepted functions {value_text(task['accepts_functions'])}"
        grouped = any(len(set(alternatives(e)) & set(task["accepts_functions"])) > 1
                      for ch in c.checks for e in ch.functions)
        rows.append(ImportRow(said, f"{where}.accepts_functions", True,
                              f"one any-of entry of {c.id}'s calls check") if grouped else
                    ImportRow(said, f"{where}.accepts_functions", False, "",
                              f"Nothing to do: {c.id} asks none of them by name."))
    if isinstance(task.get("accepts_approaches"), list):
        rows.append(ImportRow(
            f"{label}: accepted approaches {value_text(task['accepts_approaches'])}",
            f"{where}.accepts_approaches", levels,
            f"the levels of {c.id} (its partial-credit rules) give each its credit"
            if levels else "", "" if levels else
            f"Nothing to do: {c.id} reads names and calls, so any approach passes it."))
    if isinstance(task.get("accepts"), list):
        rows.append(ImportRow(f"{label}: accepted column names {value_text(task['accepts'])}",
                              f"{where}.accepts", False, "", "Nothing to do: the imported "
                              "checks do not read column names."))
    return rows


def _elements(data: dict[str, Any], total: float, questions_carried: bool,
              by_part: dict[str, Criterion]) -> list[ImportRow]:
    rows: list[ImportRow] = []
    rules = data.get("partial_credit_rules")
    credit = {_part(k) for k in rules} if isinstance(rules, dict) else set()
    for key, el in (data.get("rubric_elements") or {}).items():
        if not isinstance(el, dict):
            continue
        where = f"rubric_elements.{key}"
        head = f"{words(key).capitalize()} ({float(el.get('max_points', 0)):g} points)"
        if el.get("description"):
            head += f": {el['description']}"
        guides = [g for g in el.get("criteria", []) if isinstance(g, str)]
        note = (f" Its {len(guides)} guidelines are not scored: check them when you review."
                if guides else "")
        if "questions" in el and questions_carried:
            rows.append(ImportRow(head, where, True, "the questions' points and descriptions,"
                                  " in the written criteria", note.strip()))
        else:
            rows.append(ImportRow(head, where, False, "", "Nothing to do: the points come "
                                  f"from the autograder sections, which add up to {total:g}."
                                  + note))
        req = el.get("execution_requirements")
        if isinstance(req, dict):
            rows.append(ImportRow(
                f"penalty: {_first_lower(req.get('penalty') or req.get('description', ''))}",
                f"{where}.execution_requirements", False, "", RUNS_TODO))
        for dkey, text in (el.get("deductions") or {}).items():
            rows.append(ImportRow(f"penalty: {_first_lower(text)}", f"{where}.deductions.{dkey}",
                                  False, "", penalty_todo(dkey, str(text))))
        for skey, sec in (el.get("required_sections") or {}).items():
            if isinstance(sec, dict):
                rows.extend(_verification(f"{where}.required_sections", skey, sec, by_part,
                                          credit))
    return rows


def _checks_rows(checks: dict[str, Any], criteria: list[Criterion]) -> list[ImportRow]:
    rows = []
    assigned = {n for c in criteria for n in _variables(c)}
    for key, value in checks.items():
        where = f"autograder_checks.{key}"
        if key == "sections":
            continue
        if key == "required_variables" and isinstance(value, list):
            missing = [str(v) for v in value if v not in assigned]
            item = f"required variables ({len(value)}): {value_text(value)}"
            rows.append(ImportRow(item, where, True, "the sections' assigns checks")
                        if not missing else ImportRow(
                item, where, False, "", f"Add {', '.join(missing)} to an assigns check "
                f"{RUBRICS_PAGE}: no section checks {'it' if len(missing) == 1 else 'them'}."))
        elif "column" in key:
            rows.append(ImportRow(
                f"{words(key)}: other column names accepted", where, False, "",
                "Nothing to do: the imported checks do not read column names. An output "
                "check compares columns only when its compare list names them."))
        else:
            rows.append(ImportRow(f"{words(key)}: {value_text(value)}", where, False, "",
                                  f"Not applied: {OVERRIDE}."))
    return rows


def top_rows(data: dict[str, Any]) -> list[ImportRow]:
    """Rows of the strict-scoring switches, the common issues and the data notes."""
    rows = []
    rules = data.get("strict_scoring_rules")
    if isinstance(rules, dict):
        on = [words(k) if v is True else f"{words(k)} {value_text(v)}"
              for k, v in rules.items() if v is not False]
        where = ("strict_scoring_enabled, strict_scoring_rules"
                 if "strict_scoring_enabled" in data else "strict_scoring_rules")
        rows.append(ImportRow(
            f"strict scoring: {'; '.join(on)}", where, False, "",
            "Not applied as rules; the same ends are met: template code earns nothing, the "
            "grader runs every notebook itself, and output checks compare values with the "
            f"solution's. Add output checks {RUBRICS_PAGE} where values matter."))
    issues = data.get("common_issues_and_solutions")
    if isinstance(issues, dict):
        named = [str(v.get("problem", words(k))) if isinstance(v, dict) else words(k)
                 for k, v in issues.items()]
        rows.append(ImportRow(
            f"{len(issues)} common issues and their solutions: {_listing(named)}",
            "common_issues_and_solutions", False, "",
            f"Nothing to import: notes for you when reviewing; {OVERRIDE}."))
    if "data_structure" in data:
        rows.append(ImportRow(
            "notes on the data (columns, expected rows)", "data_structure", False, "",
            "Nothing to do: the solution runs on the data files you upload, and its results "
            "are the reference."))
    return rows


def other_rows(data: dict[str, Any], total: float, criteria: list[Criterion],
               by_section: dict[str, Criterion], questions_carried: bool) -> list[ImportRow]:
    """The rows of the other autograder checks and of the rubric elements (penalties,
    regex verifications) of a file with ``autograder_checks.sections``."""
    by_part = {_part(k): c for k, c in by_section.items() if _part(k)}
    checks = data.get("autograder_checks") or {}
    return _checks_rows(checks, criteria) + _elements(data, total, questions_carried, by_part)
