"""How many bytes of pulled KV a decode server holds at once.

A decode request names a KV source; the source's handshake announces the size, up to
``--max-kv-mb``. Without a bound, every admitted request (each slot and queue place)
could pull that much at once. A pull reserves its announced size here first and gives
it back when the reply is done; a reservation that does not fit waits, briefly, for
others to finish, then gets 503 + ``Retry-After`` (reason ``kv_memory``), as a full
queue does.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from .errors import OverloadedError


class KVBudget:
    def __init__(self, limit_bytes: int, wait_s: float = 10.0) -> None:
        self.limit = limit_bytes
        self.wait_s = wait_s
        self._held = 0
        self._cond = threading.Condition()

    @property
    def held(self) -> int:
        return self._held

    @contextmanager
    def hold(self, nbytes: int) -> Iterator[None]:
        """Reserve ``nbytes`` for the block (``nbytes`` is at most ``--max-kv-mb``, which
        the limit is never below, so a reservation alone always fits)."""
        deadline = time.monotonic() + self.wait_s
        with self._cond:
            while self._held + nbytes > self.limit:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise OverloadedError(
                        f"{self._held} bytes of KV are being pulled or decoded and "
                        f"{nbytes} more would pass the server's limit of {self.limit} "
                        "(--kv-memory-mb)", retry_after=5.0, reason="kv_memory")
                self._cond.wait(left)
            self._held += nbytes
        try:
            yield
        finally:
            with self._cond:
                self._held -= nbytes
                self._cond.notify_all()
