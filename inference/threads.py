"""How many threads each llama.cpp evaluation gets.

Evaluations run one at a time in the process's compute thread
(``backends.compute``); workers hold a ``ThreadBudget`` slot while they compute (the
dashboard's count of active workers) and ask for a share before each evaluation: every
core that is free.

The share also fits the cores other processes leave free (``FreeCores``): llama.cpp's
OpenMP threads meet at a barrier after every operation, so a thread whose core another
process holds (a sandboxed kernel of the same batch, another grader) stalls all the
others, which spin waiting for it: a decode measured at 46 tokens/s fell to 1.3 on a
busy machine. When other processes keep a core busy, the share leaves it to them.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["FreeCores", "ThreadBudget", "default_threads"]


def default_threads() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class FreeCores:
    """How many of our cores other processes leave free, measured over the time since
    the last call (at least ``every_s`` seconds): the busy time of our CPUs
    (``/proc/stat``) less our own process's CPU time. A core counts as taken when
    others kept it busier than ``taken``. Cheap to call often (the answer is kept
    ``every_s``).

    After an idle spell longer than ``stale_s`` that interval says what others did
    while we waited, not what they do now (a benchmark that ran and ended, a batch of
    sandboxes that finished: measured, the next prefill ran on one thread at 60% of
    its speed): the first call then measures a fresh ``probe_s`` window."""

    def __init__(self, every_s: float = 0.5, taken: float = 0.7,
                 stat: Path = Path("/proc/stat"), stale_s: float = 2.0,
                 probe_s: float = 0.2) -> None:
        try:
            self.cpus = {f"cpu{c}" for c in os.sched_getaffinity(0)}
        except AttributeError:
            self.cpus = set()
        self.every_s, self.taken, self._stat = every_s, taken, stat
        self.stale_s, self.probe_s = stale_s, probe_s
        self._tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self._lock = threading.Lock()
        self._last = self._sample()
        self._free = len(self.cpus) or default_threads()

    def _sample(self) -> tuple[float, float, float] | None:
        """(wall, busy seconds of our CPUs, our process's CPU seconds)."""
        try:
            lines = self._stat.read_text().splitlines()
        except OSError:
            return None
        busy = 0
        for line in lines:
            name, *fields = line.split()
            if name in self.cpus:
                ticks = [int(f) for f in fields[:8]]
                busy += sum(ticks) - ticks[3] - ticks[4]  # all but idle and iowait
        mine = os.times()
        return time.monotonic(), busy / self._tick, mine.user + mine.system

    def __call__(self) -> int:
        with self._lock:
            last = self._last
            if last is None or time.monotonic() - last[0] < self.every_s:
                return self._free
            if time.monotonic() - last[0] > self.stale_s:
                last = self._sample()
                time.sleep(self.probe_s)
                if last is None:
                    return self._free
            now = self._sample()
            if now is None:
                return self._free
            wall = now[0] - last[0]
            others = max(0.0, (now[1] - last[1]) - (now[2] - last[2])) / wall
            self._last = now
            self._free = max(1, len(self.cpus) - int(others + (1 - self.taken)))
            return self._free


class ThreadBudget:
    def __init__(self, total: int | None = None, free: FreeCores | None = None) -> None:
        """``free``: the cores other processes leave (None: a ``FreeCores`` of this
        process's CPUs; give ``FreeCores`` of a fixed answer to pin the share)."""
        self.total = max(1, total or default_threads())
        self._active = 0
        self._lock = threading.Lock()
        self.free = free if free is not None else FreeCores()

    @property
    def active(self) -> int:
        return self._active

    def share(self) -> int:
        """Threads for the next evaluation: every free core. Evaluations run one at a
        time in the compute thread (``backends.compute``), so workers computing "at the
        same time" take turns rather than splitting the cores."""
        return max(1, min(self.total, self.free()))

    @contextmanager
    def slot(self) -> Iterator[ThreadBudget]:
        with self._lock:
            self._active += 1
        try:
            yield self
        finally:
            with self._lock:
                self._active -= 1
