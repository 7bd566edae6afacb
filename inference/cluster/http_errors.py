"""A server's HTTP error, in the engine's exception tree (OpenAI-style and Ollama servers).

``status_error`` maps a status to the error the client acts on: 429/503 and 502/504 are
``BackendUnavailable`` (with Retry-After, ``retry_after``), 401/403 an authentication
``BackendError``, a prompt over the context a ``ContextOverflowError`` with the numbers
the server gave (vLLM, SGLang, llama-server and Ollama word it differently), other
4xx an ``InvalidRequestError``. ``error_fields`` reads any server's error JSON.

How a connection failed, for health (any protocol): ``gone`` is decisive, the server is
gone, not slow: its connection was refused, or it broke under a request or a probe
(reset, closed mid-answer: a process killed with its requests in flight) and a fresh
connection is refused, or reset on arrival, at once. A connection that broke while the
port still takes and holds connections is a blip (a keep-alive race, a proxy), not a
dead server. ``timed_out``: no answer in time, which on a busy machine is a slow server,
not a dead one.
"""

from __future__ import annotations

import email.utils
import re
import socket
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx

from ..errors import (
    BackendError,
    BackendUnavailable,
    ContextOverflowError,
    InferenceError,
    InvalidRequestError,
)

_OVERFLOW_HINT = re.compile(r"context (length|size|window)|maximum context|exceeds? the "
                            r"(available )?context|longer than the model", re.I)
_N_CTX = (re.compile(r"maximum context length is (\d+)", re.I),
          re.compile(r"context (?:window|length|size)? ?of (\d+)", re.I),
          re.compile(r"context length \((\d+) tokens\)", re.I))
_N_PROMPT = (re.compile(r"\((\d+) in the messages", re.I),
             re.compile(r"request has (\d+) input tokens", re.I),
             re.compile(r"prompt of (\d+) tokens", re.I),
             re.compile(r"input \((\d+) tokens\)", re.I))


def retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def status_error(server: str, status: int, message: str, *, kind: str = "",
                 after: float | None = None, max_tokens: int | None = None,
                 body: dict[str, Any] | None = None) -> InferenceError:
    """The typed error for an HTTP error status of an OpenAI-style or Ollama server."""
    text = f"server {server}: HTTP {status}: {message or '(no message)'}"
    if status in (429, 503):
        return BackendUnavailable(text, retry_after=after)
    if status in (502, 504):
        return BackendUnavailable(text)
    if status in (401, 403):
        return BackendError(f"{text} (authentication refused: check the server's token)")
    if status in (400, 413, 422) and is_overflow(message, kind):
        return overflow_error(text, message, max_tokens, body or {})
    if status in (400, 413, 422):
        return InvalidRequestError(text)
    return BackendError(text)


def is_overflow(message: str, kind: str = "") -> bool:
    return (kind in ("context_length_exceeded", "context_overflow", "exceed_context_size_error")
            or bool(_OVERFLOW_HINT.search(message)))


def overflow_error(text: str, message: str, max_tokens: int | None,
                   body: dict[str, Any]) -> ContextOverflowError:
    """ContextOverflowError with the numbers the server gave (0 where it gave none)."""
    def first(patterns: tuple[re.Pattern[str], ...], key: str) -> int:
        if isinstance(body.get(key), int):  # llama-server: n_prompt_tokens, n_ctx
            return int(body[key])
        for p in patterns:
            if m := p.search(message):
                return int(m.group(1))
        return 0
    return ContextOverflowError(first(_N_PROMPT, "n_prompt_tokens"), max_tokens or 0,
                                first(_N_CTX, "n_ctx"), message=text)


def error_fields(payload: Any) -> tuple[str, str, dict[str, Any]]:
    """(message, type-or-code, the error object) from any server's error JSON."""
    if not isinstance(payload, dict):
        return (str(payload)[:500] if payload else ""), "", {}
    err = payload.get("error", payload.get("detail", payload))
    if isinstance(err, dict):
        kind = str(err.get("code") or err.get("type") or "")
        if kind.isdigit():  # llama-server: {"code": 400, "type": "..."}
            kind = str(err.get("type") or "")
        return str(err.get("message") or err.get("msg") or err)[:500], kind, err
    return str(err)[:500], "", {}


SETTLE_S = 0.25  # how long a fresh connection must live for its server to count as alive


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        yield cause
        cause = cause.__cause__


def refused(exc: BaseException) -> bool:
    """The connection was refused (or could not be made at all)."""
    return any(type(e).__name__ in ("ConnectError", "ConnectionRefusedError", "ConnectionError")
               for e in _chain(exc))


def broken(exc: BaseException) -> bool:
    """The connection broke under a request: reset, or closed before the answer ended."""
    return any(isinstance(e, (ConnectionResetError, ConnectionAbortedError, BrokenPipeError,
                              httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError))
               for e in _chain(exc))


def timed_out(exc: BaseException) -> bool:
    return any(isinstance(e, (httpx.TimeoutException, TimeoutError)) for e in _chain(exc))


def refuses_connections(url: str, timeout: float) -> bool:
    """Nothing takes a fresh TCP connection to ``url``'s host and port now: it is refused,
    or reset (or closed) within ``SETTLE_S`` of being made, as the backlog of a process
    being killed is (its sockets close one by one: a request's may go before the
    listening one). A server that holds the connection, waiting for a request, is alive."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        sock = socket.create_connection((parts.hostname or "localhost", port), timeout=timeout)
    except ConnectionRefusedError:
        return True
    except OSError:  # unreachable, timed out, unknown name: not known to be gone
        return False
    with sock:
        sock.settimeout(min(timeout, SETTLE_S))
        try:
            return sock.recv(1) == b""
        except (ConnectionResetError, ConnectionAbortedError):
            return True
        except OSError:  # no answer to no request: someone is there
            return False


def gone(exc: BaseException, url: str, connect_s: float) -> bool:
    """Decisive: refused, or broken while a fresh connection is refused (module doc)."""
    return refused(exc) or (broken(exc) and refuses_connections(url, connect_s))


__all__ = ["broken", "error_fields", "gone", "is_overflow", "overflow_error", "refused",
           "refuses_connections", "retry_after", "status_error", "timed_out"]
