"""A calibration in the background, for the Dashboard: one at a time, in a process of its
own.

The Dashboard's button starts ``python -m grader calibrate --json --db STORE`` over the
bundled examples (``APP_LIMIT`` notebooks of each) at low priority, and the page asks
``state()`` on every draw: running since when, then the result or why it failed. A
process of its own, as the self-check's (``grader.service.selfcheck.SelfChecks`` says why):
it also grades with a client of its own, every route trusted to judge for the run, which
the app's client must never be; it reads the configuration the app read (the same
environment) and keeps each route's figures in the app's store, where the Dashboard
shows the latest per route. A calibration changes no grade.
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .calibration import BUNDLED, Calibration

__all__ = ["APP_LIMIT", "CalibrationRuns", "CalibrationState"]

log = logging.getLogger(__name__)
REPO = Path(__file__).resolve().parents[2]
NICE = shutil.which("nice")
APP_LIMIT = 2  # notebooks per bundled assignment: about ten minutes on two cores


@dataclass(frozen=True, slots=True)
class CalibrationState:
    """A background calibration as a page shows it: running, done (``result``) or failed."""

    running: bool
    started_at: float
    result: Calibration | None = None
    error: str = ""
    finished_at: float | None = None


class CalibrationRuns:
    """The app's calibrations: ``start`` runs one unless one is running (two quick clicks
    start one), ``state`` says where the last one stands."""

    def __init__(self, db: Path | str, limit: int = APP_LIMIT, names: Sequence[str] = (),
                 execute: bool = True, timeout_s: float = 4 * 3600) -> None:
        self.db = Path(db)
        self.limit = limit
        self.names = tuple(names)
        self.execute = execute
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._state: CalibrationState | None = None

    def state(self) -> CalibrationState | None:
        with self._lock:
            return self._state

    def start(self) -> CalibrationState:
        with self._lock:
            if self._state is not None and self._state.running:
                return self._state
            state = self._state = CalibrationState(True, time.time())
        threading.Thread(target=self._run, args=(state,), daemon=True,
                         name="calibration").start()
        return state

    def argv(self) -> list[str]:
        nice = [NICE, "-n", "10"] if NICE else []  # never slower grading for the instructor
        folders = [str(BUNDLED / name) for name in self.names]  # none: every bundled one
        out = [*nice, sys.executable, "-m", "grader", "calibrate", *folders, "--json",
               "--db", str(self.db), "--limit", str(self.limit)]
        return out if self.execute else [*out, "--no-exec"]

    def _run(self, started: CalibrationState) -> None:
        try:
            state = CalibrationState(False, started.started_at, self.calibrate(),
                                     finished_at=time.time())
        except Exception as exc:  # shown on the Dashboard; no grade depends on it
            log.exception("the calibration failed")
            state = CalibrationState(False, started.started_at, error=f"{exc}",
                                     finished_at=time.time())
        with self._lock:
            self._state = state

    def calibrate(self) -> Calibration:
        """Run one calibration to its end (in the calling thread)."""
        done = subprocess.run(self.argv(), cwd=REPO, capture_output=True, text=True,
                              timeout=self.timeout_s, check=False)
        if done.returncode not in (0, 1):
            tail = done.stderr.strip().splitlines()[-1:] or ["no message"]
            raise RuntimeError(f"the calibration ended with status {done.returncode}: "
                               f"{tail[0]}")
        return Calibration.from_dict(json.loads(done.stdout))
