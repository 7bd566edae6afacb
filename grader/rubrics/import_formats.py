"""The old system's rubric formats besides ``autograder_checks.sections``.

Old rubric files come in several shapes (../shared/course-r/old-rubrics); ``detect``
names the shape and ``import_elements`` reads all but the first (``sections``, read by
``grader.rubrics.import_seed``) into criteria:

- ``elements``: ``assignment_info`` + ``rubric_elements`` (with or without
  ``autograder_checks`` required variables and functions);
- ``components``: ``assignment_name`` + ``components`` (the same inside);
- ``categories``: ``rubric_categories`` (+ ``automated_testing_details``);
- ``flat``: a map of categories, each with ``points`` and a ``description``.

Each element (component, category) with points becomes criteria worth its points:

- its ``required_sections`` one code criterion per section, or per subtask where a
  section has them, its verification strings read into checks
  (``grader.rubrics.import_prose``);
- its ``questions`` / ``reflection_questions`` (or ``questions_assessed``) one written
  criterion per question: an ``answer`` check, ``minimum_words`` as ``min_words``;
- its ``subcategories`` / ``evaluation_criteria`` with points one criterion each;
- otherwise one criterion, read from its requirements in prose: a written one (an
  ``answer`` check of its title) when it is about reflection, interpretation or
  justification and names no code, else a code one with the checks its sentences name
  and, when they name none, a ``runs`` check; its sentences are kept as the criterion's
  ``expectations`` for the reviewer and the feedback model.

The parts of an element are scaled to the element's points where they do not add up
(the old system scored "completed points / total section points x max points"), and
the elements to the file's total where they do not: each time a report row says so.
Points are rounded to hundredths, the last part taking the rounding so that the sum
is exact.
"""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import Any

from .import_draft import (
    Draft,
    assessed,
    min_words,
    number,
    points_of,
    question,
    question_label,
)
from .import_items import RUBRICS_PAGE, ImportRow, words
from .import_notes import element_rows
from .import_points import file_step
from .import_prose import CheckSet, accepted_group

__all__ = ["detect", "import_elements"]

# A part answered in words: said by its key ("reflection_questions"), or by its text.
_WRITTEN_KEY = re.compile(r"reflect|question|interpret|justif|essay|discussion", re.I)
_WRITTEN_TEXT = re.compile(r"reflect|interpret|justif|essay", re.I)


def detect(data: Any) -> str:
    """The file's shape: sections, elements, components, categories, flat; "" when it
    is not an old-system rubric."""
    if not isinstance(data, dict):
        return ""
    checks = data.get("autograder_checks")
    if isinstance(checks, dict) and isinstance(checks.get("sections"), dict) \
            and checks["sections"]:
        return "sections"
    for key, shape in (("rubric_elements", "elements"), ("components", "components"),
                       ("rubric_categories", "categories")):
        if isinstance(data.get(key), dict) and any(
                points_of(v) is not None for v in data[key].values()):
            return shape
    if any(points_of(v) is not None for v in data.values()):
        return "flat"
    return ""


def _title_and_total(data: dict[str, Any], source: str) -> tuple[str, float | None]:
    info = data.get("assignment_info") if isinstance(data.get("assignment_info"), dict) else {}
    title = info.get("title") or info.get("name") or data.get("assignment_name") \
        or data.get("title")
    if not title:
        stem = PurePath(source).stem if source and not source.startswith("<") else ""
        title = words(stem).capitalize() if stem else "Imported rubric"
    total = number(info.get("total_points"))
    return str(title), total if total is not None else number(data.get("total_points"))


def _elements(data: dict[str, Any], shape: str) -> tuple[str, dict[str, Any]]:
    """(where, {key: element}) of the file's shape."""
    if shape == "flat":
        return "", {k: v for k, v in data.items() if points_of(v) is not None}
    where = {"elements": "rubric_elements", "components": "components",
             "categories": "rubric_categories"}[shape]
    return where, data[where]


def import_elements(data: dict[str, Any], shape: str, source: str) -> Draft:
    """Criteria and rows of a file without autograder sections (``detect`` != sections)."""
    title, declared = _title_and_total(data, source)
    where, elements = _elements(data, shape)
    keyed = {k: el for k, el in elements.items() if points_of(el) is not None}
    raw = [points_of(el) or 0.0 for el in keyed.values()]
    total = declared if declared and declared > 0 else sum(raw)
    draft = Draft(title, total, step=file_step(data))
    checks = data.get("autograder_checks") if isinstance(data.get("autograder_checks"),
                                                          dict) else {}
    draft.required_variables = tuple(v for v in checks.get("required_variables", [])
                                     if isinstance(v, str))
    got = draft.share(raw, total)
    shares = got.points
    if raw and abs(sum(raw) - total) > 1e-6:
        draft.rows.append(ImportRow(
            f"the categories' points ({' + '.join(f'{p:g}' for p in raw)} = {sum(raw):g}) "
            f"against the total {total:g}", where or "total_points", True,
            f"each category scaled by {total / sum(raw):.4g} to add up to {total:g}"
            f"{draft.rounding(got, total)}",
            f"Check the criteria's points {RUBRICS_PAGE}: the old file's parts did not add "
            "up to its total."))
    for (key, el), points in zip(keyed.items(), shares, strict=True):
        at = f"{where}.{key}" if where else key
        _element(draft, key, el, points, at)
    for key in elements:
        if key not in keyed:
            draft.rows.append(ImportRow(words(key), f"{where}.{key}" if where else key, False,
                                        "", "Not imported: it has no points."))
    return draft


def _element_title(key: str, el: dict[str, Any]) -> str:
    desc = str(el.get("description") or "").strip()
    name = words(key).capitalize()
    if desc and re.match(r"part\s*\d", desc, re.I):
        return desc.split(" - ")[0]
    return name


def _element(draft: Draft, key: str, el: dict[str, Any], points: float, at: str) -> None:
    title = _element_title(key, el)
    before, row_at = len(draft.criteria), len(draft.rows)
    head = f"{title} ({points_of(el) or 0:g} points)"
    sections = el.get("required_sections")
    questions = el.get("questions") or el.get("reflection_questions")
    subs = el.get("subcategories") if isinstance(el.get("subcategories"), dict) else \
        el.get("evaluation_criteria") if isinstance(el.get("evaluation_criteria"), dict) \
        else None
    if isinstance(sections, dict) and sections:
        _parts(draft, key, title, sections, points, f"{at}.required_sections", _section)
    elif isinstance(questions, dict) and questions:
        field_ = "questions" if "questions" in el else "reflection_questions"
        _parts(draft, key, title, questions, points, f"{at}.{field_}", question)
    elif isinstance(el.get("questions_assessed"), list) and el["questions_assessed"]:
        qs = {f"q{i + 1}": {"points": 1, "description": str(q)}
              for i, q in enumerate(el["questions_assessed"])}
        _parts(draft, key, title, qs, points, f"{at}.questions_assessed", assessed(el))
    elif subs and any(points_of(v) is not None for v in subs.values()):
        field_ = "subcategories" if "subcategories" in el else "evaluation_criteria"
        _parts(draft, key, title, subs, points, f"{at}.{field_}", _sub)
    elif items := _pointed(el.get("criteria")):
        _parts(draft, key, title, items, points, f"{at}.criteria", _item)
    else:
        _prose(draft, key, title, el, points, at)
    made = draft.criteria[before:]
    if len(draft.criteria) - before > 1 or sections or questions:
        ids = f"{made[0]['id']} to {made[-1]['id']}" if len(made) > 1 else made[0]["id"]
        split = " + ".join(f"{c['points']:g}" for c in made)
        draft.rows.insert(row_at, ImportRow(
            head, at, True, f"{len(made)} criteria {ids} ({split} points)"))
    draft.rows += element_rows(el, at, [c["id"] for c in made])


_POINTED = re.compile(r"^(.*?)\s*\((\d+(?:\.\d+)?)\s*(?:pts?|points?)\)\s*$", re.I)


def _pointed(lines: Any) -> dict[str, dict[str, Any]]:
    """Requirements that carry their points ("Row filtering - 5 tasks (2.5 pts)"), as
    parts; {} unless at least two of them do."""
    if not isinstance(lines, list):
        return {}
    found = [m for x in lines if isinstance(x, str) and (m := _POINTED.match(x))]
    if len(found) < 2:
        return {}
    return {f"item_{i + 1}": {"points": float(m.group(2)), "description": m.group(1)}
            for i, m in enumerate(found)}


def _item(draft: Draft, key: str, title: str, ikey: str, item: dict[str, Any], points: float,
          at: str) -> None:
    desc = item["description"]
    if re.match(r"\s*question\s*\d", desc, re.I):
        question(draft, key, title, f"{key}_{ikey}", item, points, at)
        return
    _prose(draft, f"{key}_{ikey}", f"{title}: {desc}", {**item, "criteria": [desc]}, points,
           at, parent=key)


def _parts(draft: Draft, key: str, title: str, parts: dict[str, Any], points: float, at: str,
           make: Any) -> None:
    keyed = {k: p for k, p in parts.items() if isinstance(p, dict)}
    raw = [number(p.get("points")) or 0.0 for p in keyed.values()]
    # A part with tasks that add up to it is shared out task by task, with its siblings'
    # in one go: equal tasks get equal points across the parts (_section takes them).
    leaves = [_task_points(p, r) for p, r in zip(keyed.values(), raw, strict=True)]
    got = draft.share([x for ts in leaves for x in ts], points)
    shares, n = [], 0
    for (pkey, _), ts in zip(keyed.items(), leaves, strict=True):
        mine = got.points[n:n + len(ts)]
        n += len(ts)
        if len(ts) > 1:
            draft.planned[f"{at}.{pkey}"] = mine
        shares.append(round(sum(mine), 6))
    if abs(sum(raw) - points) > 1e-6:
        draft.rows.append(ImportRow(
            f"{title}: its parts' points ({' + '.join(f'{p:g}' for p in raw)} = {sum(raw):g}) "
            f"against its {points:g}", at, True,
            f"each part scaled by {points / sum(raw) if sum(raw) else 0:.4g} to add up to "
            f"{points:g}{draft.rounding(got, points)}", f"Check these criteria's points "
            f"{RUBRICS_PAGE}: the old file's parts did not add up to the category's points."))
    for (pkey, part), share in zip(keyed.items(), shares, strict=True):
        make(draft, key, title, pkey, part, share, f"{at}.{pkey}")


def _task_points(part: dict[str, Any], points: float) -> list[float]:
    """A part's tasks' points when it has tasks that add up to its own, else its own."""
    tasks = part.get("subtasks") if isinstance(part.get("subtasks"), dict) else {}
    raw = [number(t.get("points")) or 0.0 for t in tasks.values() if isinstance(t, dict)]
    return raw if len(raw) > 1 and abs(sum(raw) - points) < 1e-6 else [points]


def _part_label(key: str) -> str:
    """part2_select -> "Part 2"; task_2_1_inner -> "task 2.1"; step_1_x -> "step 1"."""
    m = re.match(r"(part|task|step|question)_?((?:\d+_?)+)", key)
    if not m:
        return words(key)
    nums = ".".join(re.findall(r"\d+", m.group(2)))
    return f"{m.group(1).capitalize() if m.group(1) == 'part' else m.group(1)} {nums}"


def _section(draft: Draft, key: str, title: str, skey: str, sec: dict[str, Any],
             points: float, at: str) -> None:
    label = _part_label(skey)
    name = f"{label}: {sec.get('description') or words(skey)}"
    tasks = sec.get("subtasks") if isinstance(sec.get("subtasks"), dict) else {}
    if tasks:
        raw = [number(t.get("points")) or 0.0 for t in tasks.values() if isinstance(t, dict)]
        planned = draft.planned.pop(at, None)
        got = draft.share(raw, points)
        shares = planned if planned is not None and len(planned) == len(raw) else got.points
        for (tkey, task), share in zip(((k, t) for k, t in tasks.items()
                                        if isinstance(t, dict)), shares, strict=True):
            tname = f"{label}, {_part_label(tkey)}: {task.get('description') or words(tkey)}"
            _code_part(draft, tkey, tname, task, share, f"{at}.subtasks.{tkey}", key=skey)
        if abs(sum(raw) - points) > 1e-6:
            how = draft.rounding(got, points) if planned is None else (
                f" ({', '.join(f'{p:g}' for p in dict.fromkeys(shares))} points a task), "
                "rounded with the other parts' tasks")
            draft.rows.append(ImportRow(f"{name}: its tasks' points ({sum(raw):g})", at, True,
                                        f"scaled to the section's {points:g}{how}"))
        return
    _code_part(draft, skey, name, sec, points, at, key=skey)


def _code_part(draft: Draft, pkey: str, name: str, part: dict[str, Any], points: float,
               at: str, key: str) -> None:
    found = CheckSet(draft.required_variables)
    for v in part.get("verification", []) or []:
        if isinstance(v, str):
            found.verification(v)
    for f in part.get("accepts_functions", []) or []:
        if isinstance(f, str):
            found.calls.pop(f, None)
    if accepts := [f for f in part.get("accepts_functions", []) or [] if isinstance(f, str)]:
        found.calls[accepted_group(accepts)] = 1.0
    todo = ""
    if found.empty():
        found.add_plain("runs")
        todo = (f"Its verification names no code ({'; '.join(found.unread)}), so it became a "
                f"runs check: add checks {RUBRICS_PAGE} if it should check more.")
    elif found.unread:
        todo = (f"Not checked: {'; '.join(found.unread)} (words, not code): look at these "
                "in Review.")
    crit = draft.add(pkey, name, "code", points, found.checks(),
                     description=str(part.get("note") or ""))
    draft.by_key.setdefault(key, crit["id"])
    draft.rows.append(ImportRow(f"{name} ({number(part.get('points')) or 0:g} points)", at, True,
                                f"criterion {crit['id']} ({points:g} points): {found.summary()}",
                                todo))
    for extra in sorted(set(part) - {"points", "description", "verification", "subtasks",
                                     "accepts_functions"}):
        draft.rows.append(_extra_row(name, crit["id"], extra, part[extra], f"{at}.{extra}"))


def _extra_row(name: str, cid: str, extra: str, value: Any, at: str) -> ImportRow:
    shown = value if not isinstance(value, list) else ", ".join(map(str, value))
    item = f"{name}: {words(extra)} {shown}"
    if extra in ("note", "grading_note"):
        return ImportRow(item, at, True, f"the description of {cid}")
    if extra.startswith("accepts"):
        return ImportRow(item, at, False, "", f"Nothing to do: {cid} reads names and calls, "
                         "so any of these passes it.")
    if extra == "grading":
        return ImportRow(item, at, False, "", f"Not applied: {cid} scores from its checks; "
                         f"where an approach deserves this credit, override {cid} in Review.")
    return ImportRow(item, at, False, "", f"Not checked automatically: add a check to {cid} "
                     f"{RUBRICS_PAGE} if it should count (an output check compares values "
                     "and rows with the solution's).")


def _sub(draft: Draft, key: str, title: str, skey: str, sub: dict[str, Any], points: float,
         at: str) -> None:
    desc = str(sub.get("description") or words(skey))
    own = re.match(r"\s*(?:\d+(?:\.\d+)*\s|question\s*\d)", desc, re.I)
    _prose(draft, skey, desc if own else f"{title}: {desc}", sub, points, at, parent=key)


def _lines(el: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for k in ("criteria", "automated_checks", "evaluation_criteria", "manual_review"):
        v = el.get(k)
        if isinstance(v, list):
            out += [str(x) for x in v if isinstance(x, str)]
    return out


def _prose(draft: Draft, key: str, title: str, el: dict[str, Any], points: float, at: str,
           parent: str = "") -> None:
    desc = str(el.get("description") or "")
    lines = _lines(el)
    found = CheckSet(draft.required_variables)
    for line in lines:
        found.prose(line)
    if found.empty() and desc:
        found.prose(desc)
    written = bool(_WRITTEN_KEY.search(f"{parent} {key}") or _WRITTEN_TEXT.search(desc)
                   or re.match(r"\s*question\s*\d", desc, re.I)) \
        and not (found.calls or found.assigns or found.code)
    expectations = "; ".join(lines) if lines else desc
    head = f"{title} ({points_of(el) or 0:g} points)"
    if written:
        label = question_label(key, desc)
        n = min_words(el.get("minimum_words"), el.get("min_words"), desc, *lines)
        crit = draft.add(key, title, "written", points, [
            {"type": "answer", "question": label, "min_words": n, "weight": 1.0}],
            description=desc, expectations=expectations)
        draft.rows.append(ImportRow(head, at, True, f"criterion {crit['id']} ({points:g} "
                                    f"points): answer {label!r}, at least {n} words", (
                                        f"The question's heading in the notebook is taken to "
                                        f"be {label!r}: correct it {RUBRICS_PAGE} if the "
                                        "notebook words it otherwise.")))
    else:
        todo = ""
        if found.empty():
            found.add_plain("runs")
            todo = ("Its requirements are for a person to judge, so it scores whether the "
                    "student's code runs; they are kept as its expectations for Review and "
                    f"the feedback model. Add output or value checks {RUBRICS_PAGE} to check "
                    "results.")
        elif found.unread:
            todo = (f"Not checked automatically: {'; '.join(found.unread)}. Kept as its "
                    "expectations for Review and the feedback model.")
        crit = draft.add(key, title, "code", points, found.checks(), description=desc,
                         expectations=expectations)
        draft.rows.append(ImportRow(head, at, True, f"criterion {crit['id']} ({points:g} "
                                    f"points): {found.summary()}", todo))
    if parent:
        draft.by_key.setdefault(parent, crit["id"])
        draft.rows += element_rows(el, at, [crit["id"]])
