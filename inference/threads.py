"""Sharing the machine's cores between workers that compute at the same time.

llama.cpp releases the GIL, so two workers really run in parallel; on a small
machine the work is compute-bound, and giving each of two concurrent workers
all the cores oversubscribes them. Every worker holds a ``ThreadBudget`` slot
while it computes and asks for its share before each llama_decode call: alone
it gets every thread, with a neighbour it gets half.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager


def default_threads() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


class ThreadBudget:
    def __init__(self, total: int | None = None) -> None:
        self.total = max(1, total or default_threads())
        self._active = 0
        self._lock = threading.Lock()

    @property
    def active(self) -> int:
        return self._active

    def share(self) -> int:
        active = max(1, self._active)
        return max(1, self.total // active)

    @contextmanager
    def slot(self) -> Iterator[ThreadBudget]:
        with self._lock:
            self._active += 1
        try:
            yield self
        finally:
            with self._lock:
                self._active -= 1
