"""Partial credit as rubrics write it: levels, key points and answer levels.

Instructors give credit by approach and by level ("full marks for all three date
formats, 85% for two, 70% for mdy() alone"; "80% if brief but complete"), not in
proportion to what was found. The rubric says so with

- a criterion's ``levels``: an ordered list of ``Level`` (a ``credit``, the fraction of
  the criterion's points; ``when``, checks that must all pass; ``says``, the sentence
  the letter gives). The first level whose checks all pass wins; when none does, the
  criterion's weighted ``checks`` score it as before (``grader.scoring`` rule 6).
- an answer check's ``key_points`` (``KeyPoint``: terms with synonyms, a number within
  a tolerance, or a number the student's own code printed) and its answer ``levels``
  (``AnswerLevel``: how many key points and words give which credit). Without levels
  the defaults below apply; the minimum word count is one condition among others and
  never a proportion by itself.

Words alone are not substance: a level that asks for no key point (the defaults' "very
brief", a level without conditions) holds only for an answer of at least a quarter of
the words its check asks for (``word_floor`` of ``min_words``); a level that asks for
key points is earned by the points found, as the rubric sets it. So a placeholder plus
two words is not half an answer, and "Compost." still names the key point it names.

Parsing reports every problem at once, like the rest of the schema; ``*_to_dict``
write the canonical JSON (defaults left out) so a rubric's version hash is stable.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

DEFAULT_RTOL = 0.01  # a key point's number: relative tolerance


@dataclass(frozen=True, slots=True)
class KeyPoint:
    """What a complete written answer mentions; one of terms, number or computed."""

    point: str  # its name, as letters show it
    terms: tuple[str, ...] = ()  # any of these words or phrases (case-insensitive)
    number: float | None = None  # a number within ``rtol``
    rtol: float = DEFAULT_RTOL
    computed: bool = False  # a number that the student's own code cells printed

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"point": self.point}
        if self.terms:
            out["terms"] = list(self.terms)
        if self.number is not None:
            out["number"] = self.number
            if self.rtol != DEFAULT_RTOL:
                out["rtol"] = self.rtol
        if self.computed:
            out["computed"] = True
        return out


@dataclass(frozen=True, slots=True)
class AnswerLevel:
    """One level of an answer: conditions on the key points and words found."""

    credit: float
    says: str = ""
    points: int | None = None  # at least this many key points; -1: all of them
    share: float | None = None  # at least this share of the key points
    words: int | None = None  # at least this many words

    def holds(self, found: int, total: int, words: int, floor: int = 1) -> bool:
        """``floor``: the words a level that asks for no key point needs (``word_floor``)."""
        if words < (floor if self.points is None and self.share is None else 1):
            return False  # no answer is no level, nor are a few words without a key point
        if self.points is not None and found < (total if self.points < 0 else self.points):
            return False
        if self.share is not None and (total == 0 or found / total < self.share - 1e-9):
            return False
        return self.words is None or words >= self.words

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"credit": self.credit}
        if self.points is not None:
            out["points"] = "all" if self.points < 0 else self.points
        if self.share is not None:
            out["share"] = self.share
        if self.words is not None:
            out["words"] = self.words
        if self.says:
            out["says"] = self.says
        return out


def word_floor(min_words: int) -> int:
    """The fewest words a level that asks for no key point holds for: a quarter of the
    ``min_words`` an answer check asks for, rounded up (1 when it asks for 1 to 4)."""
    return max(1, math.ceil(min_words / 4))


def default_answer_levels(key_points: int, min_words: int) -> tuple[AnswerLevel, ...]:
    """The levels an answer check without ``levels`` is scored by."""
    if key_points:
        return (
            AnswerLevel(1.0, "complete: every key point, fully developed", points=-1,
                        words=min_words),
            AnswerLevel(0.8, "brief but complete: every key point", points=-1),
            AnswerLevel(0.8, "most of the key points", share=0.75),
            AnswerLevel(0.5, "some of the key points", share=0.5),
            AnswerLevel(0.25, "few of the key points", points=1),
        )
    return (
        AnswerLevel(1.0, "answered in full", words=min_words),
        AnswerLevel(0.8, "brief", words=max(1, (min_words + 1) // 2)),
        AnswerLevel(0.5, "very brief"),
    )


@dataclass(frozen=True, slots=True)
class Level:
    """One level of a criterion: its credit when every ``when`` check passes."""

    credit: float
    when: tuple[Any, ...] = ()  # Check objects (typed Any: checks.py imports this module)
    says: str = ""


# -- parsing -------------------------------------------------------------------------
def _credit(raw: Any, where: str, problems: list[str]) -> float:
    if isinstance(raw, int | float) and not isinstance(raw, bool) and 0 <= raw <= 1:
        return float(raw)
    problems.append(f"{where}.credit: expected a fraction of the points in [0, 1], "
                    f"got {raw!r}")
    return 0.0


def _says(raw: dict[str, Any], where: str, problems: list[str]) -> str:
    says = raw.get("says", "")
    if not isinstance(says, str):
        problems.append(f"{where}.says: expected a text, got {says!r}")
        return ""
    return says


def _objects(raw: Any, noun: str, fields: set[str], place: Callable[[int], str],
             problems: list[str], *, empty: bool = False) -> list[tuple[int, str, dict]]:
    """(index, where, object) of a list of ``noun`` objects; a problem for the list that
    is not one (or is empty, unless ``empty``), each item that is no object, and each
    unknown field."""
    if not isinstance(raw, list) or not (raw or empty):
        problems.append(f"{place(-1)}: expected a {'' if empty else 'non-empty '}list of "
                        f"{noun}s")
        return []
    out = []
    for i, item in enumerate(raw):
        at = place(i)
        if not isinstance(item, dict):
            problems.append(f"{at}: a {noun} must be an object")
            continue
        problems.extend(f"{at}: unknown field {key!r}" for key in sorted(set(item) - fields))
        out.append((i, at, item))
    return out


def _whole(raw: dict, key: str, at: str, problems: list[str], what: str) -> int | None:
    """A whole number >= 1 (or absent)."""
    value = raw.get(key)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                              or value < 1):
        problems.append(f"{at}.{key}: {what}")
        return None
    return value


def parse_key_points(raw: Any, where: str, problems: list[str]) -> tuple[KeyPoint, ...]:
    out = []
    for i, at, kp in _objects(raw, "key point", {"point", "terms", "number", "rtol",
                                                 "computed"},
                              lambda i: where if i < 0 else f"{where}[{i}]", problems,
                              empty=True):
        name = kp.get("point")
        if not isinstance(name, str) or not name.strip():
            problems.append(f"{at}.point: name the key point (what the answer mentions)")
            name = f"point {i + 1}"
        terms: tuple[str, ...] = ()
        if "terms" in kp:
            t = kp["terms"]
            if isinstance(t, str):
                t = [t]
            if isinstance(t, list) and t and all(isinstance(x, str) and x.strip() for x in t):
                terms = tuple(x.strip() for x in t)
            else:
                problems.append(f"{at}.terms: expected a non-empty list of words or phrases")
        number = kp.get("number")
        if number is not None and (isinstance(number, bool)
                                   or not isinstance(number, int | float)):
            problems.append(f"{at}.number: expected a number, got {number!r}")
            number = None
        rtol = kp.get("rtol", DEFAULT_RTOL)
        if isinstance(rtol, bool) or not isinstance(rtol, int | float) or rtol < 0:
            problems.append(f"{at}.rtol: expected a non-negative number")
            rtol = DEFAULT_RTOL
        computed = kp.get("computed", False)
        if not isinstance(computed, bool):
            problems.append(f"{at}.computed: expected true or false")
            computed = False
        if sum((bool(terms), number is not None, computed)) != 1:
            problems.append(f"{at}: give one of `terms`, `number` or `computed: true`")
        out.append(KeyPoint(name.strip(), terms, None if number is None else float(number),
                            float(rtol), computed))
    return tuple(out)


def parse_answer_levels(raw: Any, where: str, problems: list[str]) -> tuple[AnswerLevel, ...]:
    out = []
    for _, at, lv in _objects(raw, "level", {"credit", "says", "points", "share", "words"},
                              lambda i: where if i < 0 else f"{where}[{i}]", problems):
        points = -1 if lv.get("points") == "all" else _whole(
            lv, "points", at, problems, "\"all\" or a whole number of key points >= 1")
        share = lv.get("share")
        if share is not None and (isinstance(share, bool) or not isinstance(share, int | float)
                                  or not 0 < share <= 1):
            problems.append(f"{at}.share: a fraction of the key points in (0, 1]")
            share = None
        words = _whole(lv, "words", at, problems, "a whole number of words >= 1")
        out.append(AnswerLevel(_credit(lv.get("credit"), at, problems), _says(lv, at, problems),
                               points, None if share is None else float(share), words))
    return tuple(out)


def parse_levels(raw: Any, where: str, kind: str, problems: list[str],
                 parse_check: Callable[[Any, str, str, list[str]], Any]) -> tuple[Level, ...]:
    """A criterion's ``levels``; ``parse_check`` reads each ``when`` check."""
    out = []
    for _, at, lv in _objects(raw, "level", {"credit", "when", "says"},
                              lambda i: f"{where}.levels" if i < 0 else f"{where} level {i + 1}",
                              problems):
        when = lv.get("when", [])
        if isinstance(when, dict):
            when = [when]
        if not isinstance(when, list):
            problems.append(f"{at}.when: expected a list of checks")
            when = []
        checks = tuple(ch for j, w in enumerate(when)
                       if (ch := parse_check(w, f"{at} when {j + 1}", kind, problems)) is not None)
        out.append(Level(_credit(lv.get("credit"), at, problems), checks,
                         _says(lv, at, problems)))
    return tuple(out)


def levels_to_list(levels: tuple[Level, ...],
                   check_to_dict: Callable[[Any], dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for lv in levels:
        d: dict[str, Any] = {"credit": lv.credit}
        if lv.when:
            d["when"] = [{k: v for k, v in check_to_dict(ch).items() if k != "weight"}
                         for ch in lv.when]
        if lv.says:
            d["says"] = lv.says
        out.append(d)
    return out


# -- key points in an answer's text --------------------------------------------------
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?"
                     r"|(?<![\w.])[-+]?\.\d+")


def numbers_in(text: str) -> list[float]:
    """The numbers a text writes or prints (``1,234.5``, ``40%`` -> 40, ``30.4cm`` ->
    30.4, ``1.2e3``, ``-.5``): thousands separators dropped."""
    out = []
    for m in _NUMBER.finditer(text):
        try:
            out.append(float(m.group().replace(",", "")))
        except ValueError:
            continue
    return out


def _close(a: float, b: float, rtol: float) -> bool:
    return abs(a - b) <= max(rtol * max(abs(a), abs(b)), 1e-9)


def _decimals(token: float) -> int:
    text = repr(token)
    return 0 if text.endswith(".0") or "." not in text else len(text.split(".")[1])


def _cited(n: float, printed: list[float]) -> bool:
    """A number the student wrote that their code printed, as printed or rounded
    (0.4567 printed: 0.46, 0.457 or 45.7 written). Whole numbers under 10 ("three
    reasons", "2 tables") cite nothing."""
    digits = _decimals(n)
    if digits == 0 and abs(n) < 10:
        return False
    return any(round(q, digits) == n for p in printed for q in (p, p * 100))


def term_found(term: str, text: str) -> bool:
    words = [re.escape(w) for w in term.lower().split()]
    if not words:
        return False
    pattern = r"(?<![\w])" + r"[\s\-_]+".join(words) + r"(?![\w])"
    return re.search(pattern, text.lower()) is not None


def points_found(key_points: tuple[KeyPoint, ...], text: str,
                 printed: list[float]) -> list[bool]:
    """Which key points ``text`` mentions; ``printed``: the numbers the student's own
    code cells output."""
    nums = numbers_in(text)
    found = []
    for kp in key_points:
        if kp.terms:
            found.append(any(term_found(t, text) for t in kp.terms))
        elif kp.number is not None:
            found.append(any(_close(n, kp.number, kp.rtol) for n in nums))
        else:
            found.append(any(_cited(n, printed) for n in nums))
    return found
