"""Rubrics and assignments: the schema, validation, load/save, versions.

The format is documented in docs/rubric-format.md. A rubric is JSON with a
``schema_version``; loading validates everything and reports every problem at
once (``RubricError.problems``), naming the file. ``save`` writes canonical JSON
and ``load(save(r)) == r`` (property-tested). A rubric's ``version`` is the hash
of its canonical JSON, so a grade records exactly which rubric produced it.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from ..errors import RubricError

SCHEMA_VERSION = 1
CODE_CHECKS = ("assigns", "calls", "output", "runs")
WRITTEN_CHECKS = ("answer",)
KINDS = {"code": CODE_CHECKS, "written": WRITTEN_CHECKS}
ASPECTS = ("type", "shape", "columns", "rows", "values")
LANGUAGES = ("python", "r")
DEFAULT_PLACEHOLDERS = (
    "YOUR ANSWER HERE",
    "YOUR CODE HERE",
    "Your answer here",
    "TODO",
    "Type your answer here",
    "Write your answer here",
)
_ID = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


@dataclass(frozen=True, slots=True)
class Check:
    """One check of a criterion. Fields not used by a check type keep their defaults."""

    type: str
    weight: float = 1.0
    names: tuple[str, ...] = ()  # assigns
    functions: tuple[str, ...] = ()  # calls
    variable: str = ""  # output
    compare: tuple[str, ...] = ()  # output
    rtol: float = 1e-6
    atol: float = 1e-9
    ignore_order: bool = False
    partial: tuple[tuple[str, float], ...] = ()  # output: aspect -> fraction
    max_errors: int = 0  # runs
    question: str = ""  # answer
    min_words: int = 1
    placeholders: tuple[str, ...] = ()

    @property
    def target(self) -> str:
        return {
            "assigns": ", ".join(self.names),
            "calls": ", ".join(self.functions),
            "output": self.variable,
            "runs": "all cells",
            "answer": self.question,
        }.get(self.type, self.type)

    def aspect_weights(self) -> dict[str, float]:
        """The fraction of this check each compared aspect is worth (output checks)."""
        if self.partial:
            return dict(self.partial)
        aspects = self.compare or ("values",)
        return {a: 1.0 / len(aspects) for a in aspects}


# Every field of a check besides its type and weight, in the order files list them.
CHECK_FIELDS = tuple(f.name for f in fields(Check) if f.name not in ("type", "weight"))


@dataclass(frozen=True, slots=True)
class Criterion:
    id: str
    title: str
    kind: str
    points: float
    checks: tuple[Check, ...]
    task: str = ""
    description: str = ""
    expectations: str = ""


@dataclass(frozen=True, slots=True)
class Rubric:
    title: str
    language: str
    total_points: float
    criteria: tuple[Criterion, ...]
    placeholders: tuple[str, ...] = ()
    schema_version: int = SCHEMA_VERSION

    @property
    def version(self) -> str:
        return hashlib.sha256(dumps(self).encode()).hexdigest()[:12]

    @property
    def all_placeholders(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(DEFAULT_PLACEHOLDERS + self.placeholders))

    @property
    def questions(self) -> tuple[str, ...]:
        """The questions of the answer checks, in rubric order (an answer ends where
        another one's question begins)."""
        return tuple(dict.fromkeys(ch.question for c in self.criteria for ch in c.checks
                                   if ch.type == "answer" and ch.question))

    def criterion(self, cid: str) -> Criterion:
        return next(c for c in self.criteria if c.id == cid)

    def output_variables(self) -> list[str]:
        return sorted(
            {ch.variable for c in self.criteria for ch in c.checks if ch.type == "output"}
        )


# -- parsing and validation ---------------------------------------------------------
def _as_tuple(value: Any, where: str, problems: list[str]) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    problems.append(f"{where}: expected a list of strings")
    return ()


def _check(data: Any, where: str, kind: str, problems: list[str]) -> Check | None:
    if not isinstance(data, dict):
        problems.append(f"{where}: a check must be an object")
        return None
    ctype = data.get("type")
    allowed = KINDS.get(kind, ())
    if ctype not in allowed:
        problems.append(
            f"{where}: unknown check type {ctype!r} for a {kind} criterion "
            f"(valid: {', '.join(allowed)})"
        )
        return None
    known = {"type", "weight", *CHECK_FIELDS}
    for key in sorted(set(data) - known):
        problems.append(f"{where}: unknown field {key!r}")
    kw: dict[str, Any] = {"type": ctype}
    weight = data.get("weight", 1.0)
    if not isinstance(weight, int | float) or not 0 <= weight <= 1:
        problems.append(f"{where}: weight must be a number in [0, 1]")
    kw["weight"] = float(weight) if isinstance(weight, int | float) else 0.0
    for key in ("names", "functions", "compare", "placeholders"):
        if key in data:
            kw[key] = _as_tuple(data[key], f"{where}.{key}", problems)
    for key in ("variable", "question"):
        if key in data:
            kw[key] = str(data[key])
    for key in ("rtol", "atol"):
        if key in data:
            if isinstance(data[key], int | float) and not isinstance(data[key], bool):
                kw[key] = float(data[key])
            else:
                problems.append(f"{where}.{key}: expected a number, got {data[key]!r}")
    for key in ("max_errors", "min_words"):
        if key in data:
            if isinstance(data[key], int) and not isinstance(data[key], bool):
                kw[key] = data[key]
            else:
                problems.append(f"{where}.{key}: expected a whole number, got {data[key]!r}")
    if "ignore_order" in data:
        kw["ignore_order"] = bool(data["ignore_order"])
    if "partial" in data:
        if isinstance(data["partial"], dict) and all(
                isinstance(v, int | float) and not isinstance(v, bool)
                for v in data["partial"].values()):
            kw["partial"] = tuple((str(k), float(v)) for k, v in data["partial"].items())
        else:
            problems.append(f"{where}.partial: expected an object of aspect -> fraction "
                            "(numbers)")
    check = Check(**kw)
    _validate_check(check, where, problems)
    return check


def _validate_check(ch: Check, where: str, problems: list[str]) -> None:
    if ch.type == "assigns" and not ch.names:
        problems.append(f"{where}: an assigns check needs `names`")
    if ch.type == "calls" and not ch.functions:
        problems.append(f"{where}: a calls check needs `functions`")
    if ch.type == "answer" and not ch.question.strip():
        problems.append(f"{where}: an answer check needs `question`")
    if ch.type == "output":
        if not ch.variable:
            problems.append(f"{where}: an output check needs `variable`")
        bad = [a for a in ch.compare if a not in ASPECTS]
        if bad:
            problems.append(f"{where}: unknown compare aspects {bad} (valid: {', '.join(ASPECTS)})")
        if ch.partial:
            keys = {k for k, _ in ch.partial}
            if not keys <= set(ch.compare or ("values",)):
                problems.append(f"{where}: partial names aspects that are not compared")
            total = sum(v for _, v in ch.partial)
            if not math.isclose(total, 1.0, abs_tol=1e-6):
                problems.append(f"{where}: partial fractions add up to {total:g}, not 1")
    if ch.min_words < 1:
        problems.append(f"{where}: min_words must be >= 1")


def rubric_from_dict(data: Any, source: str = "<rubric>") -> Rubric:
    problems: list[str] = []
    if not isinstance(data, dict):
        raise RubricError(source, ["the rubric must be a JSON object"])
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        problems.append(
            f"schema_version is {version!r}; this grader reads version {SCHEMA_VERSION}"
        )
    for key in sorted(
        set(data)
        - {"schema_version", "title", "language", "total_points", "criteria", "placeholders"}
    ):
        problems.append(f"unknown field {key!r}")
    language = data.get("language")
    if language not in LANGUAGES:
        problems.append(f"language {language!r} is not one of {', '.join(LANGUAGES)}")
    total = data.get("total_points")
    if not isinstance(total, int | float) or total <= 0:
        problems.append("total_points must be a positive number")
        total = 0.0
    criteria: list[Criterion] = []
    raw = data.get("criteria")
    if not isinstance(raw, list) or not raw:
        problems.append("criteria must be a non-empty list")
        raw = []
    seen: set[str] = set()
    for i, c in enumerate(raw):
        crit = _criterion(c, i, seen, problems)
        if crit is not None:
            criteria.append(crit)
    point_sum = sum(c.points for c in criteria)
    if criteria and total and not math.isclose(point_sum, float(total), abs_tol=1e-6):
        problems.append(
            f"criteria points add up to {point_sum:g}, but total_points is {float(total):g}"
        )
    if problems:
        raise RubricError(source, problems)
    return Rubric(
        title=str(data.get("title", "")),
        language=str(language),
        total_points=float(total),
        criteria=tuple(criteria),
        placeholders=_as_tuple(data.get("placeholders", []), "placeholders", []),
    )


def _criterion(c: Any, i: int, seen: set[str], problems: list[str]) -> Criterion | None:
    where = f"criteria[{i}]"
    if not isinstance(c, dict):
        problems.append(f"{where}: must be an object")
        return None
    cid = c.get("id")
    if not isinstance(cid, str) or not _ID.match(cid):
        problems.append(f"{where}: id {cid!r} must be lower-case letters, digits, - or _")
        cid = f"criterion-{i}"
    elif cid in seen:
        problems.append(f"{where}: duplicate id {cid!r}")
    seen.add(cid)
    where = f"criterion {cid!r}"
    for key in sorted(
        set(c) - {"id", "title", "kind", "points", "checks", "task", "description", "expectations"}
    ):
        problems.append(f"{where}: unknown field {key!r}")
    kind = c.get("kind")
    if kind not in KINDS:
        problems.append(f"{where}: unknown kind {kind!r} (valid: {', '.join(KINDS)})")
        return None
    points = c.get("points")
    if not isinstance(points, int | float) or points < 0:
        problems.append(f"{where}: points must be a non-negative number")
        points = 0.0
    raw_checks = c.get("checks")
    if not isinstance(raw_checks, list) or not raw_checks:
        problems.append(f"{where}: needs a non-empty list of checks")
        raw_checks = []
    checks = [
        ch
        for j, r in enumerate(raw_checks)
        if (ch := _check(r, f"{where} check {j + 1}", kind, problems)) is not None
    ]
    weights = sum(ch.weight for ch in checks)
    if checks and not math.isclose(weights, 1.0, abs_tol=1e-6):
        problems.append(f"{where}: check weights add up to {weights:g}, not 1")
    return Criterion(
        id=cid,
        title=str(c.get("title", cid)),
        kind=kind,
        points=float(points),
        checks=tuple(checks),
        task=str(c.get("task", "")),
        description=str(c.get("description", "")),
        expectations=str(c.get("expectations", "")),
    )


# -- serialisation ----------------------------------------------------------------
_CHECK_DEFAULTS = Check(type="")


def check_to_dict(ch: Check) -> dict[str, Any]:
    out: dict[str, Any] = {"type": ch.type}
    for name in CHECK_FIELDS:
        value = getattr(ch, name)
        if value != getattr(_CHECK_DEFAULTS, name):
            out[name] = (
                dict(value)
                if name == "partial"
                else (list(value) if isinstance(value, tuple) else value)
            )
    out["weight"] = ch.weight
    return out


def rubric_to_dict(r: Rubric) -> dict[str, Any]:
    crits = []
    for c in r.criteria:
        d: dict[str, Any] = {"id": c.id, "title": c.title, "kind": c.kind, "points": c.points}
        for key in ("task", "description", "expectations"):
            if getattr(c, key):
                d[key] = getattr(c, key)
        d["checks"] = [check_to_dict(ch) for ch in c.checks]
        crits.append(d)
    out: dict[str, Any] = {
        "schema_version": r.schema_version,
        "title": r.title,
        "language": r.language,
        "total_points": r.total_points,
    }
    if r.placeholders:
        out["placeholders"] = list(r.placeholders)
    out["criteria"] = crits
    return out


def dumps(r: Rubric) -> str:
    return json.dumps(rubric_to_dict(r), indent=2, ensure_ascii=False) + "\n"


def loads(text: str, source: str = "<rubric>") -> Rubric:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RubricError(source, [f"not valid JSON: {exc}"]) from exc
    return rubric_from_dict(data, source)


def load_rubric(path: Path) -> Rubric:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RubricError(str(path), [f"cannot read: {exc.strerror or exc}"]) from exc
    return loads(text, str(path))


def save_rubric(r: Rubric, path: Path) -> None:
    path.write_text(dumps(r), encoding="utf-8")


def with_criteria(r: Rubric, criteria: list[Criterion]) -> Rubric:
    """A copy with other criteria; total_points follows their sum (for editors)."""
    return replace(r, criteria=tuple(criteria), total_points=float(sum(c.points for c in criteria)))
