"""Report rows for the parts of an old-system rubric that hold no points.

The criteria come from ``grader.rubrics.import_seed`` and ``import_formats``; every other
item of the file gets a row here saying what it became, or why it was not carried and
what the instructor can do instead: an element's penalties, rating scales and notes
(``element_rows``), and the file's other top-level items (``file_rows``): lists of
required variables and functions (carried where a criterion checks them, else which
are missing), penalties and common errors (one row each), template detection, score
validation rules, grading instructions for the old grader's model, example scores,
learning objectives, submission requirements, bonus points and grade scales.
"""

from __future__ import annotations

import re
from typing import Any

from .import_items import (
    OVERRIDE,
    RUBRICS_PAGE,
    RUNS_TODO,
    TEMPLATE_TODO,
    ImportRow,
    penalty_todo,
    top_rows,
    value_text,
    words,
)

__all__ = ["element_rows", "file_rows"]

_SILENT = {"points", "max_points", "weight", "description", "category", "automated_checks",
           "manual_review", "required_sections", "questions", "reflection_questions",
           "questions_assessed", "subcategories", "evaluation_criteria"}
_NOTES = {
    "grading_instructions": "steps for the old grader's model",
    "ai_grading_instructions": "instructions for the old grader's model",
    "assignment_prompt_additions": "reminders the old system added to the assignment",
    "output_validation": "principles for judging outputs",
    "example_scores": "example scores of typical submissions",
    "learning_objectives_mapping": "learning objectives",
    "key_learning_objectives": "learning objectives",
    "learning_objectives": "learning objectives",
    "key_skills": "key skills",
    "critical_concepts": "concepts the assignment teaches",
    "submission_requirements": "submission requirements (file format, naming)",
    "grading_strategy": "the split between automated and manual points",
}
_NOTE_TODO = {
    "example_scores": "Nothing to import: the self-check grades your solution and template; "
                      "grade a few real submissions and compare with these examples.",
    "grading_strategy": "Nothing to import: every criterion is scored by its checks, and the "
                        "feedback model and your Review add judgement.",
    "submission_requirements": "Not graded: file names and formats are for your course page.",
}
_PENALTY_LISTS = ("common_errors_to_check", "common_issues", "common_issues_deductions",
                  "common_mistakes")
_HANDLED = {"assignment_info", "assignment_name", "total_points", "title",
            "autograder_checks", "rubric_elements", "components", "rubric_categories",
            "partial_credit_rules", "grading_guidelines", "strict_scoring_rules",
            "strict_scoring_enabled", "common_issues_and_solutions", "data_structure"}


def element_rows(el: dict[str, Any], at: str, ids: list[str]) -> list[ImportRow]:
    """Rows of an element's fields that no check represents; ``ids``: the criteria made
    from the element."""
    rows = []
    cid = ids[0] if len(ids) == 1 else f"{ids[0]} to {ids[-1]}" if ids else "its criteria"
    for key, value in el.items():
        where = f"{at}.{key}"
        if key in _SILENT or (key == "criteria" and isinstance(value, list)):
            continue
        if key == "deductions" and isinstance(value, dict):
            rows += [ImportRow(f"penalty: {text}", f"{where}.{k}", False, "",
                               penalty_todo(k, str(text))) for k, text in value.items()]
        elif key == "execution_requirements":
            rows.append(ImportRow(f"penalty: {value_text(value.get('penalty', value)) if isinstance(value, dict) else value}",  # noqa: E501
                                  where, False, "", RUNS_TODO))
        elif key in ("criteria", "scoring_rules", "scoring_guide", "scoring"):
            rows.append(ImportRow(f"rating scale: {value_text(value)}", where, False, "", (
                f"Not carried: ratings for a person. {cid} {'scores' if len(ids) == 1 else 'score'}"
                " from the checks (a written answer: 100% from its minimum words, 80% from "
                f"half of them, 50% below); {OVERRIDE}.")))
        elif key == "creative_coding":
            rows.append(ImportRow(f"other approaches allowed: {value_text(value)}", where,
                                  False, "",
                                  "Nothing to do: the checks read variable names and calls, "
                                  "and output checks compare results, not code."))
        else:
            rows.append(ImportRow(f"{words(key)}: {value_text(value)}", where, False, "",
                                  f"Not applied: add a check {RUBRICS_PAGE} if it should "
                                  f"count; {OVERRIDE}."))
    return rows


def _entries(crits: list[dict[str, Any]], kind: str) -> set[str]:
    field = "functions" if kind == "calls" else "names"
    return {a.strip() for c in crits for ch in c["checks"] if ch["type"] == kind
            for e in ch.get(field, []) for a in e.split("|")}


def _coverage(item: str, where: str, wanted: list[str], have: set[str], kind: str,
              crits: list[dict[str, Any]]) -> ImportRow:
    patterns = " ".join(ch.get("pattern", "") for c in crits for ch in c["checks"])
    same = {h.replace("ize", "ise") for h in have}
    missing = [w for w in wanted if w not in have and w.replace("ize", "ise") not in same
               and re.escape(w) not in patterns]
    if not missing:
        return ImportRow(item, where, True, f"the criteria's {kind} checks")
    verb = "assigns" if kind == "assigns" else "calls"
    return ImportRow(item, where, False, "", (
        f"Not checked: {', '.join(missing)}. Add {'it' if len(missing) == 1 else 'them'} to "
        f"a {verb} check {RUBRICS_PAGE} if {'it' if len(missing) == 1 else 'they'} must be "
        "there."))


def _name(entry: Any, key: str = "name") -> str:
    raw = entry.get(key, entry.get("function", "")) if isinstance(entry, dict) else entry
    return re.sub(r"\(.*$", "", str(raw)).strip()


def _autograder_rows(checks: dict[str, Any], crits: list[dict[str, Any]]) -> list[ImportRow]:
    rows = []
    for key, value in checks.items():
        where = f"autograder_checks.{key}"
        if key == "sections":
            continue
        if key in ("required_variables", "required_functions") and isinstance(value, list):
            kind = "assigns" if key == "required_variables" else "calls"
            names = [_name(v) for v in value if _name(v)]
            rows.append(_coverage(f"{words(key)} ({len(names)}): {', '.join(names)}", where,
                                  names, _entries(crits, kind), kind, crits))
        else:
            rows.append(ImportRow(f"{words(key)}: {value_text(value)}", where, False, "", (
                "Not checked automatically: add output checks (values, rows) "
                f"{RUBRICS_PAGE} where results matter; {OVERRIDE}.")))
    return rows


def _testing_rows(data: dict[str, Any], key: str, crits: list[dict[str, Any]]
                  ) -> list[ImportRow]:
    rows = []
    for sub, value in (data.get(key) or {}).items():
        where = f"{key}.{sub}"
        if sub in ("required_objects", "required_functions_used") and isinstance(value, list):
            kind = "assigns" if sub == "required_objects" else "calls"
            names = [_name(v) for v in value if _name(v)]
            row = _coverage(f"{words(sub)}: {', '.join(names)}", where, names,
                            _entries(crits, kind), kind, crits)
            rows.append(row if not row.carried else ImportRow(
                row.item, where, True, row.imported_as,
                "Its points (its own scale) are not used: the categories' points make the "
                "total."))
        elif sub == "required_packages" and isinstance(value, list):
            names = [_name(v) for v in value if _name(v)]
            patterns = " ".join(ch.get("pattern", "") for c in crits for ch in c["checks"])
            missing = [n for n in names if re.escape(n) not in patterns]
            rows.append(ImportRow(f"required packages: {', '.join(names)}", where, True,
                                  "the criteria's checks that load them") if not missing else
                        ImportRow(f"required packages: {', '.join(names)}", where, False, "",
                                  f"Not checked: {', '.join(missing)}; a solution that does "
                                  "not load them fails its own run, which the self-check "
                                  "shows."))
        elif sub == "code_execution":
            rows.append(ImportRow(f"code execution: {value_text(value)}", where, False, "",
                                  RUNS_TODO))
        else:
            rows.append(ImportRow(f"{words(sub)}: {value_text(value)}", where, False, "", (
                f"Not checked automatically: add output or value checks {RUBRICS_PAGE} for "
                "these tests.")))
    return rows


def _penalties(key: str, value: Any) -> list[ImportRow]:
    items = value.items() if isinstance(value, dict) else enumerate(value or [])
    rows = []
    for k, v in items:
        where = f"{key}.{k}" if isinstance(value, dict) else f"{key}[{k}]"
        if isinstance(v, dict):
            what = v.get("error") or v.get("description") or v.get("feedback") or words(str(k))
            cost = v.get("deduction") or v.get("penalty") or v.get("score_cap")
            text = f"{what}" + (f" ({cost}{' points' if isinstance(cost, int | float) else ''})"
                                if cost else "")
        else:
            text = str(v)
        rows.append(ImportRow(f"penalty: {text}", where, False, "",
                              penalty_todo(str(k), text)))
    return rows


def file_rows(data: dict[str, Any], crits: list[dict[str, Any]],
              handled: set[str] = frozenset()) -> list[ImportRow]:  # type: ignore[assignment]
    """Rows of the file's top-level items that no criterion is made from."""
    rows = top_rows(data)
    checks = data.get("autograder_checks")
    if isinstance(checks, dict) and not handled & {"autograder_checks"}:
        rows += _autograder_rows(checks, crits)
    for key, value in data.items():
        if key in _HANDLED or key in handled:
            continue
        if key in ("automated_testing_details", "automated_validation_tests") \
                and isinstance(value, dict):
            rows += _testing_rows(data, key, crits)
        elif key in _PENALTY_LISTS:
            rows += _penalties(key, value)
        elif key == "template_detection":
            rows.append(ImportRow("template detection", key, False, "", TEMPLATE_TODO))
        elif key == "score_validation" and isinstance(value, dict):
            rules = value.get("rules") if isinstance(value.get("rules"), dict) else {}
            rows += [ImportRow(f"score rule: {value_text(r.get('description', r)) if isinstance(r, dict) else r}",  # noqa: E501
                               f"{key}.rules.{k}", False, "", penalty_todo(k, value_text(r)))
                     for k, r in rules.items()] or [
                ImportRow("score validation", key, False, "", f"Not applied; {OVERRIDE}.")]
        elif key == "critical_functions" and isinstance(value, dict):
            for sub, names in value.items():
                listed = [_name(n) for n in names or [] if _name(n)]
                if sub == "bonus":
                    rows.append(ImportRow(f"bonus functions: {', '.join(listed)}",
                                          f"{key}.{sub}", False, "", "Not imported: scores "
                                          f"stop at the total; to reward extra work, {OVERRIDE}."))
                else:
                    rows.append(_coverage(f"{words(sub)} functions: {', '.join(listed)}",
                                          f"{key}.{sub}", listed, _entries(crits, "calls"),
                                          "calls", crits))
        elif key == "bonus_opportunities":
            rows.append(ImportRow(f"bonus points: {value_text(value)}", key, False, "",
                                  f"Not imported: scores stop at the total; to reward extra "
                                  f"work, {OVERRIDE}."))
        elif key == "description":
            rows.append(ImportRow(f"description: {value_text(value)}", key, False, "", (
                "Not imported: a rubric holds no description of the assignment; the "
                "template's own text gives it to the students.")))
        elif key in ("grade_scale", "grade_ranges"):
            rows.append(ImportRow(f"grade scale: {value_text(value)}", key, False, "",
                                  "Not imported: the grader gives points; map them to letter "
                                  "grades in your gradebook."))
        elif key in _NOTES:
            rows.append(ImportRow(_NOTES[key], key, False, "", _NOTE_TODO.get(key, (
                "Nothing to import: the criteria and their checks replace it; "
                f"{OVERRIDE}."))))
        else:
            rows.append(ImportRow(
                words(key), key, False, "", "Not imported (the importer does not know this "
                f"field): if it changes scores, adjust the criteria {RUBRICS_PAGE}; {OVERRIDE}."))
    return rows
