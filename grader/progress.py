"""A live board of a grading job: per notebook, each layer's state and the models' text.

The pipeline's events (grader.events) are folded into a ``ProgressBoard`` as
they happen, from whatever thread sends them; a page takes ``snapshot()``s and
draws them. The board lives as long as the job, so a page that is redrawn
half-way (a rerun, another tab) picks up where the job is.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace

from .events import GradeEvent, describe

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

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 0.0

    def rows(self, hide_names: bool = False) -> list[dict[str, str]]:
        """A row per notebook; ``hide_names`` shows "notebook 1", ... in place of the
        uploaded file names (which often carry the student's name)."""
        return [{"notebook": f"notebook {i}" if hide_names else n.file, "state": n.state,
                 **{layer: n.layers.get(layer, "") for layer in LAYERS}, "score": n.score}
                for i, n in enumerate(self.notebooks, 1)]

    def current(self) -> NotebookProgress | None:
        """The notebook whose models are writing now (the last one started)."""
        grading = [n for n in self.notebooks if n.state == "grading"]
        return grading[-1] if grading else None


class ProgressBoard:
    def __init__(self, log_lines: int = 200) -> None:
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
                                       else f"{ev.seconds:.1f} s")
            elif ev.kind == "done" and ev.report is not None:
                r = ev.report
                nb.state = "graded" if r.status == "graded" else "error"
                nb.score = (f"{r.score:g} / {r.max_score:g}" if r.score is not None
                            else f"not graded: {r.error}")
            self._log.append(describe(ev))
            del self._log[:-self._log_lines]

    def snapshot(self) -> BoardSnapshot:
        with self._lock:
            notebooks = tuple(replace(n, layers=dict(n.layers), streams=dict(n.streams),
                                      tokens=dict(n.tokens))
                              for n in self._notebooks.values())
            done = sum(n.state in ("graded", "error") for n in notebooks)
            return BoardSnapshot(self._total, done, notebooks, tuple(self._log), self._version)
