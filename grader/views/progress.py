"""A live board of a grading job: per notebook, each layer's state and the models' text.

The pipeline's events (grader.events) are folded into a ``ProgressBoard`` as
they happen, from whatever thread sends them; a page takes ``snapshot()``s and
draws them. The board lives as long as the job, so a page that is redrawn
half-way (a rerun, another tab) picks up where the job is.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace

from ..events import GradeEvent, describe

LAYERS = ("L1", "L2", "L3", "L4")
STREAM_CHARS = 600  # the tail of each model's text kept for display


@dataclass(slots=True)
class NotebookProgress:
    file: str
    state: str = "waiting"  # waiting | grading | graded | error
    layers: dict[str, str] = field(default_factory=dict)  # layer -> "0.4 s" / "failed: ..."
    score: str = ""
    streams: dict[str, str] = field(default_factory=dict)  # layer -> tail of the text
    tokens: dict[str, int] = field(default_factory=dict)  # layer -> pieces decoded


@dataclass(frozen=True, slots=True)
class BoardSnapshot:
    total: int
    done: int
    notebooks: tuple[NotebookProgress, ...]
    log: tuple[str, ...]
    version: int
    models: bool = True  # whether L3 and L4 run in this job

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 0.0

    def rows(self, hide_names: bool = False) -> list[dict[str, str]]:
        """A row per notebook, each layer's state in words ("done in 0.4 s", "running",
        "writing: 57 tokens", "failed: ..."); ``hide_names`` shows "notebook 1", ... in
        place of the uploaded file names (which often carry the student's name)."""
        return [{"notebook": f"notebook {i}" if hide_names else n.file,
                 "state": STATE_WORDS.get(n.state, n.state),
                 **{LAYER_TITLES[layer]: layer_words(n, layer, self.models)
                    for layer in LAYERS},
                 "score": n.score}
                for i, n in enumerate(self.notebooks, 1)]

    def current(self) -> NotebookProgress | None:
        """The notebook whose models are writing now (the last one started)."""
        grading = [n for n in self.notebooks if n.state == "grading"]
        return grading[-1] if grading else None

    def headline(self, hide_names: bool = False) -> str:
        """One sentence on what is happening now, for under the progress bar."""
        grading = [(i, n) for i, n in enumerate(self.notebooks, 1) if n.state == "grading"]
        if not grading:
            if self.total and self.done >= self.total:
                return f"All {self.total} notebooks graded."
            return "Reading the uploaded files..." if not self.total else \
                "Waiting for the next notebook..."
        parts = []
        for i, n in grading:
            name = f"notebook {i}" if hide_names else n.file
            doing = [_doing(layer, layer_words(n, layer, self.models)) for layer in LAYERS]
            doing = [d for d in doing if d]
            parts.append(f"{name}: " + ("; ".join(doing) if doing else "starting"))
        return " | ".join(parts)


def _doing(layer: str, state: str) -> str:
    """What a running layer does, as a phrase of the headline ("" when it is not running)."""
    if state == "running":
        return {"L1": "checking the structure", "L2": "running the notebook in the sandbox",
                "L3": "the code model is reading", "L4": "the feedback model is reading"}[layer]
    if state.startswith("writing"):
        return f"the {'code' if layer == 'L3' else 'feedback'} model is {state}"
    return ""


STATE_WORDS = {"waiting": "waiting", "grading": "grading", "graded": "graded",
               "error": "not graded"}
LAYER_TITLES = {"L1": "Structure (L1)", "L2": "Run in the sandbox (L2)",
                "L3": "Code analysis (L3)", "L4": "Written feedback (L4)"}


def layer_words(n: NotebookProgress, layer: str, models: bool = True) -> str:
    """A layer's state for one notebook, in words. Layers run L1, L2, then L3 and L4 side
    by side; a layer with no outcome yet is "running" when the one before it ended (L3
    and L4: "writing" once their model's text arrives), and "not run" once the notebook
    is done without it (the file could not be read); L3 and L4 are "off" in a job without
    the models."""
    if layer in n.layers:
        return n.layers[layer]
    if layer in ("L3", "L4") and not models:
        return "off"
    if n.state in ("graded", "error"):
        return "not run"
    if n.state != "grading":
        return ""
    if n.tokens.get(layer):
        return f"writing ({n.tokens[layer]} tokens)"
    before = {"L1": None, "L2": "L1", "L3": "L2", "L4": "L2"}[layer]
    if before is None or before in n.layers:
        return "running"
    return "waiting"


class ProgressBoard:
    def __init__(self, log_lines: int = 200, models: bool = True) -> None:
        self._models = models
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
        with self._lock:
            self._version += 1
            nb = self._notebooks.setdefault(ev.file, NotebookProgress(ev.file))
            if ev.kind == "start":
                nb.state = "grading"
            elif ev.kind == "tokens":
                tail = nb.streams.get(ev.layer, "") + ev.text
                nb.streams[ev.layer] = tail[-STREAM_CHARS:]
                nb.tokens[ev.layer] = nb.tokens.get(ev.layer, 0) + 1
                return  # tokens are not log lines
            elif ev.kind == "layer":
                nb.layers[ev.layer] = (f"failed: {ev.text}" if ev.error
                                       else f"done in {ev.seconds:.1f} s")
            elif ev.kind == "done" and ev.report is not None:
                r = ev.report
                nb.state = "graded" if r.status == "graded" else "error"
                nb.score = (f"{round(r.score, 1):g} / {r.max_score:g}"
                            if r.score is not None else f"not graded: {r.error}")
            self._log.append(describe(ev))
            del self._log[:-self._log_lines]

    def snapshot(self) -> BoardSnapshot:
        with self._lock:
            notebooks = tuple(replace(n, layers=dict(n.layers), streams=dict(n.streams),
                                      tokens=dict(n.tokens))
                              for n in self._notebooks.values())
            done = sum(n.state in ("graded", "error") for n in notebooks)
            return BoardSnapshot(self._total, done, notebooks, tuple(self._log), self._version,
                                 self._models)
