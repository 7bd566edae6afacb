"""Points shared out in proportion when an old rubric's parts do not add up to their whole,
rounded to the old rubric's own step.

The old system scored "completed points / total section points x max points", so a section
of 45 points inside a category of 40 gives its parts 40/45 of their points: 4.44, 2.67,
1.78, 0.89, numbers no instructor wrote. ``apportion`` rounds the shares to the step the
old file writes its points in (``own_step``: whole points, halves, quarters...), keeping
three things true: the parts add up to the whole exactly, parts that were equal stay equal,
and a larger part never gets fewer points than a smaller one (nor a part 0). Where the
old step cannot keep them (whole points cannot share 40 among 5 + 3 x 4 + 2 x 12 + 1 x 4 in
proportion), the next finer step that can is used (tenths: 4.4, 2.6, 1.8, 0.9), and
``Shares.words`` says which step and why, for the import report's row. Shares follow the
largest-remainder method, a whole group of equal parts at a time.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["STEPS", "Shares", "apportion", "file_step", "own_step", "step_words"]

STEPS = (1.0, 0.5, 0.25, 0.1, 0.05, 0.01)  # coarsest first; hundredths at the finest
_WORDS = {1.0: "whole points", 0.5: "half points", 0.25: "quarter points",
          0.1: "tenths of a point", 0.05: "steps of 0.05 points", 0.01: "hundredths of a point"}
_EPS = 1e-9


def step_words(step: float) -> str:
    return _WORDS.get(step, f"steps of {step:g} points")


def _multiple(value: float, step: float) -> bool:
    units = value / step
    return abs(units - round(units)) < 1e-6


def own_step(values: Iterable[float]) -> float:
    """The coarsest step of ``STEPS`` that every one of ``values`` is a multiple of (the
    step the old file writes its points in); hundredths when none is."""
    seen = [v for v in values if v > 0]
    return next((s for s in STEPS if all(_multiple(v, s) for v in seen)), STEPS[-1])


def file_step(data: object) -> float:
    """``own_step`` of every points value of an old rubric file (``points``,
    ``max_points``, ``total_points`` at any depth)."""
    found: list[float] = []

    def walk(x: object) -> None:
        if isinstance(x, dict):
            for k, v in x.items():
                if k in ("points", "max_points", "total_points") and isinstance(
                        v, int | float) and not isinstance(v, bool):
                    found.append(float(v))
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(data)
    return own_step(found)


@dataclass(frozen=True, slots=True)
class Shares:
    """Points shared out: one per part, and how they were rounded."""

    points: list[float]
    step: float  # the step they are multiples of
    scaled: bool  # False when the parts added up already (kept as they are)
    even: bool = True  # equal parts got equal points (False only at the last resort)

    def words(self, own: float, target: float) -> str:
        """How the shares were rounded, for the report ("" when nothing was scaled)."""
        if not self.scaled:
            return ""
        shown = ", ".join(f"{p:g}" for p in dict.fromkeys(self.points))
        if not self.even:
            return (f"rounded to {step_words(self.step)} ({shown}): its equal parts cannot "
                    f"share {target:g} points equally, so they differ by up to a hundredth")
        if self.step == own:
            return (f"rounded to {step_words(self.step)} ({shown}), as the old rubric writes "
                    "its points")
        return (f"rounded to {step_words(self.step)} ({shown}): {step_words(own)}, the old "
                f"rubric's step, cannot share {target:g} points in proportion")


def _ideal(raw: Sequence[float], target: float) -> list[float]:
    total = sum(raw)
    if total <= 0:
        return [target / len(raw)] * len(raw)
    return [p * target / total for p in raw]


def _at_step(raw: Sequence[float], ideal: Sequence[float], step: float,
             target: float) -> list[float] | None:
    """Largest remainders at ``step``, a whole group of equal parts at a time; None when
    that cannot add up to ``target`` or keeps neither order nor a positive share."""
    if not _multiple(target, step):
        return None
    units = round(target / step)
    q = [x / step for x in ideal]
    base = [math.floor(x + _EPS) for x in q]
    left = units - sum(base)
    groups: dict[float, list[int]] = {}
    for i, p in enumerate(raw):
        groups.setdefault(round(p, 9), []).append(i)
    for members in sorted(groups.values(), key=lambda m: q[m[0]] - base[m[0]], reverse=True):
        if left >= len(members) and q[members[0]] - base[members[0]] > _EPS:
            for i in members:
                base[i] += 1
            left -= len(members)
    if left != 0:
        return None
    out = [round(b * step, 6) for b in base]
    for i, j in ((i, j) for i in range(len(raw)) for j in range(len(raw))):
        if raw[i] > raw[j] + _EPS and out[i] <= out[j]:
            return None
    if any(o <= 0 < p for o, p in zip(out, raw, strict=True)):
        return None
    return out


def _hundredths(ideal: Sequence[float], target: float) -> list[float]:
    """The last resort: hundredths by largest remainder, part by part; a whole that is no
    multiple of a hundredth (9.375) leaves the rest to its last part, so the sum is exact."""
    q = [x * 100 for x in ideal]
    base = [math.floor(x + _EPS) for x in q]
    order = sorted(range(len(q)), key=lambda i: (-(q[i] - base[i]), i))
    for i in order[:max(0, math.floor(target * 100 + 1e-6) - sum(base))]:
        base[i] += 1
    out = [round(b / 100, 6) for b in base]
    out[-1] = round(target - sum(out[:-1]), 6)
    return out


def apportion(raw: Sequence[float], target: float, step: float) -> Shares:
    """``raw`` points shared out in proportion to add up to ``target``, at ``step`` (the
    old rubric's own, ``own_step``) or the next finer step that keeps equal parts equal,
    larger parts larger and every part above 0 (see the module)."""
    if not raw:
        return Shares([], step, False)
    if sum(raw) > 0 and abs(sum(raw) - target) < 1e-6:
        return Shares(list(raw), step, False)
    ideal = _ideal(raw, target)
    for s in (s for s in STEPS if s <= step + _EPS):
        if (shares := _at_step(raw, ideal, s, target)) is not None:
            return Shares(shares, s, True)
    shares = _hundredths(ideal, target)
    even = all(shares[i] == shares[j] for i in range(len(raw)) for j in range(len(raw))
               if abs(raw[i] - raw[j]) < _EPS)
    return Shares(shares, STEPS[-1], True, even)
