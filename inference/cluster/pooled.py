"""A pool of servers as one ``Backend``: choose, call, fail over safely.

A request is served by a list of *options* in order of preference (the router's
predicted time for a kvserver pair; least outstanding requests with prefix
affinity otherwise). An option that fails is reported to the health monitor and
the next one that avoids the failed server is tried, but only while the caller
has received no token: after the first token a retry could show a different
reply, so the error goes to the caller. When every server has failed, the
embedded engine serves the request (``embedded_fallback``), and the request's
metrics say which servers failed and what served instead.

A failure is decisive (the server's breaker opens at once, so no other request tries
it) when the server is gone: its connection refused, or broken under the request while
a fresh connection is refused (``http_errors.gone``: a server killed with the request in
flight). Success is reported only for the servers that served: a pair whose decode
server was replaced inside the option does not bring the dead one back up.

TTFT and total seconds are the caller's: from the call to the first token it received
and to the end, so that a request that waited on a dead server before failing over
shows the whole wait (the servers' own figures count only the attempt that served). A
reply cut after the caller saw part of it raises ``StreamInterrupted`` whose
``metrics`` name the servers that were serving it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..backends.base import Backend, TokenCallback
from ..errors import (
    BackendError,
    BackendUnavailable,
    InvalidRequestError,
    KVTransferError,
    StreamInterrupted,
)
from ..types import GenerationRequest, GenerationResult, KVHandle, RequestMetrics, WorkerHealth
from .http_errors import gone

if TYPE_CHECKING:
    from ..config import EngineConfig, RouteConfig
    from ..threads import ThreadBudget
    from .cluster import Cluster

log = logging.getLogger(__name__)

AFFINITY_CHARS = 2048  # the start of a prompt that names its shared prefix
MAX_ATTEMPTS = 8  # options tried for one request before the embedded engine


class EmitGuard:
    """Passes tokens to the caller and remembers what went out, and when the first
    piece did (``first_at``, a ``time.perf_counter`` reading; None before)."""

    def __init__(self, on_token: TokenCallback | None) -> None:
        self._on_token = on_token
        self._parts: list[str] = []
        self.first_at: float | None = None

    @property
    def emitted(self) -> bool:
        return bool(self._parts)

    @property
    def text(self) -> str:
        return "".join(self._parts)

    def __call__(self, text: str) -> None:
        if text:
            if self.first_at is None:
                self.first_at = time.perf_counter()
            self._parts.append(text)
        if self._on_token is not None:
            self._on_token(text)


@dataclass(slots=True)
class Option:
    """One way to serve a request. ``servers``: every server it uses."""

    label: str
    servers: tuple[str, ...]
    run: Callable[[GenerationRequest, EmitGuard], GenerationResult]
    method: str = "single"
    choice: str = ""
    predicted_s: float = 0.0
    pair: tuple[str, str] | None = None
    route_option: Any = None  # the router's RouteOption, told the actual time after
    fallback_reason: str = ""  # why a disaggregated route serves without a pair now
    inner_failures: list[str] = field(default_factory=list)  # servers it replaced itself


class ServerFailure(BackendError):
    """An option failed; ``servers`` are the ones to blame (empty: the pair itself)."""

    def __init__(self, servers: tuple[str, ...], cause: BackendError) -> None:
        self.servers = servers
        self.cause = cause
        super().__init__(str(cause))


def affinity_key(request: GenerationRequest) -> str:
    """Requests of one assignment share instructions, rubric and solution at the start."""
    head = "\x00".join(m.content for m in request.messages)[:AFFINITY_CHARS]
    return hashlib.sha1(head.encode("utf-8", "replace")).hexdigest()[:16]


class PooledBackend(Backend):
    """Subclasses list the options for a request (``options``)."""

    def __init__(self, route: RouteConfig, config: EngineConfig, budget: ThreadBudget,
                 cluster: Cluster) -> None:
        super().__init__(route, config, budget)
        self.cluster = cluster
        self.names = list(route.servers)
        self._embedded: Backend | None = None
        self._embedded_lock = threading.Lock()
        self._chars_per_token = 3.5  # learned from the servers' token counts
        cluster.start()

    # -- what subclasses provide ------------------------------------------------
    def options(self, request: GenerationRequest) -> list[Option]:
        raise NotImplementedError

    # -- the Backend interface --------------------------------------------------
    def execute(self, request: GenerationRequest,
                on_token: TokenCallback | None = None) -> GenerationResult:
        guard = EmitGuard(on_token)
        failed: set[str] = set()
        bad_pairs: set[tuple[str, str]] = set()
        failures: list[str] = []
        tried = 0
        t0, started = time.perf_counter(), time.time()
        # Plan again after every failure: a failed attempt may have taken seconds, and
        # the prober may have seen servers go down or come back meanwhile.
        for _ in range(MAX_ATTEMPTS):
            opt = next((o for o in self.options(request)
                        if not failed.intersection(o.servers)
                        and not (o.pair and o.pair in bad_pairs)), None)
            if opt is None:
                break
            tried += 1
            attempt_t0 = time.perf_counter()
            try:
                result = self._attempt(opt, request, guard)
            except ServerFailure as exc:
                if guard.emitted:
                    raise self._cut(request, opt, exc, guard, failures, tried,
                                    (t0, started)) from exc
                failures.append(f"{opt.label}: {type(exc.cause).__name__}: {exc.cause}")
                failed.update(exc.servers)
                if opt.pair is not None and not exc.servers:
                    bad_pairs.add(opt.pair)
                continue
            self._annotate(result, opt, failures, tried, t0, attempt_t0)
            self._callers_times(result.metrics, guard, attempt_t0, (t0, started),
                                bool(failures or opt.inner_failures))
            self._learn_chars(request, result.metrics.prompt_tokens)
            return result
        return self._last_resort(request, guard, failures, tried, (t0, started))

    @staticmethod
    def _callers_times(m: RequestMetrics, guard: EmitGuard, attempt_t0: float,
                       start: tuple[float, float], failed_over: bool) -> None:
        """TTFT from the call (the module doc); the start time too after a failover."""
        t0, started = start
        m.ttft_seconds = (guard.first_at - t0 if guard.first_at is not None
                          else attempt_t0 - t0 + m.ttft_seconds)
        if failed_over:
            m.started_at = started

    def _cut(self, request: GenerationRequest, opt: Option, exc: ServerFailure,
             guard: EmitGuard, failures: list[str], tried: int,
             start: tuple[float, float]) -> StreamInterrupted:
        """The error for a reply cut after the caller saw part of it, with metrics that
        name the servers that were serving it."""
        cut_by = (exc.servers or opt.servers)[-1]
        err = StreamInterrupted(
            f"role {request.role}: {opt.label} failed after {len(guard.text)} characters "
            f"of the reply had streamed ({exc}); not retried here, since the caller has "
            "seen part of a reply", guard.text)
        t0, started = start
        err.metrics = RequestMetrics(  # type: ignore[attr-defined]
            request_id=request.request_id, role=self.route.role, route=self.route.name,
            method=opt.method, model=self.route.model,  # type: ignore[arg-type]
            prefill_worker=opt.servers[0], decode_worker=cut_by, attempts=tried,
            failover="; ".join(failures), route_choice=opt.choice,
            predicted_seconds=opt.predicted_s,
            ttft_seconds=guard.first_at - t0 if guard.first_at is not None else 0.0,
            total_seconds=time.perf_counter() - t0, started_at=started,
            finished_at=time.time())
        return err

    def run_option(self, opt: Option, request: GenerationRequest) -> GenerationResult:
        """Serve ``request`` by ``opt`` alone, with no failover: how benchmarks and
        tests measure each way a request could have gone."""
        return self._attempt(opt, request, EmitGuard(None))

    def gone(self, name: str, exc: BaseException) -> bool:
        """Is ``name`` gone, by how ``exc`` failed? (decisive: the module doc)"""
        return gone(exc, self.cluster.endpoints[name].url, self.config.timeouts.connect)

    def _attempt(self, opt: Option, request: GenerationRequest,
                 guard: EmitGuard) -> GenerationResult:
        monitor = self.cluster.monitor
        t0 = time.perf_counter()
        try:
            result = opt.run(request, guard)
        except InvalidRequestError:
            raise  # the request's own fault: no server is to blame, nothing to retry
        except ServerFailure as exc:  # the option named the server to blame itself
            for name in exc.servers:
                monitor.report_failure(name, f"{type(exc.cause).__name__}: {exc.cause}",
                                       decisive=self.gone(name, exc.cause))
            raise
        except KVTransferError as exc:
            # The pair failed (bad bytes, refused handshake, lease lost): the servers
            # may be fine on their own.
            log.warning("role %s: %s: KV handoff failed: %s", request.role, opt.label, exc)
            for name in opt.servers:
                self.cluster.monitor.record_event(name, "kv_error", f"{opt.label}: {exc}")
            raise ServerFailure((), exc) from exc
        except BackendError as exc:
            blame = opt.servers[-1:] if len(opt.servers) > 1 else opt.servers
            for name in blame:
                monitor.report_failure(name, f"{type(exc).__name__}: {exc}",
                                       decisive=self.gone(name, exc))
            raise ServerFailure(blame, exc) from exc
        for name in self._served(opt, result):
            monitor.report_success(name, time.perf_counter() - t0)
        return result

    def _served(self, opt: Option, result: GenerationResult) -> list[str]:
        """The servers that served: one the option replaced (a dead decode server) is
        not among them."""
        m = result.metrics
        served = [n for n in dict.fromkeys((m.prefill_worker, m.decode_worker))
                  if n in self.cluster.endpoints]
        return served or list(opt.servers)

    def _annotate(self, result: GenerationResult, opt: Option, failures: list[str],
                  tried: int, t0: float, attempt_t0: float) -> None:
        m = result.metrics
        m.route = self.route.name
        m.role = self.route.role
        m.attempts = tried
        m.route_choice = opt.choice
        m.predicted_seconds = opt.predicted_s
        m.total_seconds = time.perf_counter() - t0
        if opt.fallback_reason and opt.method != "disaggregated":
            failures = [opt.fallback_reason, *failures]  # a disaggregated route, no pair
        if opt.inner_failures:  # servers the option itself replaced (a decode server)
            failures = [*failures, *opt.inner_failures]
            opt = dataclasses.replace(opt, label=f"pair {m.prefill_worker} -> "
                                      f"{m.decode_worker}")
        if failures:
            m.method = "fallback"
            m.failover = "; ".join(failures) + f" -> served by {opt.label}"
            for name in self._served(opt, result):
                self.cluster.monitor.record_event(name, "failover", m.failover)
            log.warning("role %s: failed over: %s", self.route.role, m.failover)
        else:
            m.method = opt.method  # type: ignore[assignment]
        if opt.route_option is not None:  # the router learns how good its guess was:
            # the time of the option it chose, not of the failed attempts before it
            self.cluster.cost.record_outcome(opt.route_option,
                                             time.perf_counter() - attempt_t0)

    def _learn_chars(self, request: GenerationRequest, prompt_tokens: int) -> None:
        """Characters per token of this route's model, from the servers' own counts."""
        chars = sum(len(m.content) for m in request.messages)
        if prompt_tokens > 0 and chars > 0:
            self._chars_per_token = 0.8 * self._chars_per_token + 0.2 * chars / prompt_tokens

    def _last_resort(self, request: GenerationRequest, guard: EmitGuard, failures: list[str],
                     tried: int, start: tuple[float, float]) -> GenerationResult:
        if not failures:
            failures = [f"no server of {', '.join(self.names)} is up"]
        summary = "; ".join(failures)
        if not self.route.embedded_fallback:
            raise BackendUnavailable(f"role {request.role}: no server could serve the request "
                                     f"({summary})")
        log.warning("role %s: every server failed (%s); the embedded engine serves it",
                    request.role, summary)
        attempt_t0 = time.perf_counter()
        result = self.embedded().generate(request, guard)
        m = result.metrics
        m.method = "fallback"
        m.attempts = tried + 1
        m.failover = f"{summary} -> served by the embedded engine"
        for name in self.names:
            self.cluster.monitor.record_event(name, "failover", m.failover)
        m.total_seconds = time.perf_counter() - start[0]
        self._callers_times(m, guard, attempt_t0, start, True)
        return result

    def embedded(self) -> Backend:
        """The in-process engine for ``route.model``, built on first need."""
        from ..backends.embedded import EmbeddedBackend

        with self._embedded_lock:
            if self._embedded is None:
                route = dataclasses.replace(self.route, backend="embedded", servers=(),
                                            mode="single")
                self._embedded = EmbeddedBackend(route, self.config, self.budget)
            return self._embedded

    def estimate_tokens(self, request: GenerationRequest) -> int:
        chars = sum(len(m.content) for m in request.messages)
        return max(1, int(chars / self._chars_per_token))

    def generate(self, request: GenerationRequest,
                 on_token: TokenCallback | None = None) -> GenerationResult:
        return self.execute(request, on_token)

    def prefill(self, request: GenerationRequest) -> KVHandle:
        raise BackendError(f"role {self.route.role}: a {self.route.backend} route hands KV "
                           "between servers inside execute(); it has no local KV to return")

    def decode(self, handle: KVHandle, on_token: TokenCallback | None = None) -> GenerationResult:
        raise BackendError(f"role {self.route.role}: a {self.route.backend} route decodes "
                           "on its servers inside execute()")

    def health(self) -> list[WorkerHealth]:
        cards = self.cluster.cards(self.names, self.route.role, self.route.name)
        if self._embedded is not None:
            cards.extend(self._embedded.health())
        return cards

    def context_length(self) -> int | None:
        sizes = [s.status.n_ctx for s in self.cluster.usable(self.names)
                 if s.status is not None and s.status.n_ctx]
        return self.route.n_ctx or (min(sizes) if sizes else None)

    def close(self) -> None:
        if self._embedded is not None:
            self._embedded.close()

