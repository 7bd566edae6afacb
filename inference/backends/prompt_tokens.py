"""The prompt tokens of recent requests, so that a prompt is tokenized once.

The grader counts a prompt's tokens while it fits the prompt to the context
(``DisaggregatedClient.count_tokens``), then sends that same prompt: its prefill
takes the tokens counted then instead of tokenizing the prompt again. Pieces
counted over and over while fitting (a cell, the shared part) are tokenized once
too. Keyed by the request's messages (the chat template and the tokenizer are the
route's own, so the tokens depend on nothing else); the least recently used go
first once ``max_tokens`` tokens are held.
"""

from __future__ import annotations

import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable

from ..types import ChatMessage

__all__ = ["PromptTokens"]

Key = tuple[ChatMessage, ...]


class PromptTokens:
    """A bounded memo of prompt tokens by messages; safe to share between threads."""

    def __init__(self, max_tokens: int = 1 << 18) -> None:
        self.max_tokens = max_tokens
        self._entries: OrderedDict[Key, array] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, messages: Key, tokenize: Callable[[], list[int]]) -> list[int]:
        """The tokens of ``messages``: remembered, else ``tokenize()``'s (then kept)."""
        with self._lock:
            found = self._entries.get(messages)
            if found is not None:
                self._entries.move_to_end(messages)
                self.hits += 1
                return found.tolist()
            self.misses += 1
        tokens = tokenize()  # outside the lock: other prompts count meanwhile
        if len(tokens) <= self.max_tokens:
            with self._lock:
                if messages not in self._entries:
                    self._entries[messages] = array("i", tokens)
                    self._held += len(tokens)
                while self._held > self.max_tokens:
                    _, old = self._entries.popitem(last=False)
                    self._held -= len(old)
        return tokens
