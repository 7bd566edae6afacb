"""DisaggregatedClient: the one entry point the grader and the app use.

A role -> route table (from the config file, or the embedded default) decides
which backend serves a request. ``generate`` runs one request; ``generate_many``
runs several in parallel threads (the grader's code and feedback layers go
together); ``stream`` yields text as it is decoded. Every request's metrics,
failed ones included, go to the history; what happens to remote servers (health
events, failovers, KV link measurements, route decisions) goes to the cluster
journal in the same file, for the Dashboard of another process to read.
"""

from __future__ import annotations

import dataclasses
import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

from .backends import Backend, TokenCallback
from .cluster.cluster import Cluster
from .cluster.journal import ClusterJournal
from .config import EngineConfig, RouteConfig, load_config
from .errors import (
    BackendError,
    ConfigError,
    InferenceError,
    OutputValidationError,
    StreamInterrupted,
    UnknownRoleError,
)
from .grammar import check_schema
from .metrics import MetricsHistory
from .prompting import estimate_prompt_tokens
from .registry import backend_names, create_backend
from .threads import ThreadBudget
from .types import (
    ChatMessage,
    GenerationRequest,
    GenerationResult,
    RequestMetrics,
    TokenCount,
    WorkerHealth,
)

log = logging.getLogger(__name__)

IndexedTokenCallback = Callable[[int, str], None]

# A reply that failed its JSON schema is tried once more (see ``generate``): with this
# much more room when max_tokens cut it, and another seed where decoding samples.
RETRY_GROWTH = 1.5
RETRY_SEED_STEP = 7919
RETRY_MARGIN = 16  # tokens of the context kept free when the retry's room grows


class DisaggregatedClient:
    def __init__(self, config: EngineConfig | None = None,
                 history: MetricsHistory | None = None) -> None:
        self.config = config if config is not None else load_config()
        known = backend_names()
        for route in self.config.routes.values():
            if route.backend not in known:
                raise ConfigError(f"role {route.role!r}: unknown backend {route.backend!r}; "
                                  f"known backends are {', '.join(known)}")
        self.budget = ThreadBudget(self.config.threads)
        self.history = history if history is not None else MetricsHistory(
            self.config.history_db, self.config.history_size)
        self._backends: dict[str, Backend] = {}
        self._lock = threading.Lock()
        self._cluster: Cluster | None = None
        # Beside the request history; it touches the file only when it has something
        # to write (a remote route served) or the Dashboard reads it.
        self.journal: ClusterJournal | None = (
            ClusterJournal(self.config.history_db) if self.config.history_db else None)

    @property
    def cluster(self) -> Cluster | None:
        """The remote servers (health, routing), once a remote route has been used."""
        return self._cluster

    # -- routing ----------------------------------------------------------------
    @property
    def roles(self) -> list[str]:
        return sorted(self.config.routes)

    def route(self, role: str) -> RouteConfig:
        try:
            return self.config.routes[role]
        except KeyError:
            raise UnknownRoleError(role, list(self.config.routes)) from None

    def backend(self, role: str) -> Backend:
        route = self.route(role)
        with self._lock:
            backend = self._backends.get(role)
            if backend is None:
                cluster = None
                if route.remote:
                    if self._cluster is None:
                        self._cluster = Cluster(self.config, self.journal)
                    cluster = self._cluster
                backend = self._backends[role] = create_backend(route, self.config, self.budget,
                                                                cluster)
            return backend

    # -- prompts ----------------------------------------------------------------
    def context_length(self, role: str) -> int | None:
        """The context a prompt of ``role`` must fit (with its reply): what the route's
        backend knows (the embedded context, the remote servers' smallest), else the
        route's ``n_ctx``, else the model table's; None when nothing says."""
        route = self.route(role)
        known = self.backend(role).context_length() or route.n_ctx
        if known:
            return known
        try:
            return self.config.model(route.model).n_ctx
        except InferenceError:  # a remote model the table does not list
            return None

    def count_tokens(self, role: str, messages: Sequence[ChatMessage]) -> TokenCount:
        """The tokens ``messages`` take as ``role``'s prompt: exact where the route's
        backend tokenizes here (the embedded engine: its chat template and tokenizer,
        and the tokens are kept for that prompt's prefill, so a prompt counted and then
        sent is tokenized once), an upper estimate otherwise (remote servers)."""
        request = GenerationRequest(role=role, messages=tuple(messages))
        tokens = self.backend(role).prompt_tokens(request)
        if tokens is not None:
            return TokenCount(len(tokens), exact=True)
        return TokenCount(estimate_prompt_tokens(request.messages), exact=False)

    # -- requests ---------------------------------------------------------------
    def generate(self, request: GenerationRequest, on_token: TokenCallback | None = None,
                 restartable: bool = False) -> GenerationResult:
        """Serve one request. ``restartable``: the caller accepts that a reply whose
        server died mid-stream starts again on another server (its ``on_token`` then
        sees a line saying so, and the text again from the start); without it that
        request fails with StreamInterrupted.

        Bad JSON: this is the one place a reply whose JSON fails its schema is tried
        again, once, where that can change it: a reply cut by max_tokens gets
        RETRY_GROWTH times the room, as far as the route's context allows (greedy
        decoding then writes the same reply further); a sampled one (not greedy decoding
        on our engine) gets another seed; a greedy reply that ended by itself would come
        out the same and is not tried again, nor is a stream the caller cannot restart.
        The second failure is the caller's; a reply that passed on its second try says
        what the first failed of in ``retried_after``.

        The history gets a row per reply: a restarted one is one row, not an error and
        a success, with the note "restarted after a cut stream on SERVER"; a reply tried
        again counts its TTFT and total seconds from the caller's first attempt."""
        route = self.route(request.role)
        if not request.request_id:
            request = dataclasses.replace(request, request_id=uuid.uuid4().hex[:12])
        start = (time.perf_counter(), time.time())
        try:
            return self._generate(route, request, on_token, start, record_cut=not restartable)
        except OutputValidationError as exc:
            before = exc.metrics if isinstance(exc.metrics, RequestMetrics) else None
            retry = None if on_token is not None and not restartable else \
                self._json_retry(request, before)
            if retry is None:
                raise
            log.warning("role %s: %s; trying the reply once more (max_tokens %s)",
                        request.role, exc, retry.max_tokens)
            if on_token is not None:
                on_token("\n[the reply was not valid JSON; trying once more]\n")
            result = self._generate(route, retry, on_token, start,
                                    retried=(f"tried again after: {exc}", before))
            return dataclasses.replace(result, retried_after=str(exc))
        except StreamInterrupted as exc:
            if not restartable:
                raise
            before = getattr(exc, "metrics", None)
            server = before.decode_worker if isinstance(before, RequestMetrics) else ""
            cause = exc.__cause__ or exc
            note = (f"restarted after a cut stream{f' on {server}' if server else ''} "
                    f"({len(exc.partial)} characters had streamed): {cause}")
            log.warning("role %s: %s; restarting the reply on another path", request.role,
                        note)
            if on_token is not None:
                on_token("\n[the server failed mid-reply; restarting on another server]\n")
            return self._generate(route, request, on_token, start, retried=(
                note, before if isinstance(before, RequestMetrics) else None))

    def _json_retry(self, request: GenerationRequest,
                    before: RequestMetrics | None) -> GenerationRequest | None:
        """The second try of a request whose reply failed its schema, or None where a
        second try could not change the reply (``generate`` says when)."""
        changes: dict[str, object] = {}
        if before is not None and before.finish_reason == "length":
            first = request.max_tokens or before.decode_tokens
            n_ctx = self.context_length(request.role)
            if first and n_ctx and before.prompt_tokens:
                room = n_ctx - RETRY_MARGIN - before.prompt_tokens
                grown = max(first, min(int(first * RETRY_GROWTH), room))
                if grown > first:
                    changes["max_tokens"] = grown
        if not changes and self.backend(request.role).deterministic(request):
            return None
        return dataclasses.replace(request, seed=request.seed + RETRY_SEED_STEP,
                                   request_id=uuid.uuid4().hex[:12], **changes)

    def _generate(self, route: RouteConfig, request: GenerationRequest,
                  on_token: TokenCallback | None, start: tuple[float, float], *,
                  record_cut: bool = True,
                  retried: tuple[str, RequestMetrics | None] | None = None
                  ) -> GenerationResult:
        """One try, recorded in the history (a cut stream only with ``record_cut``).
        ``retried``: this is the caller's second try, after what the note says; ``start``
        is the caller's first (``perf_counter``, epoch seconds)."""
        t_try = time.perf_counter()
        try:
            if request.json_schema is not None:
                check_schema(request.json_schema)
            result = self.backend(request.role).execute(request, on_token)
        except StreamInterrupted as exc:
            if record_cut:
                self._record_failure(route, request, exc, start, t_try, retried)
            raise
        except InferenceError as exc:
            self._record_failure(route, request, exc, start, t_try, retried)
            raise
        except Exception as exc:  # a bug or a library error: typed, recorded, re-raised
            self._record_failure(route, request, exc, start, t_try, retried)
            raise BackendError(f"role {request.role!r}: {type(exc).__name__}: {exc}") from exc
        m = result.metrics
        m.request_id = m.request_id or request.request_id  # a server may not echo it
        if retried is not None:
            _after_retry(m, start, t_try, *retried)
        self.history.record(m)
        log.info("request %s role=%s route=%s method=%s prompt=%d cached=%d out=%d "
                 "ttft=%.3fs total=%.3fs", m.request_id, m.role, m.route, m.method,
                 m.prompt_tokens, m.cached_tokens, m.decode_tokens, m.ttft_seconds,
                 m.total_seconds)
        return result

    def _record_failure(self, route: RouteConfig, request: GenerationRequest,
                        exc: BaseException, start: tuple[float, float], t_try: float,
                        retried: tuple[str, RequestMetrics | None] | None) -> None:
        m = getattr(exc, "metrics", None)
        if not isinstance(m, RequestMetrics):
            m = RequestMetrics(request_id=request.request_id, role=request.role,
                               route=route.name, model=route.model)
        # A request that failed before the backend timed it still happened at a time.
        m.started_at = m.started_at or start[1]
        m.finished_at = m.finished_at or time.time()
        m.error = f"{type(exc).__name__}: {exc}"
        if retried is not None:
            _after_retry(m, start, t_try, *retried)
        self.history.record(m)
        log.info("request %s role=%s route=%s failed: %s", request.request_id, request.role,
                 route.name, m.error)

    def generate_many(self, requests: Sequence[GenerationRequest],
                      on_token: IndexedTokenCallback | None = None,
                      return_exceptions: bool = False,
                      restartable: bool = False) -> list[GenerationResult | InferenceError]:
        """Run the requests in parallel threads; results in the order given.

        With ``return_exceptions`` a failed request yields its InferenceError in
        its slot instead of raising (the others still finish).
        """
        if not requests:
            return []
        for r in requests:
            self.route(r.role)  # unknown roles fail before anything runs

        def run(i: int, r: GenerationRequest) -> GenerationResult:
            cb = (lambda s: on_token(i, s)) if on_token is not None else None
            return self.generate(r, cb, restartable)

        with ThreadPoolExecutor(max_workers=len(requests),
                                thread_name_prefix="generate") as pool:
            futures = [pool.submit(run, i, r) for i, r in enumerate(requests)]
        out: list[GenerationResult | InferenceError] = []
        for f in futures:
            exc = f.exception()
            if exc is None:
                out.append(f.result())
            elif return_exceptions and isinstance(exc, InferenceError):
                out.append(exc)
            else:
                raise exc
        return out

    def stream(self, request: GenerationRequest) -> Iterator[str | GenerationResult]:
        """Yield text pieces as they are decoded, then the GenerationResult."""
        q: queue.Queue[tuple[str, object]] = queue.Queue()

        def run() -> None:
            try:
                q.put(("done", self.generate(request, lambda s: q.put(("token", s)))))
            except BaseException as exc:  # handed to the consumer and re-raised there
                q.put(("error", exc))

        threading.Thread(target=run, name="stream", daemon=True).start()
        while True:
            kind, value = q.get()
            if kind == "token":
                yield str(value)
            elif kind == "done":
                assert isinstance(value, GenerationResult)
                yield value
                return
            else:
                assert isinstance(value, BaseException)
                raise value

    # -- operations -------------------------------------------------------------
    def warm(self, roles: Sequence[str] | None = None) -> None:
        """Load every route's models and contexts now instead of on first use."""
        for role in roles or self.roles:
            self.backend(role).warm()

    def health(self) -> list[WorkerHealth]:
        """Every worker and server once; a server that serves several roles lists them
        all in ``role`` ("code, feedback")."""
        out: list[WorkerHealth] = []
        seen: dict[str, int] = {}
        for role in self.roles:
            try:
                for h in self.backend(role).health():
                    if h.name in seen and self.route(role).remote:
                        i = seen[h.name]
                        out[i] = dataclasses.replace(out[i], role=f"{out[i].role}, {h.role}")
                        continue
                    seen[h.name] = len(out)
                    out.append(h)
            except InferenceError as exc:
                route = self.route(role)
                out.append(WorkerHealth(name=f"{role}", role=role, route=route.name,
                                        kind="route", state="down", model=route.model,
                                        detail=str(exc)))
        return out

    def judging_warnings(self) -> list[str]:
        """Roles trusted to judge (``can_judge``) whose model is one the project knows is
        too small to (``inference.trust``); empty when there are none."""
        from .trust import judging_warnings

        return judging_warnings(self.config, self.health())

    def close(self) -> None:
        with self._lock:
            for backend in self._backends.values():
                backend.close()
            self._backends.clear()
            if self._cluster is not None:
                self._cluster.close()
                self._cluster = None
        if self.journal is not None:
            self.journal.close()
        self.history.close()

    def __enter__(self) -> DisaggregatedClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _after_retry(m: RequestMetrics, start: tuple[float, float], t_try: float, note: str,
                 before: RequestMetrics | None) -> None:
    """``m``, of the caller's second try, as the caller saw the whole: TTFT and total
    seconds from its first try's start, the first try's attempts counted, and the note."""
    t0, started = start
    if m.ttft_seconds > 0:
        m.ttft_seconds += t_try - t0
    m.total_seconds = time.perf_counter() - t0
    m.started_at = started
    m.attempts += before.attempts if before is not None else 1
    m.failover = "; ".join(x for x in (note, m.failover) if x)
