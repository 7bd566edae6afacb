"""Loading the models in the background, with a state the app can show.

The first grade should not wait for model loading, and the app should not block
on it either: ``Warmup.start`` loads every route in a daemon thread and records
per role whether it is loading, ready or failed (with the error), and how long
it took. A failed warm-up is not fatal: the first request retries the load and
reports its own error.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Literal

from .client import DisaggregatedClient

log = logging.getLogger(__name__)

WarmState = Literal["waiting", "loading", "ready", "failed"]


@dataclass(frozen=True, slots=True)
class RoleWarmth:
    role: str
    state: WarmState
    seconds: float = 0.0
    error: str = ""


class Warmup:
    def __init__(self, client: DisaggregatedClient) -> None:
        self.client = client
        self._lock = threading.Lock()
        self._roles = {r: RoleWarmth(r, "waiting") for r in client.roles}
        self._thread: threading.Thread | None = None

    def start(self) -> Warmup:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="warmup", daemon=True)
                self._thread.start()
        return self

    def _set(self, w: RoleWarmth) -> None:
        with self._lock:
            self._roles[w.role] = w

    def _run(self) -> None:
        for role in self.client.roles:
            self._set(RoleWarmth(role, "loading"))
            t0 = time.perf_counter()
            try:
                self.client.warm([role])
            except Exception as exc:  # shown to the user; the first request retries
                log.warning("warming role %s failed: %s", role, exc)
                self._set(RoleWarmth(role, "failed", time.perf_counter() - t0,
                                     f"{type(exc).__name__}: {exc}"))
            else:
                self._set(RoleWarmth(role, "ready", time.perf_counter() - t0))

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the warm-up ended; True when it did within ``timeout``."""
        if self._thread is None:
            return False
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def roles(self) -> list[RoleWarmth]:
        with self._lock:
            return list(self._roles.values())

    @property
    def done(self) -> bool:
        return all(w.state in ("ready", "failed") for w in self.roles())

    def summary(self) -> str:
        """One line for a status badge: 'Models ready (2 roles, 3.1 s)' and the like."""
        roles = self.roles()
        failed = [w for w in roles if w.state == "failed"]
        if failed:
            return "Model loading failed for " + ", ".join(
                f"{w.role} ({w.error})" for w in failed)
        if all(w.state == "ready" for w in roles):
            return f"Models ready ({len(roles)} roles, {sum(w.seconds for w in roles):.1f} s)"
        loading = [w.role for w in roles if w.state == "loading"]
        ready = [w.role for w in roles if w.state == "ready"]
        return (f"Loading models: {', '.join(loading) or 'starting'}..."
                + (f" ({', '.join(ready)} ready)" if ready else ""))
