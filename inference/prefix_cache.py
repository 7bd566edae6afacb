"""Bounded store of KV states for recently used token prefixes.

Grading sends the same instructions, rubric and solution for every student of
an assignment, so a new prompt usually shares a long prefix with an earlier one.
The prefill worker saves the sequence state after each prompt; a later prompt
restores the entry with the longest common prefix, drops the positions past
that prefix, and evaluates only the rest.

Memory is bounded by the total size of the stored states (least recently used
entries go first). Pure Python: the states are opaque bytes.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PrefixEntry:
    tokens: tuple[int, ...]
    state: bytes

    @property
    def nbytes(self) -> int:
        return len(self.state)


def common_prefix(a: tuple[int, ...] | list[int], b: tuple[int, ...] | list[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    # Compare in blocks first: prompts share thousands of tokens.
    step = 256
    while i + step <= n and a[i:i + step] == b[i:i + step]:
        i += step
    while i < n and a[i] == b[i]:
        i += 1
    return i


class PrefixCache:
    def __init__(self, max_bytes: int, min_tokens: int = 32) -> None:
        self.max_bytes = max_bytes
        self.min_tokens = min_tokens
        self._entries: OrderedDict[tuple[int, ...], PrefixEntry] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @property
    def nbytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(self, tokens: list[int] | tuple[int, ...]) -> tuple[PrefixEntry | None, int]:
        """Entry sharing the longest prefix with ``tokens`` and that prefix's length.

        The usable length is capped at len(tokens) - 1: the last prompt token is
        always evaluated, since its logits give the first generated token.
        """
        limit = len(tokens) - 1
        best: PrefixEntry | None = None
        best_n = 0
        with self._lock:
            for entry in self._entries.values():
                n = min(common_prefix(entry.tokens, tokens), limit)
                if n > best_n:
                    best, best_n = entry, n
            if best is not None and best_n >= self.min_tokens:
                self._entries.move_to_end(best.tokens)
                self.hits += 1
                return best, best_n
            self.misses += 1
            return None, 0

    def put(self, tokens: list[int] | tuple[int, ...], state: bytes) -> None:
        key = tuple(tokens)
        if len(key) < self.min_tokens or len(state) > self.max_bytes:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old.nbytes
            # An entry that is a strict prefix of the new one adds nothing.
            for other in [k for k in self._entries if len(k) < len(key) and key[:len(k)] == k]:
                self._bytes -= self._entries.pop(other).nbytes
            self._entries[key] = PrefixEntry(key, state)
            self._bytes += len(state)
            while self._bytes > self.max_bytes and self._entries:
                _, evicted = self._entries.popitem(last=False)
                self._bytes -= evicted.nbytes

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0
