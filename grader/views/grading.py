"""The grading itself, read from the grade store for the Dashboard: how many notebooks
are graded per minute, how long each layer takes per notebook, which files failed and
why, and what is queued now.

Rates are honest about idle time. A notebook counts when its batch item is marked
done (with its grade, in the same transaction; a file that could not be read is
graded "error" and counts too, items that failed before grading do not). A batch's
wall time runs from its start to its last notebook graded, or to now while it runs;
a rate over several batches divides their notebooks by the union of their wall
times, so the hours between two batches count for nothing and two batches graded
side by side are not counted twice. The store records no resume time, so a batch resumed after an
interruption counts the pause too. Batches graded with the model layers (L3, L4) and
without them ("checks only") run at rates minutes apart, so each rate is also given per
mode (a batch's mode is its graded notebooks': one that ran a model layer, even one that
failed, makes it "with models"). Layer seconds are the reports' own: each layer's
``seconds`` (L2: the run in the sandbox, its set-up included) and, for the model
layers, which leave ``seconds`` at 0, the engine-measured ``details.total_s``.
Nothing is estimated; where there is nothing to measure the value is None, never 0.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..store.batch_owner import Owner, current_owner
from ..store.database import Store
from ..store.db_schema import anonymous_file
from .progress import LAYER_TITLES, LAYERS

__all__ = ["CHECKS", "MODELS", "MODES", "MODE_WORDS", "BatchStats", "FailedFile",
           "GradingView", "LayerSummary", "MetricCard", "Rate", "batch_rows", "busy_seconds",
           "failed_rows", "grading_view", "layer_rows", "metric_cards", "queue_rows"]

log = logging.getLogger(__name__)

WINDOW_S = 600.0  # the "recent" rate: the last ten minutes
BATCHES = 10  # the last batches shown and rated together
GRADES = 50  # the newest grades whose layer seconds are summarised
FAILURES = 50  # the newest failed files listed
MODELS, CHECKS = "with models", "checks only"
MODES = (CHECKS, MODELS)
MODE_WORDS = {MODELS: "with models (L3, L4)", CHECKS: "checks only (no models)"}

_BATCH_SQL = """SELECT b.id, a.name,
  CASE WHEN b.status = 'running' AND b.interrupted_at IS NOT NULL THEN 'interrupted'
    ELSE b.status END,
  b.created_at, COUNT(i.id), COALESCE(SUM(i.status = 'done'), 0),
  COALESCE(SUM(i.status = 'error'), 0), COALESCE(SUM(i.status = 'pending'), 0),
  MAX(CASE WHEN i.status = 'done' THEN i.updated_at END), b.owner,
  (SELECT (json_type(g.report_json, '$.layers.L3') IS NOT NULL
           AND json_type(g.report_json, '$.layers.L3.details.not_run') IS NULL)
     OR (json_type(g.report_json, '$.layers.L4') IS NOT NULL
         AND json_type(g.report_json, '$.layers.L4.details.not_run') IS NULL)
   FROM batch_items j JOIN grades g ON g.id = j.grade_id
   WHERE j.batch_id = b.id AND j.status = 'done' AND g.status = 'graded' LIMIT 1)
FROM batches b JOIN assignments a ON a.id = b.assignment_id
LEFT JOIN batch_items i ON i.batch_id = b.id"""
_LAYER_PATHS = [f"$.layers.{layer}.{key}" for layer in LAYERS
                for key in ("seconds", "details.total_s")]
_LAYER_SQL = f"""SELECT json_extract(report_json, {", ".join(f"'{p}'" for p in _LAYER_PATHS)})
FROM grades WHERE status = 'graded' ORDER BY created_at DESC, id DESC LIMIT ?"""
# Reports that could not be graded, and batch items that failed before grading; the
# item's pseudonym is its submission's, when the file became one.
_FAILED_SQL = """SELECT g.created_at, a.name, s.assignment_id, s.file, s.pseudonym,
  json_extract(g.report_json, '$.error'), g.id, NULL, NULL
FROM grades g JOIN submissions s ON s.id = g.submission_id
JOIN assignments a ON a.id = s.assignment_id WHERE g.status = 'error'
UNION ALL
SELECT i.updated_at, a.name, b.assignment_id, i.file,
  (SELECT pseudonym FROM submissions WHERE assignment_id = b.assignment_id AND
   sha256 = i.sha256 AND student_id = i.student_id), i.error, NULL, b.id, i.id
FROM batch_items i JOIN batches b ON b.id = i.batch_id
JOIN assignments a ON a.id = b.assignment_id WHERE i.status = 'error'
ORDER BY 1 DESC LIMIT ?"""


@dataclass(frozen=True, slots=True)
class Rate:
    """Notebooks over the seconds spent grading them."""

    notebooks: int
    seconds: float

    @property
    def per_minute(self) -> float | None:
        return 60.0 * self.notebooks / self.seconds if self.seconds > 0 else None


@dataclass(frozen=True, slots=True)
class BatchStats:
    id: int
    assignment: str
    status: str  # running | interrupted | done
    started_at: float
    last_at: float | None  # its last notebook graded; None before the first
    total: int
    done: int  # graded (a report saved, an unreadable notebook's included)
    failed: int  # items that failed before grading
    pending: int
    grader: str  # "this process", or the pid and host of the one that grades it
    end_at: float | None  # the end of its wall time: now while it runs, else last_at
    mode: str | None = None  # MODELS or CHECKS; None before a notebook is graded

    @property
    def rate(self) -> Rate:
        return Rate(self.done, _span(self.started_at, self.end_at))

    @property
    def mode_words(self) -> str:
        return MODE_WORDS.get(self.mode or "", "none graded yet")

    def queue_row(self) -> dict[str, Any]:
        rate = self.rate
        return {"batch": self.id, "assignment": self.assignment, "models": self.mode_words,
                "started": _clock(self.started_at), "done": self.done,
                "failed": self.failed, "pending": self.pending, "total": self.total,
                "running for (s)": _round(rate.seconds, 0),
                "notebooks / min": _round(rate.per_minute, 2), "grader": self.grader}

    def row(self) -> dict[str, Any]:
        rate = self.rate
        return {"batch": self.id, "assignment": self.assignment, "models": self.mode_words,
                "state": self.status, "started": _clock(self.started_at), "total": self.total,
                "done": self.done, "failed": self.failed, "pending": self.pending,
                "wall (s)": _round(rate.seconds if self.end_at else None, 1),
                "notebooks / min": _round(rate.per_minute, 2), "grader": self.grader}


@dataclass(frozen=True, slots=True)
class LayerSummary:
    """A layer's seconds per notebook over the newest grades that ran it."""

    layer: str
    notebooks: int
    median: float
    p90: float
    max: float

    def row(self) -> dict[str, Any]:
        return {"layer": LAYER_TITLES.get(self.layer, self.layer), "notebooks": self.notebooks,
                "median (s)": round(self.median, 2), "p90 (s)": round(self.p90, 2),
                "max (s)": round(self.max, 2)}


@dataclass(frozen=True, slots=True)
class FailedFile:
    at: float
    assignment: str
    file: str  # with names hidden, the pseudonym's (or the item's number)
    reason: str  # with names hidden, the file name in it replaced as well
    grade_id: int | None  # a report that could not be graded
    batch_id: int | None  # a batch item that failed before grading

    def row(self) -> dict[str, Any]:
        where = f"grade {self.grade_id}" if self.grade_id is not None \
            else f"batch {self.batch_id}"
        return {"time": _clock(self.at), "assignment": self.assignment, "file": self.file,
                "recorded as": where, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class GradingView:
    grades: int  # in the store, all told
    recent: Rate  # notebooks graded in the last ``window_s`` over grading time in it
    window_s: float
    batches: list[BatchStats]  # the last ones with notebooks, newest first
    overall: Rate  # those batches together
    layers: list[LayerSummary]  # L1..L4, those that ran
    failed: list[FailedFile]  # newest first
    running: list[BatchStats]  # batches being graded now, oldest first
    interrupted: int  # batches stopped with notebooks left (resumable on the Grade page)
    recent_by_mode: dict[str, Rate] = field(default_factory=dict)  # the modes graded in it
    overall_by_mode: dict[str, Rate] = field(default_factory=dict)  # the modes of ``batches``

    @property
    def empty(self) -> bool:
        return not self.grades and not self.batches and not self.running and not self.failed

    def layer(self, name: str) -> LayerSummary | None:
        return next((s for s in self.layers if s.layer == name), None)


@dataclass(frozen=True, slots=True)
class MetricCard:
    label: str
    value: str
    help: str
    note: str = ""  # under the value: what it is of ("checks only (no models)")


def _per_minute(rate: Rate, none: str) -> str:
    return none if rate.per_minute is None else f"{rate.per_minute:.2f}"


def _rate_cards(label: str, total: Rate, by_mode: dict[str, Rate], none: str,
                help_: str) -> list[MetricCard]:
    """One card per mode when both were graded, else one card; each names its mode under
    the value: a rate over batches with and without models together would mean nothing."""
    modes = [m for m in MODES if m in by_mode]
    if len(modes) < 2:
        return [MetricCard(label, _per_minute(total, none), help_,
                           MODE_WORDS[modes[0]] if modes else "")]
    return [MetricCard(label, _per_minute(by_mode[m], none),
                       f"{help_} Only the batches graded {MODE_WORDS[m]}.", MODE_WORDS[m])
            for m in modes]


def metric_cards(view: GradingView) -> list[MetricCard]:
    """The section's headline numbers, in words where there is nothing to measure; the
    rates per mode (with models, checks only) when both were graded."""
    sandbox = view.layer("L2")
    minutes = f"{view.window_s / 60:g}"
    n = len(view.batches)
    last = f"last {n} batch{'' if n == 1 else 'es'}" if n else "last batches"
    return [
        *_rate_cards(f"Notebooks / min, last {minutes} min", view.recent, view.recent_by_mode,
                     "none graded",
                     f"Notebooks graded in the last {minutes} minutes over the time batches "
                     "were grading in them: idle time between batches is left out."),
        *_rate_cards(f"Notebooks / min, {last}", view.overall, view.overall_by_mode,
                     "no batches yet",
                     "Their notebooks over their wall time, each from its start to its last "
                     "grade (to now while it runs); batches side by side count once."),
        MetricCard("Sandbox s, median",
                   "no runs yet" if sandbox is None else f"{sandbox.median:.1f} s",
                   "Seconds per notebook in layer L2 (the run in the sandbox, set-up "
                   "included), the median over the newest "
                   + (f"{sandbox.notebooks} graded notebooks." if sandbox
                      else "graded notebooks: none ran it yet.")),
        MetricCard("Sandbox s, p90",
                   "no runs yet" if sandbox is None else f"{sandbox.p90:.1f} s",
                   "Nine notebooks in ten ran in the sandbox for at most this long."),
    ]


def _clock(at: float | None) -> str:
    return datetime.fromtimestamp(at).strftime("%Y-%m-%d %H:%M:%S") if at else ""


def _round(x: float | None, digits: int) -> float | None:
    return None if x is None else round(x, digits)


def _span(start: float, end: float | None) -> float:
    return max(0.0, end - start) if end is not None else 0.0


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


def _percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, interpolated between the nearest two."""
    s = sorted(values)
    k = (len(s) - 1) * q
    lo = math.floor(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def busy_seconds(intervals: Iterable[tuple[float, float]], since: float | None = None,
                 until: float | None = None) -> float:
    """The length of the union of ``intervals``, clipped to [since, until]."""
    clipped = sorted((max(a, since if since is not None else a),
                      min(b, until if until is not None else b)) for a, b in intervals)
    total, end = 0.0, -math.inf
    for a, b in clipped:
        if b <= a or b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def _grader(owner_json: str, me: Owner) -> str:
    owner = Owner.from_json(owner_json)
    if owner is None:
        return "unknown"
    return "this process" if owner == me else f"pid {owner.pid} on {owner.host}"


def _batches(store: Store, where: str, args: tuple, now: float) -> list[BatchStats]:
    rows = store._query(f"{_BATCH_SQL} {where}", args, "read the batches' progress")
    me = current_owner()
    out = []
    for bid, name, status, started, total, done, failed, pending, last, owner, models in rows:
        end = now if status == "running" else last
        mode = None if models is None else MODELS if models else CHECKS
        out.append(BatchStats(int(bid), name, status, float(started), last, int(total),
                              int(done), int(failed), int(pending), _grader(owner, me), end,
                              mode))
    return out


def _layers(store: Store, grades: int) -> list[LayerSummary]:
    seconds: dict[str, list[float]] = {layer: [] for layer in LAYERS}
    for (extracted,) in store._query(_LAYER_SQL, (grades,), "read the layers' seconds"):
        values = json.loads(extracted)
        for i, layer in enumerate(LAYERS):
            own, engine = _num(values[2 * i]), _num(values[2 * i + 1])
            s = own if own else engine  # the model layers record the engine's seconds
            if s is not None:
                seconds[layer].append(s)
    return [LayerSummary(layer, len(v), _percentile(v, 0.5), _percentile(v, 0.9), max(v))
            for layer, v in seconds.items() if v]


def _failed(store: Store, limit: int, anonymous: bool) -> list[FailedFile]:
    rows = store._query(_FAILED_SQL, (limit,), "list the failed files")
    if anonymous:
        missing = sorted({r[2] for r in rows if r[4] is None and r[6] is not None})
        for assignment_id in missing:
            store.anonymise(assignment_id)
        if missing:
            rows = store._query(_FAILED_SQL, (limit,), "list the failed files")
    out = []
    for at, assignment, _, file, pseudonym, reason, grade_id, batch_id, item_id in rows:
        reason = str(reason or "")
        if anonymous:
            shown = anonymous_file(pseudonym or f"item {item_id}", file)
            for name in sorted({file, file.rsplit("/", 1)[-1]} - {""}, key=len, reverse=True):
                reason = reason.replace(name, shown)
            file = shown
        out.append(FailedFile(float(at), assignment, file, reason, grade_id, batch_id))
    return out


def grading_view(store: Store, now: float | None = None, anonymous: bool = False,
                 window_s: float = WINDOW_S, batches: int = BATCHES, grades: int = GRADES,
                 failures: int = FAILURES) -> GradingView:
    """What the Dashboard's Grading section shows, as of ``now``. Batches whose grader is
    gone are marked interrupted first (``Store.reap_batches``). ``anonymous`` names failed
    files after their submission's pseudonym (assigned if missing, as
    ``Store.list_grades`` does)."""
    now = time.time() if now is None else now
    store.reap_batches()
    since = now - window_s
    last = _batches(store, "GROUP BY b.id HAVING COUNT(i.id) > 0 ORDER BY b.id DESC LIMIT ?",
                    (batches,), now)
    window = _batches(store, "GROUP BY b.id HAVING MAX(i.updated_at) >= ? OR "
                      "(b.status = 'running' AND b.interrupted_at IS NULL)", (since,), now)
    marked = dict(store._query(
        "SELECT batch_id, COUNT(*) FROM batch_items WHERE status = 'done' AND updated_at >= ? "
        "GROUP BY batch_id", (since,), "count the notebooks graded lately"))

    def recent_rate(batches: list[BatchStats]) -> Rate:
        return Rate(sum(marked.get(b.id, 0) for b in batches), busy_seconds(
            ((b.started_at, b.end_at) for b in batches if b.end_at is not None), since, now))

    def overall_rate(batches: list[BatchStats]) -> Rate:
        return Rate(sum(b.done for b in batches), busy_seconds(
            (b.started_at, b.end_at) for b in batches if b.end_at is not None))

    def by_mode(batches: list[BatchStats], rate: Callable[[list[BatchStats]], Rate],
                graded: Callable[[BatchStats], int]) -> dict[str, Rate]:
        return {m: rate(mine) for m in MODES
                if (mine := [b for b in batches if b.mode == m]) and sum(map(graded, mine))}

    recent = Rate(sum(marked.values()), recent_rate(window).seconds)
    overall = overall_rate(last)
    running = _batches(store, "WHERE b.status = 'running' GROUP BY b.id ORDER BY b.id", (), now)
    (count,) = store._query("SELECT COUNT(*) FROM grades", (), "count the grades")[0]
    view = GradingView(
        int(count), recent, window_s, last, overall, _layers(store, grades),
        _failed(store, failures, anonymous), [b for b in running if b.status == "running"],
        sum(b.status == "interrupted" and b.pending > 0 for b in running),
        by_mode(window, recent_rate, lambda b: marked.get(b.id, 0)),
        by_mode(last, overall_rate, lambda b: b.done))
    log.debug("grading view: %d grades, %d batches, %d running", view.grades,
              len(view.batches), len(view.running))
    return view


def batch_rows(batches: Iterable[BatchStats]) -> list[dict[str, Any]]:
    return [b.row() for b in batches]


def queue_rows(running: Iterable[BatchStats]) -> list[dict[str, Any]]:
    return [b.queue_row() for b in running]


def layer_rows(layers: Iterable[LayerSummary]) -> list[dict[str, Any]]:
    return [s.row() for s in layers]


def failed_rows(failed: Iterable[FailedFile]) -> list[dict[str, Any]]:
    return [f.row() for f in failed]
