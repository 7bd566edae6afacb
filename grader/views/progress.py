"""A live board of a grading job: per notebook, each layer's state and the models' text.

The pipeline's events (grader.events) are folded into a ``ProgressBoard`` as
they happen, from whatever thread sends them; a page takes ``snapshot()``s and
draws them. The board lives as long as the job, so a page that is redrawn
half-way (a rerun, another tab) picks up where the job is.

The pipeline reports the model layers (L3, L4) once both have ended, so a model whose
reply is written while the other still writes would look busy for minutes. The board
is therefore also told when model replies end (``replies``: the client's request
history), and says "replied" for a layer whose reply ended after its last token. The
estimate of the time left comes from the measured speed only (``BoardSnapshot.estimate``):
before a notebook has finished it says so instead of guessing. A notebook whose stored
grade the batch reuses (graded before with this rubric) is done from the start: counted
in ``done`` and ``reused``, never in the measured speed nor in the time left.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from ..events import GradeEvent, describe
from ..exports.formats import points_text
from .model_state import MODELS_OFF, WHY_NOT_RUN

LAYERS = ("L1", "L2", "L3", "L4")
STREAM_CHARS = 600  # the tail of each model's text kept for display
NOT_RUN = "not run: "  # a model layer's event text when it did not run (and why)
MOVED = " (moved by a model trusted to judge)"  # after a score the models moved
QUIET_S = 10.0  # a model silent this long while writing: said, with how long
# (layer, when it ended): model replies that ended lately, e.g. from the client's history
Replies = Callable[[], Sequence[tuple[str, float]]]


@dataclass(slots=True)
class NotebookProgress:
    file: str
    state: str = "waiting"  # waiting | grading | graded | error | before (stored grade)
    layers: dict[str, str] = field(default_factory=dict)  # layer -> "0.4 s" / "failed: ..."
    score: str = ""
    streams: dict[str, str] = field(default_factory=dict)  # layer -> tail of the text
    tokens: dict[str, int] = field(default_factory=dict)  # layer -> pieces decoded
    started: float = 0.0  # clock time of its start event (0: not started here)
    ended: float = 0.0  # clock time of its done event
    last_token: dict[str, float] = field(default_factory=dict)  # layer -> clock time
    replied: set[str] = field(default_factory=set)  # model layers whose reply has ended
    # grades first, models after: "" (none in this job), "queued", "running", "done",
    # "failed", or "not run: why" (the grade says)
    models: str = ""
    sent: set[str] = field(default_factory=set)  # model layers whose request is in flight
    asked: bool = False  # a request of its model part was sent (one with nothing to send
    # ends at once: it tells nothing of how long the others take)
    model_started: float = 0.0
    model_ended: float = 0.0


def duration(seconds: float) -> str:
    """45 s, 4 min 50 s, 1 h 5 min."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s" if s % 60 else f"{s // 60} min"
    return f"{s // 3600} h {s % 3600 // 60} min"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


@dataclass(frozen=True, slots=True)
class BoardSnapshot:
    total: int
    done: int
    notebooks: tuple[NotebookProgress, ...]
    log: tuple[str, ...]
    version: int
    models: bool = True  # whether L3 and L4 run in this job
    at: float = 0.0  # the board's clock when the snapshot was taken
    reused: int = 0  # of ``done``: notebooks graded before, their stored grades reused
    model_workers: int = 2  # model parts made at once (the queue's workers)

    def model_rows(self, hide_names: bool = False) -> list[dict[str, str]]:
        """A row per notebook whose models' notes this job waits for or made: its score
        and what each model layer does, in words."""
        return [{"notebook": f"notebook {i}" if hide_names else n.file, "score": n.score,
                 **{LAYER_TITLES[layer]: layer_words(n, layer, self.models, self.at)
                    for layer in ("L3", "L4")}}
                for i, n in enumerate(self.notebooks, 1) if n.models]

    def model_counts(self) -> tuple[int, int]:
        """(model parts ended, model parts of this job): queued, running or ended."""
        parts = [n for n in self.notebooks if n.models]
        return sum(n.models in ("done", "failed") for n in parts), len(parts)

    def progress_words(self) -> str:
        """"6 of 6 graded · model notes 2 of 6 (about 4 min left)": the grades and, after
        them, the models' notes, each with what is left."""
        done, total = self.model_counts()
        if not total:
            return self.counts()
        text = f"{self.counts()} · model notes {done} of {total}"
        if done < total:
            text += f" ({self.models_left()})"
        return text

    def models_left(self) -> str:
        """The models' time left, from the parts that ended in this job after asking a
        model something (their median), the part running now counted from its start; ""
        once all ended."""
        parts = [n for n in self.notebooks if n.models]
        ended = sorted(n.model_ended - n.model_started for n in parts
                       if n.models == "done" and n.asked and n.model_started and n.model_ended)
        left = [n for n in parts if n.models in ("queued", "running")]
        if not left:
            return ""
        if not ended:
            return "no estimate before the first ends"
        per = ended[len(ended) // 2]
        running = sum(max(0.0, per - (self.at - n.model_started)) for n in left
                      if n.models == "running" and n.model_started)
        queued = sum(n.models == "queued" for n in left)
        seconds = (running + per * queued) / max(1, self.model_workers)
        return f"about {duration(seconds)} left"

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 0.0

    def counts(self) -> str:
        """The progress bar's words: "2 of 8 notebooks graded", and with notebooks graded
        before, "6 of 8 notebooks done (5 graded before with this rubric, 1 graded now)"."""
        total = self.total or "?"
        if not self.reused:
            return f"{self.done} of {total} notebooks graded"
        return (f"{self.done} of {total} notebooks done ({self.reused} graded before with "
                f"this rubric, {self.done - self.reused} graded now)")

    def rows(self, hide_names: bool = False) -> list[dict[str, str]]:
        """A row per notebook, each layer's state in words ("done in 0.4 s", "running",
        "writing (57 tokens)", "replied (210 tokens)", "failed: ..."); ``hide_names``
        shows "notebook 1", ... in place of the uploaded file names (which often carry
        the student's name). The score comes before the layers: in view on a laptop's
        screen, where the table's last columns are scrolled to."""
        return [{"notebook": f"notebook {i}" if hide_names else n.file,
                 "state": STATE_WORDS.get(n.state, n.state), "score": n.score,
                 **{LAYER_TITLES[layer]: layer_words(n, layer, self.models, self.at)
                    for layer in LAYERS}}
                for i, n in enumerate(self.notebooks, 1)]

    def current(self) -> NotebookProgress | None:
        """The notebook whose models are writing now (the last one started)."""
        grading = [n for n in self.notebooks if n.models == "running"] or [
            n for n in self.notebooks if n.state == "grading"]
        return grading[-1] if grading else None

    def headline(self, hide_names: bool = False) -> str:
        """One sentence on what is happening now, for under the progress bar: per notebook
        being graded, how long it has run, what runs now and what has ended."""
        grading = [(i, n) for i, n in enumerate(self.notebooks, 1)
                   if n.state == "grading" or n.models == "running"]
        if not grading:
            if self.total and self.done >= self.total:
                done, total = self.model_counts()
                if done < total:
                    return (f"All {self.total} notebooks graded; the models' notes of "
                            f"{total - done} wait for their turn.")
                return f"All {self.total} notebooks graded."
            return "Reading the uploaded files..." if not self.total else \
                "Waiting for the next notebook..."
        parts = []
        for i, n in grading:
            name = f"notebook {i}" if hide_names else n.file
            if n.started and self.at:
                name += f" ({duration(self.at - n.started)})"
            doing = [_doing(layer, layer_words(n, layer, self.models, self.at))
                     for layer in LAYERS]
            doing = [d for d in doing if d]
            parts.append(f"{name}: " + ("; ".join(doing) if doing else "starting"))
        return " | ".join(parts)

    def estimate(self) -> str:
        """The time left, from the speed measured in this job: the time since the first
        notebook started over the notebooks graded since, times the notebooks still to
        grade (those graded before count in neither), less what the notebooks running now
        have done already. Before any has finished, how long the first has run and what of
        it is done (no number is made up)."""
        if not self.total or self.done >= self.total:
            return ""
        started = [n.started for n in self.notebooks if n.started]
        finished = [n for n in self.notebooks if n.started and n.ended]
        if not started or not self.at:
            return "No estimate yet: no notebook has started."
        elapsed = self.at - min(started)
        if not finished:
            first = min((n for n in self.notebooks if n.started), key=lambda n: n.started)
            ended = [LAYER_TITLES[layer] for layer in LAYERS if layer in first.layers
                     or layer in first.replied]
            so_far = f" ({', '.join(ended)} done)" if ended else ""
            n = self.total - self.reused  # those graded before are done already
            to_grade = f"{_plural(n, 'notebook')} to grade" if self.reused else f"{n} notebooks"
            return (f"No estimate yet: none of the {to_grade} has finished; the first has "
                    f"run for {duration(elapsed)}{so_far}.")
        per = elapsed / len(finished)
        left = self.total - self.done  # those graded before are done from the start
        # a notebook running now is that far along: its time so far over a notebook's own
        # time (the median of those graded), at most nine tenths done
        own = sorted(n.ended - n.started for n in finished)[len(finished) // 2]
        along = sum(min(0.9, (self.at - n.started) / own) for n in self.notebooks
                    if n.state == "grading" and n.started and own > 0)
        return (f"About {duration(per * max(0.0, left - along))} left for "
                f"{_plural(left, 'notebook')}: {duration(per)} per notebook, measured on the "
                f"{_plural(len(finished), 'notebook')} graded so far.")


def _doing(layer: str, state: str) -> str:
    """What a running layer does, as a phrase of the headline ("" when it is not running
    and has not just replied)."""
    model = "code" if layer == "L3" else "feedback"
    if state == "running":
        return {"L1": "checking the structure", "L2": "running the notebook in the sandbox"
                }.get(layer, "")
    if state == "reading":
        return f"the {model} model is reading"
    if state.startswith("writing"):
        return f"the {model} model is {state}"
    if state.startswith("replied"):
        return f"the {model} model has {state}"
    return ""


STATE_WORDS = {"waiting": "waiting", "grading": "grading", "graded": "graded",
               "error": "not graded", "before": "graded before"}
LAYER_TITLES = {"L1": "Structure (L1)", "L2": "Run in the sandbox (L2)",
                "L3": "Code analysis (L3)", "L4": "Written feedback (L4)"}


def layer_words(n: NotebookProgress, layer: str, models: bool = True,
                now: float = 0.0) -> str:
    """A layer's state for one notebook, in words, true at the moment it is read. Layers
    run L1, L2, then (grades first, models after) L3 and L4 side by side, once the grade
    is stored: "queued" until their turn; "preparing" while their prompts are built;
    "reading" only while a request of theirs is in flight and nothing is written yet;
    "writing" once text arrives, "replied" once the reply ended, then their outcome. A
    layer that did not run says why (the grade's record); L3 and L4 are "off" only in a
    job without the models. With ``now``, a model silent for ``QUIET_S`` says for how
    long."""
    if layer in n.layers:
        text = n.layers[layer]
        if text.startswith(NOT_RUN):
            code = text[len(NOT_RUN):]
            return "off" if code == MODELS_OFF else f"not run: {WHY_NOT_RUN.get(code, code)}"
        return text
    if n.state == "before":
        return "stored"
    if layer in ("L3", "L4"):
        return _model_words(n, layer, models, now)
    if n.state in ("graded", "error"):
        return "not run"
    if n.state != "grading":
        return ""
    before = {"L1": None, "L2": "L1"}[layer]
    if before is None or before in n.layers:
        return "running"
    return "waiting"


def _model_words(n: NotebookProgress, layer: str, models: bool, now: float) -> str:
    if not models:
        return "off"
    if n.models == "queued":
        return "queued after the grades"
    if n.models != "running":
        return "not run" if n.state in ("graded", "error") else ""
    if layer in n.replied:
        return f"replied ({_plural(n.tokens.get(layer, 0), 'token')})"
    if n.tokens.get(layer):
        quiet = now - n.last_token.get(layer, now) if now else 0.0
        silent = f"; none for {duration(quiet)}" if quiet >= QUIET_S else ""
        return f"writing ({_plural(n.tokens[layer], 'token')}{silent})"
    return "reading" if layer in n.sent else "preparing"


class ProgressBoard:
    def __init__(self, log_lines: int = 200, models: bool = True,
                 replies: Replies | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        """``replies``: the model replies that ended lately, as (layer, clock time) pairs;
        ``clock``: the time of events (the same clock as ``replies``')."""
        self._models = models
        self._replies = replies
        self._clock = clock
        self._lock = threading.Lock()
        self._total = 0
        self._notebooks: dict[str, NotebookProgress] = {}
        self._log: list[str] = []
        self._log_lines = log_lines
        self._version = 0

    def set_total(self, total: int) -> None:
        with self._lock:
            self._total = total
            self._version += 1

    def apply(self, ev: GradeEvent) -> None:
        now = self._clock()
        with self._lock:
            self._version += 1
            nb = self._notebooks.setdefault(ev.file, NotebookProgress(ev.file))
            if ev.kind == "start":
                nb.state = "grading"
                nb.started = now
            elif ev.kind == "tokens":
                tail = nb.streams.get(ev.layer, "") + ev.text
                nb.streams[ev.layer] = tail[-STREAM_CHARS:]
                nb.tokens[ev.layer] = nb.tokens.get(ev.layer, 0) + 1
                nb.last_token[ev.layer] = now
                nb.replied.discard(ev.layer)  # writing again (a repair, a second request)
                return  # tokens are not log lines
            elif ev.kind == "reused" and ev.report is not None:  # done from the start
                nb.state = "before"
                r = ev.report
                nb.score = (points_text(r.score, r.max_score)
                            if r.score is not None else f"not graded: {r.error}")
            elif ev.kind == "layer":
                nb.layers[ev.layer] = (f"failed: {ev.text}" if ev.error else
                                       ev.text if ev.text.startswith(NOT_RUN)
                                       else f"done in {ev.seconds:.1f} s")
                nb.sent.discard(ev.layer)
            elif ev.kind == "done" and ev.report is not None:
                r = ev.report
                nb.state = "graded" if r.status == "graded" else "error"
                nb.ended = now if nb.started else 0.0
                nb.score = (points_text(r.score, r.max_score)
                            if r.score is not None else f"not graded: {r.error}")
                nb.models = "queued" if r.status == "graded" and any(
                    lr.details.get("pending") for lr in r.layers.values()) else ""
                for name in ("L3", "L4"):  # a model layer that will not run: why, now
                    why = r.layers[name].details.get("not_run") if name in r.layers else None
                    if why:
                        nb.layers[name] = f"{NOT_RUN}{why}"
            elif ev.kind == "models":
                nb.models, nb.model_started = "running", now
            elif ev.kind == "sent":
                nb.sent.add(ev.layer)
                nb.asked = True
            elif ev.kind == "models_done" and ev.report is not None:
                r = ev.report
                nb.models, nb.model_ended = "done", now
                nb.sent.clear()
                moved = points_text(r.score, r.max_score) if r.score is not None else ""
                if moved and moved != nb.score:
                    nb.score = f"{moved}{MOVED}"
            self._log.append(describe(ev))
            del self._log[:-self._log_lines]

    def _mark_replies(self) -> None:
        """Mark the model layers whose reply ended after their last token (under the
        lock). A reply ends after its last token is sent, so one that ended since then
        is this layer's (with several notebooks at once, the next token undoes a wrong
        guess)."""
        if self._replies is None:
            return
        writing = [(nb, layer) for nb in self._notebooks.values()
                   if nb.state == "grading" or nb.models == "running"
                   for layer in ("L3", "L4")
                   if layer in nb.last_token and layer not in nb.layers
                   and layer not in nb.replied]
        if not writing:
            return
        ended = list(self._replies())
        for nb, layer in writing:
            if any(lay == layer and at >= nb.last_token[layer] for lay, at in ended):
                nb.replied.add(layer)
                self._version += 1

    def snapshot(self) -> BoardSnapshot:
        with self._lock:
            self._mark_replies()
            notebooks = tuple(replace(n, layers=dict(n.layers), streams=dict(n.streams),
                                      tokens=dict(n.tokens), last_token=dict(n.last_token),
                                      replied=set(n.replied))
                              for n in self._notebooks.values())
            done = sum(n.state in ("graded", "error", "before") for n in notebooks)
            reused = sum(n.state == "before" for n in notebooks)
            return BoardSnapshot(self._total, done, notebooks, tuple(self._log), self._version,
                                 self._models, self._clock(), reused)
