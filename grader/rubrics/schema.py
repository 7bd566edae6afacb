"""Rubrics and assignments: the schema, validation, load/save, versions.

The format is documented in docs/rubric-format.md. A rubric is JSON with a
``schema_version``; loading validates everything and reports every problem at
once (``RubricError.problems``), naming the file. ``save`` writes canonical JSON
and ``load(save(r)) == r`` (property-tested). A rubric's ``version`` is the hash
of its canonical JSON, so a grade records exactly which rubric produced it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import RubricError
from .check_fields import (
    KINDS,
    Check,
    _as_tuple,
    _check,
    check_to_dict,
    version_2_features,
)
from .dependencies import dependency_problems, duplicate_tests
from .levels import Level, levels_to_list, parse_levels

SCHEMA_VERSION = 2  # what new rubrics are written in
SCHEMA_VERSIONS = (1, 2)  # what this grader reads; version 1 files load unchanged
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
class Criterion:
    id: str
    title: str
    kind: str
    points: float
    checks: tuple[Check, ...]
    task: str = ""
    description: str = ""
    expectations: str = ""
    levels: tuple[Level, ...] = ()  # the first whose checks all pass gives its credit
    manual: bool = False  # graded by hand: no automatic points, listed "for you to grade"

    @property
    def evaluated(self) -> tuple[Check, ...]:
        """Every check the layers evaluate: the weighted checks, then the levels'
        conditions, each once."""
        seen: dict[tuple[str, str], Check] = {}
        for ch in (*self.checks, *(ch for lv in self.levels for ch in lv.when)):
            seen.setdefault((ch.type, ch.target), ch)
        return tuple(seen.values())


@dataclass(frozen=True, slots=True)
class Rubric:
    title: str
    language: str
    total_points: float
    criteria: tuple[Criterion, ...]
    placeholders: tuple[str, ...] = ()
    schema_version: int = SCHEMA_VERSION

    def version_2_features(self) -> list[str]:
        """What this rubric uses that schema version 1 cannot say, each once."""
        used = [f for c in self.criteria for ch in c.evaluated for f in version_2_features(ch)]
        if any(c.levels for c in self.criteria):
            used.append("levels")
        if any(c.manual for c in self.criteria):
            used.append("manual criteria")
        return list(dict.fromkeys(used))

    def lowest_version(self) -> int:
        """The oldest schema version that can say this rubric (editors write it)."""
        return 2 if self.version_2_features() else 1

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
        return tuple(dict.fromkeys(ch.question for c in self.criteria for ch in c.evaluated
                                   if ch.type == "answer" and ch.question))

    def criterion(self, cid: str) -> Criterion:
        return next(c for c in self.criteria if c.id == cid)

    def output_variables(self) -> list[str]:
        return sorted(
            {ch.variable for c in self.criteria for ch in c.evaluated if ch.type == "output"}
        )

    def value_expressions(self) -> list[str]:
        """The ``value`` checks' expressions, each once, in rubric order."""
        return list(dict.fromkeys(ch.expression.strip() for c in self.criteria
                                  for ch in c.evaluated if ch.type == "value"))


# -- parsing and validation ---------------------------------------------------------
def rubric_from_dict(data: Any, source: str = "<rubric>") -> Rubric:
    problems: list[str] = []
    if not isinstance(data, dict):
        raise RubricError(source, ["the rubric must be a JSON object"])
    version = data.get("schema_version")
    if version not in SCHEMA_VERSIONS or isinstance(version, bool):
        problems.append(f"schema_version is {version!r}; this grader reads versions "
                        f"{' and '.join(map(str, SCHEMA_VERSIONS))}")
        version = SCHEMA_VERSION
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
    problems += dependency_problems((c.id, c.evaluated) for c in criteria)
    point_sum = sum(c.points for c in criteria)
    if criteria and total and not math.isclose(point_sum, float(total), abs_tol=1e-6):
        problems.append(
            f"criteria points add up to {point_sum:g}, but total_points is {float(total):g}"
        )
    rubric = Rubric(
        title=str(data.get("title", "")),
        language=str(language),
        total_points=float(total),
        criteria=tuple(criteria),
        placeholders=_as_tuple(data.get("placeholders", []), "placeholders", []),
        schema_version=int(version),
    )
    if version == 1 and (newer := rubric.version_2_features()):
        problems.append(f"{', '.join(newer)} need schema_version 2; this file says 1")
    if problems:
        raise RubricError(source, problems)
    return rubric


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
        set(c) - {"id", "title", "kind", "points", "checks", "task", "description", "expectations",
                  "levels", "manual"}
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
    levels = (parse_levels(c["levels"], where, kind, problems, _check)
              if "levels" in c else ())
    manual = c.get("manual", False)
    if not isinstance(manual, bool):
        problems.append(f"{where}.manual: expected true or false, got {manual!r}")
        manual = False
    raw_checks = c.get("checks", [] if levels or manual else None)
    if not isinstance(raw_checks, list) or not (raw_checks or levels or manual):
        problems.append(f"{where}: needs a non-empty list of checks (or levels)")
        raw_checks = []
    checks = [
        ch
        for j, r in enumerate(raw_checks)
        if (ch := _check(r, f"{where} check {j + 1}", kind, problems)) is not None
    ]
    problems += duplicate_tests(checks, where)
    problems += _clashes(Criterion(str(cid), "", kind, 0.0, tuple(checks), levels=levels), where)
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
        levels=levels,
        manual=manual,
    )


def _clashes(crit: Criterion, where: str) -> list[str]:
    """Two different checks of one criterion that look at the same thing (a result is
    matched to its check by type and target): say so instead of mixing their results."""
    seen: dict[tuple[str, str], Check] = {}
    out = []
    for ch in (*crit.checks, *(ch for lv in crit.levels for ch in lv.when)):
        seen.setdefault((ch.type, ch.target), ch)
    for ch in (ch for lv in crit.levels for ch in lv.when):
        other = seen[(ch.type, ch.target)]
        if dataclasses.replace(other, weight=ch.weight) != ch:
            out.append(f"{where}: two {ch.type} checks of {ch.target!r} (in checks or "
                       "levels) differ; write the same check the same way, or check "
                       "another target")
    return list(dict.fromkeys(out))


# -- serialisation ----------------------------------------------------------------
def rubric_to_dict(r: Rubric) -> dict[str, Any]:
    crits = []
    for c in r.criteria:
        d: dict[str, Any] = {"id": c.id, "title": c.title, "kind": c.kind, "points": c.points}
        for key in ("task", "description", "expectations"):
            if getattr(c, key):
                d[key] = getattr(c, key)
        if c.manual:
            d["manual"] = True
        if c.checks or not (c.levels or c.manual):
            d["checks"] = [check_to_dict(ch) for ch in c.checks]
        if c.levels:
            d["levels"] = levels_to_list(c.levels, check_to_dict)
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
