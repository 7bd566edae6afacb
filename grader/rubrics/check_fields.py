"""A rubric's checks: the check types, their fields, parsing, validation and JSON.

A check is one piece of evidence a criterion's points rest on. Each type reads some
fields (``Check``'s comments say which) and leaves the others at their defaults, so
a file lists only what a check uses and a rubric's canonical JSON, hence its version
hash, does not change when a new field is added. Parsing reports every problem at
once, each naming the criterion and the check.

Schema version 2 adds, for ``calls`` and ``assigns``, any-of groups: an entry
``"read_csv | read.csv"`` is satisfied by either name (``alternatives``); ``test``
checks, instructor code judged against the student's notebook after it ran, or right
after the cell that holds ``after`` (``name``, ``code``, ``message`` shown on failure,
``timeout_s``, ``after``); and ``hidden`` on any check
(its result counts; its target, code and message never reach the student).

It also adds reference values that need not come from the solution: ``value`` checks
evaluate an instructor's ``expression`` in the student's kernel and in the solution's
and compare it with the ``expected`` value (or any of several accepted ones, ``accept``
in a file), or with the solution's value when none is given, within ``rtol``/``atol``;
checks of what a cell printed (``printed``: a ``pattern`` or a ``number`` within the
tolerance) and of a drawn plot (``plot``), each within a ``question``'s cells or the
whole notebook, taking their ``evidence`` from the submitted outputs, our run, or both;
and ``depends_on``: the criteria a code check's values follow from, so that one early
slip is charged once (the check then judges the method only).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from .. import check_types as registry
from ..check_types import EVIDENCE_SOURCES as EVIDENCE
from .levels import (
    AnswerLevel,
    KeyPoint,
    parse_answer_levels,
    parse_key_points,
)

ASPECTS = ("type", "shape", "columns", "rows", "values")  # what an output check compares
TEST_TIMEOUT_S = 30.0  # a test's default time limit
MAX_TEST_TIMEOUT_S = 600.0

# The check types of each criterion kind (``grader.checks``: one module per type).
CODE_CHECKS = registry.names("code")
WRITTEN_CHECKS = registry.names("written")
KINDS = {"code": CODE_CHECKS, "written": WRITTEN_CHECKS}
__all__ = ["ASPECTS", "CHECK_FIELDS", "CODE_CHECKS", "EVIDENCE", "FILE_KEYS", "KINDS",
           "MAX_TEST_TIMEOUT_S", "TEST_TIMEOUT_S", "WRITTEN_CHECKS", "Check", "FrozenObject",
           "alternatives", "check_to_dict", "freeze", "show_value", "thaw",
           "version_2_features"]

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
    name: str = ""  # test: what the instructor calls it (unique in its criterion)
    code: str = ""  # test: assert statements / test functions (Python); stopifnot, testthat (R)
    message: str = ""  # test: what the student reads when it fails
    timeout_s: float = TEST_TIMEOUT_S  # test
    after: str = ""  # test: runs right after the first code cell holding this text
    hidden: bool = False  # any check: counts, but the student never sees what it looked for
    expression: str = ""  # value: evaluated in the student's kernel and the solution's
    expected: tuple[Any, ...] = ()  # value: accepted values (JSON, lists as tuples); () = key's
    pattern: str = ""  # printed: a regular expression searched in the printed text
    number: float | None = None  # printed: a number that must appear (within rtol/atol)
    evidence: str = "both"  # printed, plot: "stored", "rerun" or "both" (either counts)
    depends_on: tuple[str, ...] = ()  # code checks: criteria ids whose values this one uses
    min_count: int = 1  # code: at least this many matches of ``pattern``
    distinct: bool = False  # code: count distinct matched texts
    absent: bool = False  # code: passes when ``pattern`` is not found
    min_share: float | None = None  # documented (default 0.5), ran (1.0): share of cells
    key_points: tuple[KeyPoint, ...] = ()  # answer: what a complete answer mentions
    levels: tuple[AnswerLevel, ...] = ()  # answer: credit by key points and words

    @property
    def target(self) -> str:
        """What it looks for, as results and reviews say it (its type's ``target``)."""
        kind = registry.get(self.type)
        return kind.target(self) if kind is not None else self.type

    @property
    def share_needed(self) -> float:
        """documented, ran: the share of the student's code cells that must meet it."""
        if self.min_share is not None:
            return self.min_share
        kind = registry.get(self.type)
        return kind.default_share if kind is not None and kind.default_share is not None \
            else 1.0

    def aspect_weights(self) -> dict[str, float]:
        """The fraction of this check each compared aspect is worth (output checks)."""
        if self.partial:
            return dict(self.partial)
        aspects = self.compare or ("values",)
        return {a: 1.0 / len(aspects) for a in aspects}


# Every field of a check besides its type and weight, in the order files list them.
CHECK_FIELDS = tuple(f.name for f in fields(Check) if f.name not in ("type", "weight"))
FILE_KEYS = (*CHECK_FIELDS, "accept")  # a file writes several expected values as `accept`
ALTERNATIVE = "|"


class FrozenObject(tuple):  # type: ignore[type-arg]
    """A JSON object inside an expected value, as sorted (key, value) pairs."""

    __slots__ = ()


def freeze(value: Any) -> Any:
    """A JSON value with its lists as tuples and objects as ``FrozenObject`` (a check
    stays hashable)."""
    if isinstance(value, FrozenObject):
        return value  # frozen already
    if isinstance(value, dict):
        return FrozenObject(sorted((str(k), freeze(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
    return value


def show_value(value: Any, limit: int = 120) -> str:
    """A value (an expected one, or one a notebook gave) as the instructor would write
    it, short."""
    text = repr(thaw(value) if isinstance(value, tuple) else value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def thaw(value: Any) -> Any:
    """``freeze`` undone: the JSON value a file holds."""
    if isinstance(value, FrozenObject):
        return {k: thaw(v) for k, v in value}
    return [thaw(v) for v in value] if isinstance(value, tuple) else value


def alternatives(entry: str) -> tuple[str, ...]:
    """The names an entry of ``names`` or ``functions`` accepts: ``"read_csv | read.csv"``
    -> ``("read_csv", "read.csv")``; a plain name -> itself."""
    return tuple(a.strip() for a in entry.split(ALTERNATIVE) if a.strip())


def _group(entry: str) -> str:
    """An entry written canonically (``"a|b "`` -> ``"a | b"``), so equal rubrics hash equal."""
    return f" {ALTERNATIVE} ".join(alternatives(entry)) if ALTERNATIVE in entry else entry


def version_2_features(ch: Check) -> list[str]:
    """What ``ch`` uses that schema version 1 cannot say (empty: a version 1 check)."""
    used = []
    if any(ALTERNATIVE in e for e in (*ch.names, *ch.functions)):
        used.append("alternatives (`a | b`)")
    kind = registry.get(ch.type)
    if kind is not None and kind.version >= 2:
        used.append(f"{ch.type} checks")
    if ch.after:
        used.append("test positions (`after`)")
    if ch.hidden:
        used.append("hidden checks")
    if ch.depends_on:
        used.append("depends_on")
    if ch.key_points:
        used.append("key_points")
    if ch.levels:
        used.append("answer levels")
    return used


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
    known = {"type", "weight", *FILE_KEYS}
    for key in sorted(set(data) - known):
        problems.append(f"{where}: unknown field {key!r}")
    kw: dict[str, Any] = {"type": ctype}
    weight = data.get("weight", 1.0)
    if not isinstance(weight, int | float) or not 0 <= weight <= 1:
        problems.append(f"{where}: weight must be a number in [0, 1]")
    kw["weight"] = float(weight) if isinstance(weight, int | float) else 0.0
    for key in ("names", "functions", "compare", "placeholders", "depends_on"):
        if key in data:
            kw[key] = _as_tuple(data[key], f"{where}.{key}", problems)
    for key in ("names", "functions"):
        for entry in kw.get(key, ()):
            if ALTERNATIVE in entry and len(alternatives(entry)) < 2:
                problems.append(f"{where}.{key}: {entry!r} needs a name on each side of `|`")
        if key in kw:
            kw[key] = tuple(_group(e) for e in kw[key])
    for key in ("variable", "question", "name", "code", "message", "expression", "pattern",
                "evidence", "after"):
        if key in data:
            if isinstance(data[key], str):
                kw[key] = data[key]
            elif key in ("variable", "question"):  # as version 1 read them
                kw[key] = str(data[key])
            else:
                problems.append(f"{where}.{key}: expected a text, got {data[key]!r}")
    for key in ("rtol", "atol", "timeout_s", "number", "min_share"):
        if key in data:
            if isinstance(data[key], int | float) and not isinstance(data[key], bool):
                kw[key] = float(data[key])
            else:
                problems.append(f"{where}.{key}: expected a number, got {data[key]!r}")
    for key in ("max_errors", "min_words", "min_count"):
        if key in data:
            if isinstance(data[key], int) and not isinstance(data[key], bool):
                kw[key] = data[key]
            else:
                problems.append(f"{where}.{key}: expected a whole number, got {data[key]!r}")
    if "expected" in data and "accept" in data:
        problems.append(f"{where}: give `expected` (one value) or `accept` (a list of "
                        "accepted values), not both")
    elif "expected" in data:
        if data["expected"] is None:
            problems.append(f"{where}.expected: null is not a value to expect; leave "
                            "`expected` out to compare with the solution's value")
        else:
            kw["expected"] = (freeze(data["expected"]),)
    elif "accept" in data:
        if isinstance(data["accept"], list) and data["accept"] and None not in data["accept"]:
            kw["expected"] = tuple(freeze(v) for v in data["accept"])
        else:
            problems.append(f"{where}.accept: expected a non-empty list of accepted values")
    if "ignore_order" in data:
        kw["ignore_order"] = bool(data["ignore_order"])
    for key in ("hidden", "distinct", "absent"):
        if key in data:
            if isinstance(data[key], bool):
                kw[key] = data[key]
            else:
                problems.append(f"{where}.{key}: expected true or false, got {data[key]!r}")
    if "key_points" in data:
        kw["key_points"] = parse_key_points(data["key_points"], f"{where}.key_points", problems)
    if "levels" in data:
        kw["levels"] = parse_answer_levels(data["levels"], f"{where}.levels", problems)
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


# Fields only some types read, and how a check of another type that sets them is told.
OWN_FIELDS = ((("min_count", "distinct", "absent"), "{fields} belong to {types} checks"),
              (("key_points", "levels"), "{fields} (of a check) belong to {types} checks"),
              (("after",), "{where}.after: only a {types} check runs at a position"))


def _validate_check(ch: Check, where: str, problems: list[str]) -> None:
    """Every problem of ``ch``: its type's own (``grader.checks``), then the fields it
    sets that its type does not read, then the fields every check shares."""
    kind = registry.of(ch.type)
    kind.validate(ch, where, problems)
    for group, said in OWN_FIELDS:
        if any(getattr(ch, f) != getattr(_CHECK_DEFAULTS, f) for f in group) and not set(
                group) & set(kind.fields):
            readers = [t.name for t in registry.types() if set(group) & set(t.fields)]
            text = said.format(fields=_and(group), types=" or ".join(readers), where=where)
            problems.append(text if text.startswith(where) else f"{where}: {text}")
    if ch.min_share is not None and ("min_share" not in kind.fields
                                     or not 0 <= ch.min_share <= 1):
        readers = [t.name for t in registry.types() if "min_share" in t.fields]
        problems.append(f"{where}.min_share: a share in [0, 1], for {_and(readers)} checks")
    if ch.evidence not in EVIDENCE:
        problems.append(f"{where}.evidence: {ch.evidence!r} is not one of "
                        f"{', '.join(EVIDENCE)}")
    if ch.min_words < 1:
        problems.append(f"{where}: min_words must be >= 1")


def _and(items: tuple[str, ...] | list[str]) -> str:
    return ", ".join(items[:-1]) + f" and {items[-1]}" if len(items) > 1 else items[0]


_CHECK_DEFAULTS = Check(type="")


def check_to_dict(ch: Check) -> dict[str, Any]:
    out: dict[str, Any] = {"type": ch.type}
    for name in CHECK_FIELDS:
        value = getattr(ch, name)
        if value == getattr(_CHECK_DEFAULTS, name):
            continue
        if name == "expected":
            if len(value) == 1:
                out["expected"] = thaw(value[0])
            else:
                out["accept"] = [thaw(v) for v in value]
        elif name == "partial":
            out[name] = dict(value)
        elif name in ("key_points", "levels"):
            out[name] = [v.to_dict() for v in value]
        else:
            out[name] = list(value) if isinstance(value, tuple) else value
    out["weight"] = ch.weight
    return out


