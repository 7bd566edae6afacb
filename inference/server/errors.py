"""The server's own errors and the one table that turns any error into the protocol's
``{"error": {"type", "message"}}`` with its HTTP status (docs/server-protocol.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..errors import (
    BackendError,
    BackendUnavailable,
    ContextOverflowError,
    InferenceError,
    InvalidRequestError,
    KVFormatError,
    KVIncompatibleError,
    KVTransferError,
    ModelLoadError,
    SchemaError,
)


class WrongRoleError(InvalidRequestError):
    def __init__(self, endpoint: str, role: str, roles: tuple[str, ...]) -> None:
        super().__init__(f"{endpoint} is served by servers of role {' or '.join(roles)}; "
                         f"this server's role is {role!r}")


class HandleNotFoundError(BackendError):
    def __init__(self, handle: str, where: str = "") -> None:
        self.handle = handle
        super().__init__(f"KV handle {handle!r} is unknown{where} (never made, already "
                         "pulled, deleted, or its lease ran out)")


class KVSourceUnreachable(KVTransferError):
    """The decode server could not reach (or use) the prefill server named as source."""


class LoadingError(BackendUnavailable):
    def __init__(self) -> None:
        super().__init__("the model is still loading", retry_after=1.0)


class OverloadedError(BackendUnavailable):
    def __init__(self, message: str, retry_after: float, reason: str = "queue_full") -> None:
        self.reason = reason
        super().__init__(message, retry_after=retry_after)


@dataclass(frozen=True, slots=True)
class ErrorReply:
    type: str
    status: int
    message: str
    retry_after: float | None = None

    def body(self) -> dict[str, Any]:
        return {"error": {"type": self.type, "message": self.message}}

    def headers(self) -> dict[str, str]:
        if self.retry_after is None:
            return {}
        return {"Retry-After": str(max(1, math.ceil(self.retry_after)))}


# Most specific first: the first class an error is an instance of decides.
_TABLE: tuple[tuple[type[BaseException], str, int], ...] = (
    (WrongRoleError, "wrong_role", 404),
    (ContextOverflowError, "context_overflow", 400),
    (SchemaError, "schema", 400),
    (InvalidRequestError, "invalid_request", 400),
    (HandleNotFoundError, "handle_not_found", 404),
    (KVIncompatibleError, "kv_incompatible", 409),
    (KVSourceUnreachable, "kv_source_unreachable", 502),
    # llama_state_seq_set_data refused bytes that passed every check on the wire.
    (KVTransferError, "kv_corrupt", 502),
    (LoadingError, "loading", 503),
    (OverloadedError, "overloaded", 503),
    (ModelLoadError, "internal", 500),
)


def error_reply(exc: BaseException) -> ErrorReply:
    """The protocol's error for ``exc``; anything unknown is ``internal`` 500."""
    if isinstance(exc, KVFormatError):
        return ErrorReply(exc.kind, 502, str(exc))
    for cls, kind, status in _TABLE:
        if isinstance(exc, cls):
            retry = exc.retry_after if isinstance(exc, BackendUnavailable) else None
            return ErrorReply(kind, status, str(exc), retry)
    if isinstance(exc, InferenceError):
        return ErrorReply("internal", 500, str(exc))
    return ErrorReply("internal", 500, f"{type(exc).__name__}: {exc}")
