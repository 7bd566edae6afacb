"""Import the old system's rubric files into our schema.

Instructors have dozens of rubrics in the old grader's format (example:
../shared/course-r/strings-dates/rubric.seed-format.json). What carries over:

- each ``autograder_checks.sections`` entry becomes a code criterion with its
  points, an ``assigns`` check of its ``variables`` and a ``calls`` check of its
  ``functions`` (equal weights; one check when only one list is present);
- a section with ``check_type = "markdown"`` (the reflection questions) becomes
  one written criterion per question listed under
  ``rubric_elements.*.questions`` with their own points, or, when none are
  listed, one written criterion for the whole section;
- ``min_words_per_question`` becomes each answer's ``min_words``.

What does not carry over, and is reported in ``ImportReport.dropped``: regex
"verification" strings and regex partial-credit rules (the old system's
pattern matching over the whole notebook, which scored an empty template at
67%), penalty percentages, and prose guidelines (kept as criterion
descriptions where they describe a section).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import RubricError
from .rubric import Check, Criterion, Rubric, rubric_from_dict, rubric_to_dict


@dataclass(slots=True)
class ImportReport:
    rubric: Rubric
    dropped: list[str] = field(default_factory=list)


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


def import_seed_rubric(
    data: dict[str, Any], language: str = "r", source: str = "<seed rubric>"
) -> ImportReport:
    info = data.get("assignment_info") or {}
    sections = (data.get("autograder_checks") or {}).get("sections")
    if not isinstance(sections, dict) or not sections:
        raise RubricError(source, ["no autograder_checks.sections: not an old-system rubric"])
    dropped: list[str] = []
    criteria: list[Criterion] = []
    for key, sec in sections.items():
        title = str(sec.get("name", key))
        points = float(sec.get("points", 0))
        if sec.get("check_type") == "markdown":
            criteria.extend(_written(data, key, title, points, sec, dropped))
            continue
        checks = []
        variables = [v for v in sec.get("variables", []) if isinstance(v, str)]
        functions = [f for f in sec.get("functions", []) if isinstance(f, str)]
        parts = [p for p in (("assigns", variables), ("calls", functions)) if p[1]]
        for ctype, names in parts:
            field_name = "names" if ctype == "assigns" else "functions"
            checks.append(
                Check(
                    type=ctype, weight=1.0 / len(parts), **{field_name: tuple(dict.fromkeys(names))}
                )
            )
        for extra in sorted(set(sec) - {"name", "points", "variables", "functions"}):
            dropped.append(f"{key}.{extra}: not representable as a deterministic check")
        if not checks:
            dropped.append(f"{key}: no variables or functions; imported as a runs check")
            checks.append(Check(type="runs"))
        criteria.append(
            Criterion(id=_slug(key), title=title, kind="code", points=points, checks=tuple(checks))
        )
    for name in ("partial_credit_rules", "strict_scoring_rules", "common_issues_and_solutions"):
        if name in data:
            dropped.append(f"{name}: regex/penalty rules are not imported (see module doc)")
    total = float(info.get("total_points") or sum(c.points for c in criteria))
    rubric = Rubric(
        title=str(info.get("title") or info.get("name") or "Imported rubric"),
        language=language,
        total_points=total,
        criteria=tuple(criteria),
    )
    # Round-trip through the validator: the import must produce a valid rubric.
    return ImportReport(rubric_from_dict(rubric_to_dict(rubric), source), dropped)


def _written(
    data: dict[str, Any],
    key: str,
    title: str,
    points: float,
    sec: dict[str, Any],
    dropped: list[str],
) -> list[Criterion]:
    min_words = int(sec.get("min_words_per_question", 1) or 1)
    questions = _questions(data)
    if questions and abs(sum(p for _, p, _ in questions) - points) < 1e-6:
        return [
            Criterion(
                id=_slug(qkey),
                title=f"{title}: {_question_label(qkey)}",
                kind="written",
                points=qpoints,
                description=desc,
                checks=(Check(type="answer", question=_question_label(qkey), min_words=min_words),),
            )
            for qkey, qpoints, desc in questions
        ]
    if questions:
        dropped.append(
            f"{key}: question points do not add up to the section's; "
            "imported as one written criterion"
        )
    return [
        Criterion(
            id=_slug(key),
            title=title,
            kind="written",
            points=points,
            checks=(Check(type="answer", question=title, min_words=min_words),),
        )
    ]


def import_seed_file(path: Path, language: str = "r") -> ImportReport:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise RubricError(str(path), [f"cannot read: {exc}"]) from exc
    if not isinstance(data, dict):
        raise RubricError(str(path), ["not an old-system rubric (expected a JSON object)"])
    return import_seed_rubric(data, language, str(path))
