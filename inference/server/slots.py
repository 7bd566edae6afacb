"""N slots (llama.cpp contexts) and a bounded queue in front of them.

``admit`` either takes a place (computing or waiting) or refuses at once with
``OverloadedError`` and a Retry-After estimated from the recent service times; the
admitted request then waits in arrival order for a free slot.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

from .errors import OverloadedError

T = TypeVar("T")


class Ticket(Generic[T]):
    """One admitted request; ``slot()`` waits for a free slot and holds it."""

    def __init__(self, pool: SlotPool[T]) -> None:
        self._pool = pool
        self._done = False
        self.admitted_at = time.perf_counter()

    @contextmanager
    def slot(self) -> Iterator[tuple[T, float]]:
        """The slot's resource and the seconds waited for it."""
        t0 = time.perf_counter()
        item = self._pool._take(self)
        waited = time.perf_counter() - t0
        start = time.perf_counter()
        try:
            yield item, waited
        finally:
            self._pool._give(item, time.perf_counter() - start)

    def release(self) -> None:
        if not self._done:
            self._done = True
            self._pool._leave()

    def __enter__(self) -> Ticket[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class SlotPool(Generic[T]):
    def __init__(self, items: list[T], queue_max: int) -> None:
        self.items = tuple(items)
        self._free: deque[T] = deque(items)
        self.total = len(items)
        self.queue_max = queue_max
        self._admitted = 0  # computing + waiting
        self._busy = 0
        self._cond = threading.Condition()
        self._service_s = 1.0  # moving average of a slot's holding time

    @property
    def busy(self) -> int:
        return self._busy

    @property
    def waiting(self) -> int:
        return max(0, self._admitted - self._busy)

    def retry_after(self) -> float:
        ahead = self.waiting + 1
        return min(60.0, max(1.0, self._service_s * ahead / self.total))

    def admit(self) -> Ticket[T]:
        with self._cond:
            if self._admitted >= self.total + self.queue_max:
                raise OverloadedError(
                    f"all {self.total} slots are busy and {self.waiting} requests wait "
                    f"(queue limit {self.queue_max})", retry_after=self.retry_after())
            self._admitted += 1
        return Ticket(self)

    def _take(self, ticket: Ticket[T]) -> T:
        with self._cond:
            while not self._free:
                self._cond.wait()
            self._busy += 1
            return self._free.popleft()

    def _give(self, item: T, held_s: float) -> None:
        with self._cond:
            self._free.append(item)
            self._busy -= 1
            self._service_s = 0.8 * self._service_s + 0.2 * held_s
            self._cond.notify()

    def _leave(self) -> None:
        with self._cond:
            self._admitted -= 1
