"""One thread runs every ``llama_decode`` of the process.

llama.cpp's CPU backend runs a graph in an OpenMP parallel region, and libgomp keeps a
pool of worker threads for each thread that opens one. Once the process holds more of
these threads than it has CPUs (a second Python thread that decodes is enough on two
cores), libgomp stops spinning at its barriers (100 spins, then a futex sleep: its
"throttled" wait) and every operation of the graph pays a wake-up: measured here, a
reply decoded at 31 tokens/s from a second thread, and at 33 from the main thread once
another thread had decoded, against 101-110 before. So every evaluation, prefill chunk
or batch step, from whatever thread asks, runs in this one thread, in the order asked:
one OpenMP pool for the whole process, spinning as llama-bench's does. Work of several
contexts interleaves between calls (a decode step between two prefill chunks), where it
used to share the cores and slow both.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["compute", "compute_timed"]

T = TypeVar("T")
_jobs: queue.SimpleQueue[tuple[Callable[..., Any], tuple[Any, ...], list[Any],
                               threading.Event]] = queue.SimpleQueue()
# A job's box: [result, exception, seconds it ran in the compute thread].
_thread: threading.Thread | None = None
_start_lock = threading.Lock()


def _loop() -> None:
    while True:
        fn, args, box, done = _jobs.get()
        t0 = time.perf_counter()
        try:
            box[0] = fn(*args)
        except BaseException as exc:  # handed to the caller, which raises it
            box[1] = exc
        finally:
            box[2] = time.perf_counter() - t0
            done.set()


def compute(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in the compute thread; its result (or its exception) here."""
    return compute_timed(fn, *args)[0]


def compute_timed(fn: Callable[..., T], *args: Any) -> tuple[T, float]:
    """``compute``, and the seconds ``fn`` ran: without the time it queued behind other
    work of the compute thread (a prefill chunk of another context)."""
    global _thread
    if threading.current_thread() is _thread:
        t0 = time.perf_counter()
        return fn(*args), time.perf_counter() - t0
    if _thread is None:
        with _start_lock:
            if _thread is None:
                _thread = threading.Thread(target=_loop, name="llama-compute", daemon=True)
                _thread.start()
    box: list[Any] = [None, None, 0.0]
    done = threading.Event()
    _jobs.put((fn, args, box, done))
    done.wait()
    if box[1] is not None:
        raise box[1]
    return box[0], box[2]
