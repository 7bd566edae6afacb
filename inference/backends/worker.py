"""A worker: one llama.cpp context behind a lock, with the counters a dashboard shows."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

from ..types import WorkerHealth

T = TypeVar("T")


class Worker(Generic[T]):
    """Serves one request at a time; callers queue on the lock in arrival order."""

    def __init__(self, name: str, kind: str, role: str, route: str,
                 factory: Callable[[], T]) -> None:
        self.name = name
        self.kind = kind
        self.role = role
        self.route = route
        self._factory = factory
        self._resource: T | None = None
        self._lock = threading.Lock()
        self._count_lock = threading.Lock()
        self.waiting = 0
        self.busy = False
        self.requests = 0
        self.errors = 0
        self.last_latency_s: float | None = None
        self.last_error = ""
        # Batched decode steps (``BatchDecoder``): how many, the tokens they decoded,
        # and the seconds of their own work (not the time queued behind a prefill).
        self.steps = 0
        self.step_tokens = 0
        self.step_seconds = 0.0

    def count_step(self, tokens: int, seconds: float) -> None:
        with self._count_lock:
            self.steps += 1
            self.step_tokens += tokens
            self.step_seconds += seconds

    @contextmanager
    def hold(self, count: bool = True) -> Iterator[tuple[T, float]]:
        """Hold the worker; yields its resource and the seconds spent queueing."""
        t0 = time.perf_counter()
        with self._count_lock:
            self.waiting += 1
        with self._lock:
            with self._count_lock:
                self.waiting -= 1
            queued = time.perf_counter() - t0
            self.busy = True
            start = time.perf_counter()
            try:
                if self._resource is None:
                    self._resource = self._factory()
                yield self._resource, queued
            except BaseException as exc:
                self.errors += 1
                self.last_error = f"{type(exc).__name__}: {exc}"
                raise
            finally:
                self.busy = False
                if count:  # loading the model (warm) is not a request's latency
                    self.requests += 1
                    self.last_latency_s = time.perf_counter() - start

    def attach(self, resource: T | None) -> None:
        """Set the resource another owner made (a batched decoder's context, which it
        decodes from its own thread rather than through ``hold``)."""
        self._resource = resource

    @property
    def loaded(self) -> bool:
        return self._resource is not None

    def warm(self) -> None:
        with self.hold(count=False):
            pass

    def close(self, closer: Callable[[T], None]) -> None:
        with self._lock:
            if self._resource is not None:
                closer(self._resource)
                self._resource = None

    def health(self, model: str, load_error: str = "") -> WorkerHealth:
        if load_error:
            state, detail = "down", load_error
        elif not self.loaded:
            state, detail = "loading", "not loaded yet (loads on first request)"
        elif self.last_error and self.errors >= max(1, self.requests // 2):
            state, detail = "degraded", self.last_error
        else:
            state, detail = "up", self.last_error
        return WorkerHealth(
            name=self.name, role=self.role, route=self.route, kind=self.kind, state=state,
            model=model, detail=detail, busy=self.busy, queue=self.waiting,
            last_latency_s=self.last_latency_s, requests=self.requests, errors=self.errors,
            extra=self.step_figures(),
        )

    def step_figures(self) -> dict[str, float]:
        """The batched decode steps' counters (empty for a worker that ran none)."""
        if not self.steps:
            return {}
        return {"decode_steps": self.steps, "decode_step_tokens": self.step_tokens,
                "decode_step_seconds": round(self.step_seconds, 6),
                "decode_step_tps": round(self.step_tokens / self.step_seconds, 2)
                if self.step_seconds > 0 else 0.0}
