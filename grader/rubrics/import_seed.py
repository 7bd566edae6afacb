"""Import the old system's rubric files into our schema.

Instructors have dozens of rubrics in the old grader's formats (examples:
../shared/course-r/old-rubrics). ``import_seed_rubric`` is the one entry point: it names
the file's shape (``import_formats.detect``) and reads it; a file that is not a rubric at
all (not a JSON object, or no category with points) is a RubricError naming the file.
Files with ``autograder_checks.sections`` are read here:

- each section becomes a code criterion with its points, an ``assigns`` check of its
  ``variables`` and a ``calls`` check of its ``functions`` (equal weights; one check
  when only one list is present; a ``runs`` check when neither is); functions a task of
  the same part accepts in each other's place (``accepts_functions``) are one any-of
  entry, and each lubridate parser accepts its variants with a time (mdy: mdy_hm);
- a section with ``check_type = "markdown"`` (the reflection questions) becomes
  one written criterion per question listed under
  ``rubric_elements.*.questions`` with their own points and descriptions, or,
  when none are listed, one written criterion for the whole section;
- ``min_words_per_question`` becomes each answer's ``min_words``;
- ``assignment_info``'s title and total points.

The other shapes are read by ``import_formats``. In every shape ``partial_credit_rules``
become the named section's ``levels`` (``import_credit``) and ``grading_guidelines`` one
row each. What does not carry over: regex "verification" strings of files that have
sections (the old system's pattern matching over the whole notebook, which scored an
empty template at 67%), penalties and deductions, strict-scoring switches, rating scales,
prose notes. The ``ImportReport`` has one row per item of the old file
(``import_items``, ``import_notes``): what it became, or what the instructor can do
instead; ``ImportReport.dropped`` is the not-carried rows, one line each. Fitting the
import to the assignment's own solution is ``grader.service.import_fit``'s.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import RubricError
from .check_fields import Check, alternatives
from .import_credit import apply_credit, guideline_rows
from .import_formats import detect, import_elements, number
from .import_items import (
    RUBRICS_PAGE,
    ImportReport,
    ImportRow,
    describe,
    other_rows,
    report_lines,
    section_extra_row,
)
from .import_notes import file_rows
from .import_prose import accepted_group
from .schema import SCHEMA_VERSION, Criterion, Rubric, rubric_from_dict, rubric_to_dict

__all__ = ["ImportReport", "ImportRow", "import_seed_file", "import_seed_rubric",
           "report_lines"]


def _slug(text: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return s or "criterion"


def _question_label(key: str) -> str:
    """question_8_1 -> "8.1" (the text that heads the question in the notebook)."""
    nums = re.findall(r"\d+", key)
    return ".".join(nums) if nums else key.replace("_", " ")


def _questions(data: dict[str, Any]) -> list[tuple[str, float, str]]:
    out = []
    for element in data.get("rubric_elements", {}).values():
        if isinstance(element, dict) and isinstance(element.get("questions"), dict):
            for key, q in element["questions"].items():
                out.append((key, float(q.get("points", 0)), str(q.get("description", ""))))
    return out


@dataclass(slots=True)
class _Sections:
    criteria: list[Criterion]
    rows: list[ImportRow]
    by_key: dict[str, Criterion]  # section key -> its criterion (code sections)
    questions: bool = False  # the questions became written criteria of their own


def _sections(data: dict[str, Any], sections: dict[str, Any]) -> _Sections:
    out = _Sections([], [], {})
    for key, sec in sections.items():
        title = str(sec.get("name", key))
        points = float(sec.get("points", 0))
        if sec.get("check_type") == "markdown":
            made, row = _written(data, key, title, points, sec)
            out.criteria.extend(made)
            out.rows.append(row)
            out.questions = out.questions or made[0].id != _slug(key)
            continue
        checks = []
        variables = [v for v in sec.get("variables", []) if isinstance(v, str)]
        functions = _accepted(data, key, [f for f in sec.get("functions", [])
                                          if isinstance(f, str)])
        parts = [p for p in (("assigns", variables), ("calls", functions)) if p[1]]
        for ctype, names in parts:
            field_name = "names" if ctype == "assigns" else "functions"
            checks.append(Check(type=ctype, weight=1.0 / len(parts),
                                **{field_name: tuple(dict.fromkeys(names))}))
        todo = ""
        if not checks:
            checks.append(Check(type="runs"))
            todo = ("The section lists no variables or functions, so it became a runs check: "
                    f"add assigns or calls checks {RUBRICS_PAGE} if it should check more.")
        c = Criterion(id=_slug(key), title=title, kind="code", points=points,
                      checks=tuple(checks))
        out.criteria.append(c)
        out.by_key[key] = c
        out.rows.append(ImportRow(f"{title} ({points:g} points)",
                                  f"autograder_checks.sections.{key}", True, describe(c), todo))
        for extra in sorted(set(sec) - {"name", "points", "variables", "functions"}):
            out.rows.append(section_extra_row(key, extra, sec[extra], c))
    return out


def _written(data: dict[str, Any], key: str, title: str, points: float,
             sec: dict[str, Any]) -> tuple[list[Criterion], ImportRow]:
    min_words = int(sec.get("min_words_per_question", 1) or 1)
    questions = _questions(data)
    item = f"{title} ({points:g} points, at least {min_words} words an answer)"
    where = f"autograder_checks.sections.{key}"
    if questions and abs(sum(p for _, p, _ in questions) - points) < 1e-6:
        made = [
            Criterion(id=_slug(qkey), title=f"{title}: {_question_label(qkey)}",
                      kind="written", points=qpoints, description=desc,
                      checks=(Check(type="answer", question=_question_label(qkey),
                                    min_words=min_words),))
            for qkey, qpoints, desc in questions
        ]
        ids = f"{made[0].id} to {made[-1].id}" if len(made) > 1 else made[0].id
        return made, ImportRow(item, where, True, (
            f"{len(made)} written criteria {ids} "
            f"({' + '.join(f'{c.points:g}' for c in made)} points), each an answer check of "
            f"at least {min_words} words"))
    c = Criterion(id=_slug(key), title=title, kind="written", points=points,
                  checks=(Check(type="answer", question=title, min_words=min_words),))
    todo = ""
    if questions:
        todo = (f"The questions' points do not add up to the section's {points:g}, so the "
                "section is one criterion: split it into one criterion per question "
                f"{RUBRICS_PAGE} to score them apart.")
    return [c], ImportRow(item, where, True, describe(c), todo)


def _accepted(data: dict[str, Any], key: str, functions: list[str]) -> list[str]:
    """A section's functions with the alternatives the old file accepts as one any-of
    entry (a task's ``accepts_functions``: ymd, mdy, dmy or parse_date_time), each
    lubridate parser with its variants for a time (mdy -> mdy_hm)."""
    part = re.match(r"part_?(\d+)", key)
    accepts: list[list[str]] = []
    for el in (data.get("rubric_elements") or {}).values():
        for skey, sec in ((el.get("required_sections") or {}) if isinstance(el, dict)
                          else {}).items():
            if not (part and isinstance(sec, dict) and re.match(
                    rf"part_?{part.group(1)}(?!\d)", skey)):
                continue
            for task in [sec, *(sec.get("subtasks") or {}).values()]:
                if isinstance(task, dict) and isinstance(task.get("accepts_functions"), list):
                    accepts.append([f for f in task["accepts_functions"] if isinstance(f, str)])
    out: list[str] = []
    for f in functions:
        group = next((g for g in accepts if f in g), None)
        entry = accepted_group(group) if group else accepted_group(alternatives(f))
        if entry not in out:
            out.append(entry)
    return out


def _title_row(data: dict[str, Any], title: str, total: float) -> ImportRow:
    keys = [k for k in ("assignment_info", "assignment_name", "title", "total_points")
            if k in data]
    return ImportRow(f"title {title!r} and total ({total:g} points)",
                     ", ".join(keys) or "the file's name", True,
                     f"title {title!r}, total {total:g} points")


def _from_sections(data: dict[str, Any], sections: dict[str, Any]
                   ) -> tuple[str, float, list[dict[str, Any]], list[ImportRow], dict[str, str]]:
    info = data.get("assignment_info") if isinstance(data.get("assignment_info"), dict) else {}
    made = _sections(data, sections)
    total = number(info.get("total_points")) or sum(c.points for c in made.criteria)
    title = str(info.get("title") or info.get("name") or "Imported rubric")
    rubric = Rubric(title=title, language="r", total_points=total,
                    criteria=tuple(made.criteria))
    rows = [*made.rows, *other_rows(data, total, made.criteria, made.by_key, made.questions)]
    crits = rubric_to_dict(rubric)["criteria"]
    return title, total, crits, rows, {k: c.id for k, c in made.by_key.items()}


def import_seed_rubric(
    data: dict[str, Any], language: str = "r", source: str = "<seed rubric>"
) -> ImportReport:
    """Import an old-system rubric file of any of its shapes (``import_formats.detect``);
    a RubricError naming ``source`` when it is not a rubric at all."""
    if not isinstance(data, dict):
        raise RubricError(source, ["not an old-system rubric: expected a JSON object, got "
                                   f"{type(data).__name__}"])
    shape = detect(data)
    if not shape:
        raise RubricError(source, [
            "not an old-system rubric: no category with points (expected "
            "autograder_checks.sections, rubric_elements, components, rubric_categories, or "
            "categories with points)"])
    handled: set[str] = set()
    if shape == "sections":
        title, total, crits, rows, by_key = _from_sections(data, data["autograder_checks"][
            "sections"])
        handled = {"autograder_checks", "rubric_elements"}
    else:
        draft = import_elements(data, shape, source)
        title, total, crits, rows, by_key = (draft.title, draft.total, draft.criteria,
                                             draft.rows, draft.by_key)
        if shape == "flat":
            handled = set(by_key)
    rows = [_title_row(data, title, total), *rows, *apply_credit(data, crits, by_key),
            *guideline_rows(data, crits), *file_rows(data, crits, handled)]
    rubric = {"schema_version": SCHEMA_VERSION, "title": title, "language": language,
              "total_points": total, "criteria": crits}
    # Through the validator: the import must produce a valid rubric.
    return ImportReport(rubric_from_dict(rubric, source), tuple(rows))


def import_seed_file(path: Path, language: str = "r") -> ImportReport:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise RubricError(str(path), [f"cannot read: {exc}"]) from exc
    return import_seed_rubric(data, language, str(path))
