"""A circuit breaker per server: closed -> open after consecutive failures (or one
decisive failure, such as a refused connection) -> half-open after ``reset_seconds``
(one trial at a time) -> closed on success, open again on failure."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from ..errors import ConfigError

CircuitState = Literal["closed", "open", "half_open"]
Clock = Callable[[], float]


@dataclass(frozen=True, slots=True)
class BreakerSettings:
    """``failures`` consecutive failures open the breaker; after ``reset_seconds`` an
    open breaker lets one trial through (half-open)."""

    failures: int = 3
    reset_seconds: float = 10.0

    def __post_init__(self) -> None:
        if isinstance(self.failures, bool) or not isinstance(self.failures, int) \
                or self.failures < 1:
            raise ConfigError(f"breaker failures must be an integer >= 1, not {self.failures!r}")
        if not self.reset_seconds > 0:
            raise ConfigError(f"breaker reset_seconds must be > 0, not {self.reset_seconds!r}")


class CircuitBreaker:
    """closed -> open -> half_open -> closed (or back to open). Thread-safe.

    A failure while open restarts the open period, so a server whose probes keep
    failing stays open until a probe succeeds (``half_open()``) or the failures stop.
    A half-open trial that never reports is given up after ``reset_seconds``.
    """

    def __init__(self, settings: BreakerSettings | None = None,
                 clock: Clock = time.monotonic) -> None:
        self.settings = settings or BreakerSettings()
        self._clock = clock
        self._lock = threading.Lock()
        self._state: CircuitState = "closed"
        self._failures = 0
        self._opened_at: float | None = None
        self._trial_at: float | None = None

    @property
    def state(self) -> CircuitState:
        return self._state

    @property
    def consecutive_failures(self) -> int:
        return self._failures

    @property
    def opened_at(self) -> float | None:
        """Clock time the breaker last opened; None while closed."""
        return self._opened_at

    def allow(self, claim: bool = True) -> bool:
        """May a request go through now? In half-open this claims the one trial,
        unless ``claim`` is False (a look that changes nothing)."""
        with self._lock:
            now, reset = self._clock(), self.settings.reset_seconds
            if self._state == "closed":
                return True
            if self._state == "open":
                if self._opened_at is not None and now - self._opened_at < reset:
                    return False
                if claim:
                    self._state, self._trial_at = "half_open", now
                return True
            if self._trial_at is not None and now - self._trial_at < reset:
                return False
            if claim:
                self._trial_at = now
            return True

    def record_success(self) -> None:
        with self._lock:
            self._state, self._failures = "closed", 0
            self._opened_at = self._trial_at = None

    def record_failure(self, decisive: bool = False) -> None:
        """One failure; ``decisive`` (e.g. connection refused) opens at once."""
        with self._lock:
            self._failures += 1
            if (decisive or self._state != "closed"
                    or self._failures >= self.settings.failures):
                self._state, self._opened_at, self._trial_at = "open", self._clock(), None

    def half_open(self) -> None:
        """The server answered again (a probe): let one trial through now."""
        with self._lock:
            if self._state == "open":
                self._state, self._trial_at = "half_open", None
