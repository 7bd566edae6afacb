"""The decode work this client has sent to each decode server, with when it can start.

A disaggregated request's decode cannot start on its decode server before its KV is
there: its prefill (and that server's queue) first. Counted as work waiting from the
moment it was sent, it made a decode server look busy before any of it could run, and
counted as done once the new request's own KV would arrive, it let one fast-measured
decode server take every request of a batch whose KV all arrived at about the same
time (``bench.balance``: 8 of 8). Here each request's decode is an entry: when its KV
is predicted to arrive and the seconds of decoding it brings, so that the router can
play the server's queue forward to the moment a new request's KV would arrive
(``CostModel``'s ``backlog``). Entries live from the plan to the request's end.

May import: nothing of ours.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

# What a decode still running past its predicted end is taken to have left, as a share
# of its predicted work: it is still there, and a slower server than predicted is busy.
LATE_SHARE = 0.1


@dataclass(eq=False, slots=True)
class Entry:
    server: str
    ready_at: float  # monotonic seconds: when its KV is predicted to be on the server
    work_s: float  # predicted seconds of decoding (and KV loading) there


class DecodeBacklog:
    """Thread-safe entries per decode server; ``view`` gives (seconds from now until
    the entry can start, seconds of work it has left)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._entries: dict[str, list[Entry]] = {}
        self._lock = threading.Lock()

    def add(self, server: str, ready_in_s: float, work_s: float) -> Entry:
        entry = Entry(server, self._clock() + max(0.0, ready_in_s), max(0.0, work_s))
        with self._lock:
            self._entries.setdefault(server, []).append(entry)
        return entry

    def remove(self, entries: list[Entry] | None) -> None:
        """Drop ``entries`` (each once: the list is emptied)."""
        with self._lock:
            for entry in entries or ():
                items = self._entries.get(entry.server, [])
                if entry in items:
                    items.remove(entry)
        if entries:
            entries.clear()

    def view(self, server: str) -> list[tuple[float, float]]:
        now = self._clock()
        with self._lock:
            items = list(self._entries.get(server, ()))
        out = []
        for e in items:
            started = now - e.ready_at
            if started <= 0:
                out.append((-started, e.work_s))
            else:
                out.append((0.0, max(e.work_s * LATE_SHARE, e.work_s - started)))
        return out
