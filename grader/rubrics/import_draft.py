"""The pieces an import of an old-system rubric is built from.

``Draft`` gathers the criteria (JSON dicts, validated at the end by the schema) and the
report's rows, and shares points out in proportion at the old file's own step
(``Draft.share``, ``grader.rubrics.import_points``: parts add up to their whole exactly,
equal parts stay equal); ``question_label``
says which words head a question in the notebook; ``min_words`` reads a minimum number
of words from a field or a sentence ("minimum 150 words"); ``question`` and
``assessed`` make the written criteria of an element's questions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .import_items import RUBRICS_PAGE, ImportRow, criterion_id, words
from .import_points import STEPS, Shares, apportion

__all__ = ["Draft", "assessed", "min_words", "number", "points_of", "question",
           "question_label"]

_MIN_WORDS = re.compile(r"(?:minimum|at least)\s+(?:of\s+)?(\d+)\s+words|(\d+)\+?\s+words",
                        re.I)


def number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return float(v)


def points_of(el: Any) -> float | None:
    if not isinstance(el, dict):
        return None
    p = number(el.get("max_points"))
    return p if p is not None else number(el.get("points"))


def question_label(key: str, description: str = "") -> str:
    """The words that head a question in the notebook, as well as the old file says:
    question_8_1 -> "8.1", question_1_pipes -> "Question 1", a description "Question 2:
    Data quality ..." -> "Question 2", else the key in words ("business insights")."""
    m = re.match(r"\s*(question|q)\s*(\d+(?:\.\d+)*)\b", description, re.I)
    if m:
        return f"Question {m.group(2)}"
    nums = re.findall(r"\d+", key)
    if key.lower().startswith(("question", "q_", "q")) and nums:
        return ".".join(nums) if len(nums) > 1 else f"Question {nums[0]}"
    return words(key)


def min_words(*texts: Any) -> int:
    for t in texts:
        if isinstance(t, int | float) and not isinstance(t, bool) and t >= 1:
            return int(t)
        if isinstance(t, str) and (m := _MIN_WORDS.search(t)):
            return int(m.group(1) or m.group(2))
    return 1


@dataclass
class Draft:
    """What an import made so far: criteria as JSON dicts, and the report's rows."""

    title: str
    total: float
    criteria: list[dict[str, Any]] = field(default_factory=list)
    rows: list[ImportRow] = field(default_factory=list)
    by_key: dict[str, str] = field(default_factory=dict)  # old key -> criterion id
    seen: set[str] = field(default_factory=set)
    required_variables: tuple[str, ...] = ()
    step: float = STEPS[-1]  # the old file's own step (``import_points.file_step``)
    # Shares decided above a part, for its own parts (where in the old file -> points):
    # a section's tasks are shared out with its siblings' in one go.
    planned: dict[str, list[float]] = field(default_factory=dict)

    def share(self, raw: list[float], target: float) -> Shares:
        """``raw`` in proportion, adding up to ``target``, at the file's step or the next
        finer one that keeps equal parts equal (``import_points.apportion``)."""
        return apportion(raw, target, self.step)

    def rounding(self, shares: Shares, target: float) -> str:
        """"; rounded to ..." for a report row, "" when nothing was scaled."""
        said = shares.words(self.step, target)
        return f"; {said}" if said else ""

    def add(self, key: str, title: str, kind: str, points: float,
            checks: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        cid = criterion_id(key, self.seen, "criterion")
        crit: dict[str, Any] = {"id": cid, "title": title[:200], "kind": kind,
                                "points": points, "checks": checks}
        crit.update({k: v for k, v in extra.items() if v})
        self.criteria.append(crit)
        self.by_key.setdefault(key, cid)
        return crit


def question(draft: Draft, key: str, title: str, qkey: str, q: dict[str, Any],
              points: float, at: str) -> None:
    desc = str(q.get("description") or "")
    label = question_label(qkey, desc)
    n = min_words(q.get("minimum_words"), q.get("min_words"), desc)
    check: dict[str, Any] = {"type": "answer", "question": label, "min_words": n,
                             "weight": 1.0}
    crit = draft.add(qkey, f"{title}: {desc or label}", "written", points, [check],
                     description=desc,
                     expectations=_descriptors(q))
    todo = ""
    rated = [k for k in ("excellent", "good", "adequate", "poor") if k in q]
    if rated:
        todo = ("Its ratings (" + ", ".join(rated) + ") are for the reviewer and the feedback "
                "model (kept as the criterion's expectations); the answer's default levels give "
                f"100% from {n} words, 80% from {max(1, (n + 1) // 2)}, 50% below.")
    draft.rows.append(ImportRow(f"question {label}: {desc} ({number(q.get('points')) or 0:g} "
                                "points)", at, True,
                                f"criterion {crit['id']} ({points:g} points): answer "
                                f"{label!r}, at least {n} words", todo))


def _descriptors(q: dict[str, Any]) -> str:
    said = [f"{k}: {q[k]}" for k in ("excellent", "good", "adequate", "poor", "grading_note")
            if isinstance(q.get(k), str)]
    return "; ".join(said)


def assessed(el: dict[str, Any]) -> Any:
    n = min_words(el.get("minimum_words"), str(el.get("description", "")))

    def make(draft: Draft, key: str, title: str, qkey: str, q: dict[str, Any], points: float,
             at: str) -> None:
        text = q["description"]
        crit = draft.add(f"{key}-{qkey}", f"{title}: {text}", "written", points, [
            {"type": "answer", "question": text, "min_words": n, "weight": 1.0}],
            description=text)
        draft.rows.append(ImportRow(f"question: {text}", at, True,
                                    f"criterion {crit['id']} ({points:g} points): answer "
                                    "check of this question's text",
                                    "The old file gives the question in its own words: make "
                                    "the answer check's question the notebook's heading "
                                    f"{RUBRICS_PAGE}."))
    return make


