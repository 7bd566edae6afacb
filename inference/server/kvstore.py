"""Prefilled KV waiting to be pulled: handles with leases, bounded in memory.

A handle lives until its stream has been sent in full, ``delete``, or its lease
runs out (checked on every access and by a sweeper thread). A handle being
streamed is never swept; a cut stream leaves it to its lease.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .errors import HandleNotFoundError, OverloadedError

log = logging.getLogger(__name__)
# A stream abandoned without a word (its generator never closed) stops protecting
# its handle this long after the lease.
PULL_GRACE_S = 300.0


@dataclass(slots=True)
class StoredKV:
    handle: str
    tokens: tuple[int, ...]
    first_token: int
    state: bytes
    expires_at: float  # time.monotonic()
    checksums: tuple[bytes, ...] | None = None  # per chunk, as kvwire.chunk_checksums
    pulling: int = 0
    created_at: float = field(default_factory=time.monotonic)

    @property
    def nbytes(self) -> int:
        return len(self.state)


class KVStore:
    def __init__(self, max_bytes: int, lease_seconds: float,
                 on_expired: Callable[[int], None] | None = None) -> None:
        self.max_bytes = max_bytes
        self.lease_seconds = lease_seconds
        self._on_expired = on_expired or (lambda _n: None)
        self._items: dict[str, StoredKV] = {}
        self._bytes = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._sweeper: threading.Thread | None = None

    @property
    def nbytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)

    def is_full(self) -> bool:
        self.sweep()
        return self._bytes >= self.max_bytes

    def put(self, tokens: tuple[int, ...], first_token: int, state: bytes,
            checksums: tuple[bytes, ...] | None = None) -> StoredKV:
        self.sweep()
        with self._lock:
            if self._bytes + len(state) > self.max_bytes:
                raise OverloadedError(
                    f"the KV store is full ({self._bytes} of {self.max_bytes} bytes held "
                    f"for pulls; this prefill needs {len(state)})",
                    retry_after=min(self.lease_seconds, 30.0), reason="kv_store_full")
            handle = "k-" + secrets.token_hex(12)
            item = StoredKV(handle, tokens, first_token, state,
                            time.monotonic() + self.lease_seconds, checksums=checksums)
            self._items[handle] = item
            self._bytes += item.nbytes
            return item

    def get(self, handle: str, renew: bool = False) -> StoredKV:
        self.sweep()
        with self._lock:
            item = self._items.get(handle)
            if item is None:
                raise HandleNotFoundError(handle)
            if renew:
                item.expires_at = time.monotonic() + self.lease_seconds
            return item

    def begin_pull(self, handle: str) -> StoredKV:
        with self._lock:
            item = self._items.get(handle)
            if item is None or item.expires_at <= time.monotonic():
                raise HandleNotFoundError(handle)
            item.pulling += 1
            return item

    def end_pull(self, item: StoredKV, complete: bool) -> None:
        """After a stream: free the handle when it was sent in full."""
        with self._lock:
            item.pulling -= 1
            if complete and self._items.get(item.handle) is item:
                self._drop(item.handle)

    def delete(self, handle: str) -> None:
        with self._lock:
            if handle not in self._items:
                raise HandleNotFoundError(handle)
            self._drop(handle)

    def _drop(self, handle: str) -> None:
        item = self._items.pop(handle)
        self._bytes -= item.nbytes

    def sweep(self) -> int:
        now = time.monotonic()
        with self._lock:
            gone = [h for h, it in self._items.items() if it.expires_at <= now
                    and (not it.pulling or it.expires_at + PULL_GRACE_S <= now)]
            for h in gone:
                self._drop(h)
        if gone:
            log.info("freed %d KV handle(s) whose lease ran out", len(gone))
            self._on_expired(len(gone))
        return len(gone)

    def start(self, interval: float = 0.5) -> None:
        def run() -> None:
            while not self._stop.wait(interval):
                self.sweep()

        self._sweeper = threading.Thread(target=run, name="kv-lease-sweeper", daemon=True)
        self._sweeper.start()

    def close(self) -> None:
        self._stop.set()
        if self._sweeper is not None:
            self._sweeper.join(timeout=2)
        with self._lock:
            self._items.clear()
            self._bytes = 0
