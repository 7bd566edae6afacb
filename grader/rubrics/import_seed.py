"""Import the old system's rubric files into our schema.

Instructors have dozens of rubrics in the old grader's format (example:
../shared/course-r/strings-dates/rubric.seed-format.json). What carries over:

- each ``autograder_checks.sections`` entry becomes a code criterion with its
  points, an ``assigns`` check of its ``variables`` and a ``calls`` check of its
  ``functions`` (equal weights; one check when only one list is present; a
  ``runs`` check when neither is);
- a section with ``check_type = "markdown"`` (the reflection questions) becomes
  one written criterion per question listed under
  ``rubric_elements.*.questions`` with their own points and descriptions, or,
  when none are listed, one written criterion for the whole section;
- ``min_words_per_question`` becomes each answer's ``min_words``;
- ``assignment_info``'s title and total points.

What does not carry over: regex "verification" strings and regex partial-credit
rules (the old system's pattern matching over the whole notebook, which scored an
empty template at 67%), penalties and deductions, strict-scoring switches, prose
guidelines and notes. The ``ImportReport`` has one row per item of the old file
(grader/rubrics/import_items.py): what it became, or what the instructor can do
instead; ``ImportReport.dropped`` is the not-carried rows, one line each.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import RubricError
from .checks import Check
from .import_items import (
    RUBRICS_PAGE,
    ImportReport,
    ImportRow,
    describe,
    other_rows,
    report_lines,
    section_extra_row,
)
from .schema import Criterion, Rubric, rubric_from_dict, rubric_to_dict

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
        functions = [f for f in sec.get("functions", []) if isinstance(f, str)]
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


def import_seed_rubric(
    data: dict[str, Any], language: str = "r", source: str = "<seed rubric>"
) -> ImportReport:
    info = data.get("assignment_info") or {}
    checks = data.get("autograder_checks") or {}
    sections = checks.get("sections") if isinstance(checks, dict) else None
    if not isinstance(sections, dict) or not sections:
        raise RubricError(source, ["no autograder_checks.sections: not an old-system rubric"])
    made = _sections(data, sections)
    total = float(info.get("total_points") or sum(c.points for c in made.criteria))
    title = str(info.get("title") or info.get("name") or "Imported rubric")
    rubric = Rubric(title=title, language=language, total_points=total,
                    criteria=tuple(made.criteria))
    rows = [ImportRow(f"title {title!r} and total ({total:g} points)", "assignment_info",
                      True, f"title {title!r}, total {total:g} points")]
    rows += made.rows
    rows += other_rows(data, total, made.criteria, made.by_key, made.questions)
    # Round-trip through the validator: the import must produce a valid rubric.
    return ImportReport(rubric_from_dict(rubric_to_dict(rubric), source), tuple(rows))


def import_seed_file(path: Path, language: str = "r") -> ImportReport:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise RubricError(str(path), [f"cannot read: {exc}"]) from exc
    if not isinstance(data, dict):
        raise RubricError(str(path), ["not an old-system rubric (expected a JSON object)"])
    return import_seed_rubric(data, language, str(path))
