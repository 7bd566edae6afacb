"""Typed values for remote servers and the one interface each server protocol implements.

An ``Endpoint`` is one server as the configuration names it; ``Timeouts`` are the
per-phase limits of a request; a ``Probe`` is what one health check found. A
``Transport`` talks to one endpoint in one protocol (our kvserver, OpenAI, Ollama)
and knows nothing of pools, health or failover: ``pooled`` adds those.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

import httpx

from .errors import ConfigError
from .types import GenerationRequest, GenerationResult

ServerRole = Literal["prefill", "decode", "both"]
SERVER_ROLES = ("prefill", "decode", "both")
Protocol = Literal["kvserver", "openai", "ollama"]
PROTOCOLS = ("kvserver", "openai", "ollama")
TokenCallback = Callable[[str], None]
# The settings each protocol's transport takes from a server's ``options`` table.
TRANSPORT_OPTIONS: dict[str, tuple[str, ...]] = {
    "kvserver": (),
    "openai": ("response_format",),  # json_schema (default) | json_object | none
    "ollama": ("keep_alive",),  # how long Ollama keeps the model loaded ("5m", 0, ...)
}


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One server. ``model`` is the model name to ask an OpenAI/Ollama server for
    (our own servers serve one model and ignore it)."""

    name: str
    url: str
    protocol: Protocol = "kvserver"
    role: ServerRole = "both"
    token: str | None = field(default=None, repr=False)
    weight: float = 1.0
    model: str = ""
    # Protocol-specific settings handed to the transport (see TRANSPORT_OPTIONS).
    options: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"server {self.name!r}: url {self.url!r} is not an http(s) URL "
                              "with a host (for example http://10.0.0.5:8090)")
        object.__setattr__(self, "url", self.url.rstrip("/"))
        if self.protocol not in PROTOCOLS:
            raise ConfigError(f"server {self.name!r}: protocol {self.protocol!r} is not one of "
                              f"{', '.join(PROTOCOLS)}")
        if self.role not in SERVER_ROLES:
            raise ConfigError(f"server {self.name!r}: role {self.role!r} is not one of "
                              f"{', '.join(SERVER_ROLES)}")
        if not self.weight > 0:
            raise ConfigError(f"server {self.name!r}: weight must be > 0")
        allowed = TRANSPORT_OPTIONS[self.protocol]
        unknown = set(self.options) - set(allowed)
        if unknown:
            raise ConfigError(f"server {self.name!r}: unknown options "
                              f"{', '.join(sorted(unknown))} for protocol {self.protocol!r}; "
                              f"valid: {', '.join(allowed) or '(none)'}")

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    @property
    def can_prefill(self) -> bool:
        return self.role in ("prefill", "both")

    @property
    def can_decode(self) -> bool:
        return self.role in ("decode", "both")


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Seconds allowed per phase of a remote request."""

    connect: float = 3.0
    prefill: float = 300.0  # prompt evaluation on the prefill server
    kv_pull: float = 120.0  # handshake + transfer + load on the decode server
    first_token: float = 300.0  # request sent -> first token (single mode)
    token_gap: float = 60.0  # between two streamed tokens
    probe: float = 2.0  # one health check

    def __post_init__(self) -> None:
        for name in ("connect", "prefill", "kv_pull", "first_token", "token_gap", "probe"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"[timeouts] {name} must be > 0 seconds")


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """What a server says about itself (our /status; the others' equivalents)."""

    model: str = ""
    identity_hash: str = ""  # empty where the protocol has none (OpenAI, Ollama)
    role: str = ""
    version: str = ""
    n_ctx: int = 0
    slots_total: int = 0
    slots_busy: int = 0
    queue_depth: int = 0
    prefill_tps: float = 0.0
    decode_tps: float = 0.0
    # tokens per second across a batching server's batch (0: not reported or not batched)
    decode_batch_tps: float = 0.0
    identity: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Probe:
    """One health check. ``loading``: the server answers but is not ready yet."""

    ok: bool
    latency_s: float
    at: float = field(default_factory=time.time)
    status: ServerStatus | None = None
    loading: bool = False
    error: str = ""
    refused: bool = False  # refused, or broke and a new one is refused: gone, not slow
    slow: bool = False  # no answer within the probe timeout: slow, not known to be gone


class Transport(ABC):
    """One endpoint in one protocol. Thread-safe: the pool calls it from many threads.

    Errors are ``inference.errors`` types: ``BackendUnavailable`` when the server
    cannot be reached, is loading, or answers 503 (``retry_after`` set when it said);
    ``InvalidRequestError``/``ContextOverflowError`` for the request's own faults;
    ``OutputValidationError`` for output that fails the request's schema;
    ``BackendError`` for anything else the server did wrong (garbage, a cut stream).
    """

    def __init__(self, endpoint: Endpoint, timeouts: Timeouts) -> None:
        self.endpoint = endpoint
        self.timeouts = timeouts

    @abstractmethod
    def probe(self) -> Probe:
        """A cheap health check; never raises."""

    @abstractmethod
    def generate(self, request: GenerationRequest,
                 on_token: TokenCallback | None = None) -> GenerationResult:
        """One server prefills and decodes (method ``single``); metrics as measured."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Close connections."""


class StreamWatchdog:
    """Closes a stream that stalls: ``first`` seconds to the first ``tick``, then
    ``gap`` seconds between ticks. ``fired`` tells the reader why its read failed.

        with StreamWatchdog(lambda: abort_stream(response), first=60, gap=30) as dog:
            for line in response.iter_lines():
                dog.tick()
    """

    def __init__(self, on_stall: Callable[[], None], first: float, gap: float) -> None:
        self._on_stall = on_stall
        self._first = first
        self._gap = gap
        self._deadline = time.monotonic() + first
        self._ticked = False
        self._cond = threading.Condition()
        self._done = False
        self.fired = ""
        self._thread = threading.Thread(target=self._run, name="stream-watchdog", daemon=True)

    def __enter__(self) -> StreamWatchdog:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with self._cond:
            self._done = True
            self._cond.notify()
        self._thread.join()

    def tick(self) -> None:
        with self._cond:
            self._ticked = True
            self._deadline = time.monotonic() + self._gap

    def _run(self) -> None:
        with self._cond:
            while not self._done:
                left = self._deadline - time.monotonic()
                if left <= 0:
                    self.fired = (f"no token within {self._gap:g} s" if self._ticked
                                  else f"no first token within {self._first:g} s")
                    break
                self._cond.wait(left)
        if self.fired:
            self._on_stall()


def abort_stream(response: httpx.Response) -> None:
    """Make a read blocked on ``response`` in another thread return now.

    ``response.close()`` from another thread does not wake a thread blocked in
    ``recv`` (it waits for the read timeout); shutting the socket down does.
    """
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
