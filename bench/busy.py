"""A busy core for benchmarks: a process of the benchmark's own that spins on one core
while a measurement runs, started and killed by the benchmark, so that "while other
work ran" is a condition a benchmark can reproduce rather than luck.

    with busy_core():
        measure()
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def _spin(ready: Any) -> None:
    ready.set()
    while True:
        pass


@contextmanager
def busy_core(on: bool = True) -> Iterator[None]:
    """One spinning process for the duration of the block (nothing when ``on`` is
    False); it is killed and reaped on the way out, whatever happened inside."""
    if not on:
        yield
        return
    mp = multiprocessing.get_context("spawn")
    ready = mp.Event()
    proc = mp.Process(target=_spin, args=(ready,), daemon=True, name="busy-core")
    proc.start()
    try:
        if not ready.wait(60):
            raise RuntimeError("the spinning process did not start")
        time.sleep(0.2)  # it is on a core by now
        yield
    finally:
        proc.kill()
        proc.join(10)
