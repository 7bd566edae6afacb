"""How the grader's scores agree with an instructor's: MAE, Pearson, Spearman, QWK.

GRADES.json is what ``grade ... --json`` prints, or a list of full reports;
entries with status "error" are skipped and counted. HUMAN.csv has a key column
(``student_id`` and/or ``file``), the total in ``score`` or ``total``, and maybe
a column per criterion id (other columns are listed as ignored; blank = missing).
Matching passes over the rows still unmatched, never on a key two rows of one
side share: (1) student_id where both rows have one, (2) file name, (3) file
stem (a CSV row without a file offers its student_id). Rows whose student_ids
both exist and differ never match; what is left is reported by count and name.
QWK rounds points half up to a multiple of ``step`` (default 1) and weighs the
confusion matrix over the union of both raters' categories by (i-j)^2/(k-1)^2.
Undefined statistics (too few pairs, zero variance) are None with a reason; QWK
is 0, not undefined, when only one rater is constant (as the formula gives).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import sys
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import InputError

__all__ = ["Grades", "Human", "Row", "Stat", "agreement", "categories", "cmd_agreement",
           "format_table", "load_grades", "load_human", "mae", "parse_step", "pearson",
           "quadratic_weighted_kappa", "ranks", "spearman"]

KEY_COLUMNS, SCORE_COLUMNS = ("student_id", "file"), ("score", "total")
LABELS = ("grader", "instructor")  # x is the grader's value, y the instructor's
STATS, STATS_SHOWN = ("mae", "pearson", "spearman", "qwk"), ("MAE", "Pearson", "Spearman", "QWK")
Values = Sequence[float]


@dataclass(frozen=True, slots=True)
class Stat:  # a statistic's value, or None and the reason it is undefined
    value: float | None
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Row:  # one student on one side; ``name`` is what reports call the row
    name: str
    file: str
    student_id: str
    score: float | None
    criteria: dict[str, float | None]


@dataclass(frozen=True, slots=True)
class Grades:  # the grader's rows, and the names of entries skipped for status "error"
    rows: list[Row]
    errors: list[str]


@dataclass(frozen=True, slots=True)
class Human:  # the instructor's rows, criterion columns, and other columns (ignored)
    rows: list[Row]
    columns: list[str]
    ignored: list[str]


def _undefined(xs: Values, ys: Values, need: int = 2, labels: tuple[str, str] | None = None) -> str:
    """Why a statistic of xs and ys is undefined (too few pairs, zero variance), or ""."""
    if len(xs) != len(ys):
        raise ValueError(f"{len(xs)} values against {len(ys)}")
    if len(xs) < need:
        return f"fewer than {need} pairs ({len(xs)})" if xs else "no pairs"
    for values, label in zip((xs, ys) if labels else (), labels or (), strict=True):
        if len(set(values)) == 1:
            return f"zero variance: every {label} value is {values[0]:g}"
    return ""


def mae(xs: Values, ys: Values) -> Stat:
    if reason := _undefined(xs, ys, need=1):
        return Stat(None, reason)
    return Stat(math.fsum(abs(x - y) for x, y in zip(xs, ys, strict=True)) / len(xs))


def pearson(xs: Values, ys: Values, labels: tuple[str, str] = ("x", "y")) -> Stat:
    if reason := _undefined(xs, ys, labels=labels):
        return Stat(None, reason)
    mx, my = math.fsum(xs) / len(xs), math.fsum(ys) / len(ys)
    sxy = math.fsum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    den = math.sqrt(math.fsum((x - mx) ** 2 for x in xs) * math.fsum((y - my) ** 2 for y in ys))
    if not 0 < den < math.inf:
        return Stat(None, "variance too small or too large to compute")
    return Stat(max(-1.0, min(1.0, sxy / den)))


def ranks(values: Values) -> list[float]:
    """1-based ranks; tied values share the average of the ranks they span."""
    s = sorted(values)
    return [(bisect_left(s, v) + bisect_right(s, v) + 1) / 2 for v in values]


def spearman(xs: Values, ys: Values, labels: tuple[str, str] = ("x", "y")) -> Stat:
    if reason := _undefined(xs, ys, labels=labels):
        return Stat(None, reason)
    return pearson(ranks(xs), ranks(ys), labels)


def categories(values: Values, step: float = 1.0) -> list[int]:
    """Points as integer categories: the nearest multiple of ``step``, halves up."""
    if not 0 < step < math.inf:
        raise ValueError(f"step must be a positive number, got {step!r}")
    return [math.floor(v / step + 0.5 + 1e-9) for v in values]


def quadratic_weighted_kappa(xs: Values, ys: Values, step: float = 1.0) -> Stat:
    if reason := _undefined(xs, ys):
        return Stat(None, reason)
    a, b = categories(xs, step), categories(ys, step)
    lo, hi = min(a + b), max(a + b)
    if lo == hi:
        return Stat(None, f"zero variance: every value is in category {lo} (step {step:g})")
    n, k = len(a), hi - lo + 1  # k categories, lo..hi; cell (i, j) weighs (i-j)^2/(k-1)^2
    observed, rows, cols = Counter(zip(a, b, strict=True)), Counter(a), Counter(b)
    disagreement = math.fsum(c * (i - j) ** 2 for (i, j), c in observed.items()) / (k - 1) ** 2
    chance = math.fsum(ri * cj / n * (i - j) ** 2
                       for i, ri in rows.items() for j, cj in cols.items()) / (k - 1) ** 2
    return Stat(1.0 - disagreement / chance)  # chance > 0 once two categories occur


def _read(path: Path | str) -> str:
    try:  # utf-8-sig: spreadsheets save CSV with a byte-order mark
        with open(path, encoding="utf-8-sig", newline="") as f:
            return f.read()
    except (OSError, UnicodeError) as exc:  # FileNotFoundError: "No such file or directory"
        why = getattr(exc, "strerror", None) or "not UTF-8 text"
        raise InputError(str(path), f"cannot be read ({why})") from exc


def _number(value: Any, where: str, path: Path | str) -> float | None:
    """A finite number from JSON or a CSV cell; a blank cell is None (missing)."""
    if value == "":
        return None
    try:
        number = math.nan if isinstance(value, bool) else float(value)
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number):
        raise InputError(str(path), f"{where} is not a number ({value!r})")
    return number


def load_grades(path: Path | str) -> Grades:
    """The grader's entries in ``path``; entries with status "error" are counted."""
    try:
        data = json.loads(_read(path))
    except json.JSONDecodeError as exc:
        raise InputError(str(path), f"not JSON (line {exc.lineno}: {exc.msg})") from exc
    if not isinstance(data, list):
        got = "an object" if isinstance(data, dict) else type(data).__name__
        raise InputError(str(path), f"expected a JSON list (what `grade --json` prints), got {got}")
    rows, errors = [], []
    for n, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise InputError(str(path), f"entry {n} is not an object")
        file, sid = str(entry.get("file") or ""), str(entry.get("student_id") or "").strip()
        name, criteria = file or sid or f"entry {n}", entry.get("criteria", [])
        if entry.get("status") == "error":
            errors.append(name)
            continue
        where, points = f"entry {n} ({name})", {}
        for c in criteria if isinstance(criteria, list) else [None]:
            if not isinstance(c, dict) or not isinstance(c.get("id"), str) or c["id"] in points:
                raise InputError(str(path), f"{where}: criteria need to be objects with unique ids")
            points[c["id"]] = _number(c.get("points"), f"{where}: {c['id']} points", path)
        score = _number(entry.get("score"), f"{where}: score", path)
        rows.append(Row(name, file, sid, score, points))
    return Grades(rows, errors)


def load_human(path: Path | str, criteria: Collection[str] = ()) -> Human:
    """The instructor's CSV: a key column, a score column, and ``criteria`` columns."""
    reader = csv.reader(io.StringIO(_read(path)))
    try:
        header = [h.strip() for h in next(reader, [])]
        lower, found = [h.lower() for h in header], ", ".join(header) or "nothing"
        keys = {k: lower.index(k) for k in KEY_COLUMNS if k in lower}
        if not keys:
            raise InputError(str(path), f"no key column 'student_id' or 'file' (found: {found})")
        score = next((lower.index(s) for s in SCORE_COLUMNS if s in lower), None)
        if score is None:
            raise InputError(str(path), f"no score column 'score' or 'total' (found: {found})")
        if dup := sorted({h for h in lower if h and lower.count(h) > 1}):
            raise InputError(str(path), f"column {dup[0]!r} appears twice in the header")
        other = [(i, h) for i, h in enumerate(header) if h and i not in {score, *keys.values()}]
        columns = [(i, h) for i, h in other if h in criteria]
        rows = []
        for cells in reader:
            line = reader.line_num
            cells = [c.strip() for c in cells] + [""] * (len(header) - len(cells))
            if any(cells[len(header):]):  # empty trailing cells are harmless
                raise InputError(str(path), f"line {line} has more cells than the header")
            sid, file = (cells[keys[k]] if k in keys else "" for k in KEY_COLUMNS)
            if any(cells):
                rows.append(Row(sid or file or f"line {line}", file, sid,
                                _number(cells[score], f"line {line}, {header[score]}", path),
                                {h: _number(cells[i], f"line {line}, {h}", path)
                                 for i, h in columns}))
    except csv.Error as exc:
        raise InputError(str(path), f"not CSV (line {reader.line_num}: {exc})") from exc
    return Human(rows, [h for _, h in columns], [h for _, h in other if h not in criteria])


PASSES = (  # (label, key of a grader row, key of a CSV row); "" never matches
    ("student_id", lambda r: r.student_id, lambda r: r.student_id),
    ("file", lambda r: PurePosixPath(r.file).name, lambda r: PurePosixPath(r.file).name),
    ("stem", lambda r: PurePosixPath(r.file).stem,
     lambda r: PurePosixPath(r.file).stem if r.file else r.student_id),
)


def _match(grades: list[Row], human: list[Row]) -> dict[str, Any]:
    g_left, h_left = dict(enumerate(grades)), dict(enumerate(human))
    pairs, shared = [], set()
    for label, gkey, hkey in PASSES:
        gk, hk = Counter(map(gkey, g_left.values())), Counter(map(hkey, h_left.values()))
        shared |= {(label, k) for k in gk.keys() & hk.keys() if k and max(gk[k], hk[k]) > 1}
        by_key = {k: i for i, r in g_left.items() if (k := gkey(r)) and gk[k] == 1}
        for j, h in list(h_left.items()):
            i = by_key.get(hkey(h)) if hk[hkey(h)] == 1 else None
            if i is not None and len({g_left[i].student_id, h.student_id} - {""}) < 2:
                pairs.append((g_left.pop(i), h_left.pop(j)))
    return {"pairs": pairs, "ambiguous": sorted(f"{label} {k!r}" for label, k in shared),
            "grades": [r.name for r in g_left.values()], "human": [r.name for r in h_left.values()]}


def _stats(values: list[tuple[float | None, float | None]], step: float) -> dict[str, Any]:
    both = [(x, y) for x, y in values if x is not None and y is not None]
    xs, ys = [x for x, _ in both], [y for _, y in both]
    stats = dict(zip(STATS, (mae(xs, ys), pearson(xs, ys, LABELS), spearman(xs, ys, LABELS),
                             quadratic_weighted_kappa(xs, ys, step)), strict=True))
    return {"n": len(both), "missing": len(values) - len(both),
            **{k: s.value for k, s in stats.items()},
            "reasons": {k: s.reason for k, s in stats.items() if s.value is None}}


def agreement(grades: Grades, human: Human, step: float = 1.0) -> dict[str, Any]:
    """The report that ``--json`` prints."""
    m = _match(grades.rows, human.rows)
    known = {c for g in grades.rows for c in g.criteria}
    return {
        "n": len(m["pairs"]), "step": step,
        "unmatched": {"grades": {"count": len(m["grades"]), "names": m["grades"]},
                      "human": {"count": len(m["human"]), "names": m["human"]},
                      "ambiguous_keys": m["ambiguous"]},
        "skipped_errors": {"count": len(grades.errors), "names": grades.errors},
        "ignored_columns": human.ignored + [c for c in human.columns if c not in known],
        "overall": _stats([(g.score, h.score) for g, h in m["pairs"]], step),
        "criteria": {c: _stats([(g.criteria.get(c), h.criteria.get(c)) for g, h in m["pairs"]],
                               step) for c in human.columns if c in known},
    }


def format_table(result: dict[str, Any]) -> str:
    """The report as a plain-text table, then what was undefined, unmatched or ignored."""
    rows = {"overall": result["overall"], **result["criteria"]}
    w = max(map(len, rows))
    fmt = f"{{:<{w}}}  {{:>4}}  {{:>7}}  {{:>7}}  {{:>8}}  {{:>7}}"
    lines = [f"{result['n']} matched pairs", fmt.format("", "n", *STATS_SHOWN)]
    lines += [fmt.format(name, s["n"], *("n/a" if s[k] is None else f"{s[k]:.3f}" for k in STATS))
              for name, s in rows.items()]
    lines += [f"  {name} {k}: {why}" for name, s in rows.items() for k, why in s["reasons"].items()]
    u = result["unmatched"]
    notes = {"unmatched grader entries": u["grades"]["names"],
             "unmatched CSV rows": u["human"]["names"],
             "skipped (grader error)": result["skipped_errors"]["names"],
             "keys shared by several rows": u["ambiguous_keys"],
             "ignored CSV columns (no such criterion)": result["ignored_columns"]}
    lines += [f"{k}: {len(v)}: {', '.join(v)}" for k, v in notes.items() if v]
    return "\n".join(lines) + "\n"


def parse_step(text: str) -> float:
    """``--step``: a positive number of points (an argparse ``type``)."""
    if not (text.replace(".", "", 1).isdigit() and 0 < float(text) < math.inf):
        raise argparse.ArgumentTypeError(f"expected a positive number of points, got {text!r}")
    return float(text)


def cmd_agreement(args: argparse.Namespace) -> int:
    grades = load_grades(args.grades)
    known = {c for g in grades.rows for c in g.criteria}
    result = agreement(grades, load_human(args.human, known), step=args.step)
    sys.stdout.write(json.dumps(result, indent=2, allow_nan=False) + "\n" if args.json
                     else format_table(result))
    return 0
