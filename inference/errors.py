"""The inference package's one exception tree.

    InferenceError
    ├── ConfigError              bad or unreadable cluster config
    │   └── UnknownRoleError     a request names a role with no route
    ├── InvalidRequestError      the request itself is unusable
    │   ├── ContextOverflowError prompt (+ max_tokens) does not fit the context
    │   └── SchemaError          the JSON schema cannot be compiled to a grammar
    ├── ModelLoadError           model file missing, unreadable or corrupt
    ├── BackendError             a worker or server failed while serving
    │   ├── KVTransferError      KV state could not be moved or loaded
    │   │   ├── KVIncompatibleError  handshake refused: another model or KV layout
    │   │   └── KVFormatError        bad bytes on the wire (corrupt, truncated, ...)
    │   ├── BackendUnavailable   the route's server is down / unreachable / full
    │   └── StreamInterrupted    a server failed after part of the reply was streamed
    └── OutputValidationError    the model's output failed the request's schema

Errors from llama.cpp, sockets or JSON are translated at the boundary with
``raise X(...) from exc``; nothing is swallowed and no default is invented.
"""

from __future__ import annotations

from typing import Any


class InferenceError(Exception):
    """Base class for every error the inference package raises."""


class ConfigError(InferenceError):
    pass


class UnknownRoleError(ConfigError):
    def __init__(self, role: str, known: list[str]) -> None:
        self.role = role
        self.known = sorted(known)
        super().__init__(
            f"unknown role {role!r}: configured roles are {', '.join(self.known) or '(none)'}"
        )


class InvalidRequestError(InferenceError):
    pass


class ContextOverflowError(InvalidRequestError):
    def __init__(self, prompt_tokens: int, max_tokens: int, n_ctx: int,
                 message: str | None = None) -> None:
        """``message``: a remote server's own words (the numbers may then be 0)."""
        self.prompt_tokens = prompt_tokens
        self.max_tokens = max_tokens
        self.n_ctx = n_ctx
        super().__init__(message or (
            f"prompt of {prompt_tokens} tokens plus max_tokens={max_tokens} does not fit "
            f"the context of {n_ctx} tokens"))


class SchemaError(InvalidRequestError):
    pass


class ModelLoadError(InferenceError):
    pass


class BackendError(InferenceError):
    pass


class KVTransferError(BackendError):
    pass


class KVIncompatibleError(KVTransferError):
    """The two sides serve different models or KV layouts; nothing was moved."""


class KVFormatError(KVTransferError):
    """KV bytes on the wire are unusable. ``kind``: kv_corrupt, kv_truncated,
    kv_version or kv_too_large (the names of the server protocol's error types)."""

    KINDS = ("kv_corrupt", "kv_truncated", "kv_version", "kv_too_large")

    def __init__(self, kind: str, message: str) -> None:
        if kind not in self.KINDS:
            raise ValueError(f"unknown KV format error kind {kind!r}")
        self.kind = kind
        super().__init__(message)


class BackendUnavailable(BackendError):
    """Down, unreachable, loading or full. ``retry_after``: seconds the server asked
    for (503 + Retry-After), if it did."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        self.retry_after = retry_after
        super().__init__(message)


class StreamInterrupted(BackendError):
    """A server failed after the caller had received part of the reply, so the
    request was not retried behind its back. ``partial``: the text it had seen.
    A caller that can show a reply restarting (``restartable=True`` in the
    client) gets one retry on another server instead."""

    def __init__(self, message: str, partial: str = "") -> None:
        self.partial = partial
        super().__init__(message)


class OutputValidationError(InferenceError):
    """The model produced text that is not valid for the requested schema.

    Carries the raw text and the metrics so the caller can show what happened
    and decide (repair, or mark for review); there is never a default value.
    """

    def __init__(self, message: str, text: str, metrics: Any = None) -> None:
        self.text = text
        self.metrics = metrics
        super().__init__(message)
