"""The server's engine: the embedded llama.cpp backend behind N slots, a KV store
and a KV puller.

Each slot is an ``EmbeddedBackend`` whose one context serves prefill (and, with
``decode_batch`` 1, decode and generate); the slots share one ``LoadedModel``
(``decoding.shared_model``), one ``PrefixCache`` and one ``ThreadBudget``. With ``decode_batch``
above 1 (the default) every reply, pulled from a prefill server or prefilled in a slot
here, is decoded in one ``BatchDecoder`` (``backends.batched``): a context of that many
sequences, one ``llama_decode`` per step for all, so concurrent clients share steps
instead of waiting, as llama-server's ``--parallel`` does. A slot is then held for a
prompt's prefill only. The model loads in a background thread:
until then every request gets 503 ``loading``. All methods are blocking and run in
the web server's worker threads.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ..errors import (
    ContextOverflowError,
    InvalidRequestError,
    KVIncompatibleError,
    ModelLoadError,
    OutputValidationError,
)
from ..kvidentity import ModelIdentity, identity_of
from ..kvwire import chunk_checksums, write_frames
from ..prefix_cache import PrefixCache
from ..threads import ThreadBudget
from ..types import GenerationRequest, GenerationResult, KVHandle, RequestMetrics
from .dataplane import KVDataServer
from .errors import LoadingError, OverloadedError, WrongRoleError
from .kvbudget import KVBudget
from .kvstore import KVStore
from .options import SERVER_VERSION, ServerOptions
from .prom import ServerMetrics
from .pull import KVPuller
from .slots import SlotPool
from .wire import DecodeBody, KVTimings, Outcome, PrefillReply

if TYPE_CHECKING:
    from ..backends.base import TokenCallback
    from ..backends.batched import BatchDecoder
    from ..backends.embedded import EmbeddedBackend

log = logging.getLogger(__name__)
_OTHER_PROMPT = ("the KV handle holds another prompt than this request's ({} tokens pulled, "
                 "{} in the request): decode the request that was prefilled")


class ServerEngine:
    def __init__(self, options: ServerOptions, token: str | None = None) -> None:
        self.options = options
        self.token = token  # also used to pull KV, unless a decode names another
        self.spec = options.model_spec()
        self.metrics = ServerMetrics()
        self.budget = ThreadBudget(options.threads)
        self.store = KVStore(options.kv_store_bytes, options.lease_seconds,
                             on_expired=self.metrics.kv_leases_expired.inc)
        self.puller = KVPuller(options.max_kv_bytes, options.pull_connect_timeout,
                               options.pull_read_timeout)
        self.kv_budget = KVBudget(options.kv_memory_bytes)
        self.prefix_cache = (PrefixCache(options.prefix_cache_mb * 1024 * 1024,
                                         min_tokens=options.n_batch)
                             if options.prefix_cache_mb > 0 else None)
        self.data: KVDataServer | None = None
        if options.can_prefill and options.kv_port >= 0:
            self.data = KVDataServer(options.kv_host, options.kv_port, self.kv_stream,
                                     options.lease_seconds)
        self.started = time.monotonic()
        self.state = "loading"  # loading | ok | error
        self.load_error = ""
        self.identity: ModelIdentity | None = None
        self.n_ctx = 0
        self._pool: SlotPool[EmbeddedBackend] | None = None
        self._fingerprint = ""
        self._max_tokens = 256
        self._route_name = ""
        self._loader: threading.Thread | None = None
        self._batch: BatchDecoder | None = None
        self.metrics.bind(busy=lambda: self._pool.busy if self._pool else 0,
                          waiting=lambda: self._pool.waiting if self._pool else 0,
                          handles=lambda: len(self.store),
                          store_bytes=lambda: self.store.nbytes, steps=self._steps)

    def _steps(self) -> tuple[int, int, float, int]:
        b = self._batch
        if b is None:
            return 0, 0, 0.0, 0
        w = b.worker
        return w.steps, w.step_tokens, w.step_seconds, b.active

    # -- life cycle ---------------------------------------------------------------
    def start(self) -> None:
        """Load the model in the background; /health says 503 until it is done."""
        self.store.start()
        self._loader = threading.Thread(target=self._load, name="model-loader", daemon=True)
        self._loader.start()

    def wait_loaded(self, timeout: float | None = None) -> bool:
        if self._loader is not None:
            self._loader.join(timeout)
        return self.state == "ok"

    def _load(self) -> None:
        t0 = time.perf_counter()
        try:
            from ..backends._llama import kv_fingerprint

            backends = [self._new_backend(i) for i in range(self.options.slots)]
            model = backends[0].model()
            if (self.spec.chat_template or model.chat_template) is None:
                raise ModelLoadError(
                    f"{self.options.model}: the model file has no chat template "
                    "(tokenizer.chat_template), so no chat request could be served; start "
                    "the server with --chat-template plain, a Jinja template or a file "
                    "holding one")
            self.identity = identity_of(model, self.options.flash_attn)
            for backend in backends:
                backend.warm()
            self._fingerprint = kv_fingerprint(model, int(self.options.flash_attn))
            self.n_ctx = backends[0].n_ctx
            self._max_tokens = backends[0].max_tokens
            self._route_name = backends[0].route.name
            if self.options.decode_batch > 1 and self.options.can_decode:
                self._batch = self._batch_decoder(backends[0])
                self._batch.context()
            self._pool = SlotPool(backends, self.options.queue)
        except Exception as exc:  # recorded for /health and every request; never hidden
            log.exception("loading %s failed", self.options.model)
            self.load_error = f"{type(exc).__name__}: {exc}"
            self.state = "error"
            return
        self.state = "ok"
        log.info("model %s loaded in %.2f s: %d slot(s) of %d tokens, identity %s",
                 self.spec.name, time.perf_counter() - t0, self.options.slots, self.n_ctx,
                 self.identity.identity_hash)

    def _new_backend(self, index: int) -> EmbeddedBackend:
        from ..backends.embedded import EmbeddedBackend
        from ..config import EngineConfig, RouteConfig

        route = RouteConfig(role="server", model=self.spec.name, mode="single",
                            n_ctx=self.options.n_ctx, prefix_cache_mb=0,
                            options={"flash_attn": int(self.options.flash_attn),
                                     "n_batch": self.options.n_batch})
        config = EngineConfig(routes={"server": route}, models={self.spec.name: self.spec},
                              threads=self.options.threads)
        # One prefix cache for every slot, one context per slot.
        return EmbeddedBackend(route, config, self.budget, prefix_cache=self.prefix_cache,
                               one_context=True, worker_name=f"{self.options.role}/slot{index}")

    def _batch_decoder(self, first: EmbeddedBackend) -> BatchDecoder:
        from ..backends.batched import BatchDecoder
        from ..backends.worker import Worker

        worker: Worker[Any] = Worker(f"{self.options.role}/batch", "decode", "server",
                                     first.route.name, lambda: None)
        return BatchDecoder(worker, first.route_model, first.decoding, self.budget,
                            n_cells=self.n_ctx, n_seq=self.options.decode_batch,
                            flash_attn=int(self.options.flash_attn))

    def close(self) -> None:
        if self._batch is not None:
            self._batch.close()
        if self.data is not None:
            self.data.close()
        self.store.close()
        self.puller.close()
        if self._pool is not None:
            from ..backends._llama import Context

            for backend in self._pool.items:
                backend.prefill_worker.close(Context.close)

    # -- state ----------------------------------------------------------------------
    def check_role(self, endpoint: str, roles: tuple[str, ...]) -> None:
        if self.options.role not in roles:
            raise WrongRoleError(endpoint, self.options.role, roles)

    def _ready(self) -> tuple[SlotPool[EmbeddedBackend], ModelIdentity]:
        if self.state == "error":
            raise ModelLoadError(f"the model failed to load: {self.load_error}")
        if self._pool is None or self.identity is None:
            raise LoadingError()
        return self._pool, self.identity

    def health(self) -> tuple[int, dict[str, Any]]:
        if self.state == "ok":
            return 200, {"status": "ok"}
        if self.state == "error":
            return 503, {"status": "error", "message": self.load_error}
        return 503, {"status": "loading"}

    def status(self) -> dict[str, Any]:
        pool, ident = self._pool, self.identity
        return {
            "role": self.options.role, "server_version": SERVER_VERSION,
            "uptime_s": round(time.monotonic() - self.started, 3),
            "state": self.state,
            "identity": ident.to_dict() if ident else None,
            "identity_hash": ident.identity_hash if ident else "",
            "n_ctx": self.n_ctx, "slots_total": self.options.slots,
            "slots_busy": pool.busy if pool else 0,
            "decode_batch": self.options.decode_batch,
            "decoding": self._batch.active if self._batch else 0,
            "queue_depth": pool.waiting if pool else 0, "queue_max": self.options.queue,
            "kv_handles": len(self.store), "kv_store_bytes": self.store.nbytes,
            "kv_store_max_bytes": self.store.max_bytes,
            "kv_pulled_bytes": self.kv_budget.held,
            "kv_memory_max_bytes": self.kv_budget.limit,
            "prefill_tps": round(self.metrics.prefill_tps, 2),
            "decode_tps": round(self.metrics.decode_tps, 2),
            "decode_batch_tps": round(self.metrics.decode_batch_tps, 2),
        }

    # -- requests -------------------------------------------------------------------
    def prefill(self, request: GenerationRequest) -> PrefillReply:
        pool, ident = self._ready()
        if self.store.is_full():
            raise OverloadedError(f"the KV store is full ({self.store.nbytes} bytes wait to "
                                  "be pulled)", retry_after=min(self.options.lease_seconds,
                                                                30.0), reason="kv_store_full")
        with pool.admit() as ticket, ticket.slot() as (backend, waited):
            handle = backend.prefill(request)
        m = handle.metrics
        m.queue_seconds += waited
        m.role = request.role
        self.metrics.record(m)
        state = bytes(handle.state)
        item = self.store.put(handle.prompt_tokens, handle.first_token, state,
                              chunk_checksums(state, self.options.chunk_bytes))
        return PrefillReply(item.handle, handle.first_token, len(handle.prompt_tokens),
                            item.nbytes, self.options.lease_seconds, ident.identity_hash, m)

    def generate(self, request: GenerationRequest,
                 on_token: TokenCallback | None = None) -> Outcome:
        pool, _ = self._ready()
        with pool.admit() as ticket:
            with ticket.slot() as (backend, waited):
                if self._batch is None:
                    outcome = _outcome(lambda: backend.generate(request, on_token))
                else:  # the slot prefills; the reply decodes in the batch
                    handle = backend.prefill(request)
            if self._batch is not None:
                handle.metrics.method, handle.metrics.kv_bytes = "single", 0
                outcome = _outcome(lambda: self._batch.decode(handle, on_token))
        outcome.metrics.queue_seconds += waited
        outcome.metrics.role = request.role
        self.metrics.record(outcome.metrics)
        return outcome

    def decode(self, body: DecodeBody, on_token: TokenCallback | None = None) -> Outcome:
        """Handshake with the source, pull and check its KV, load it, generate."""
        pool, ident = self._ready()
        t_start = time.perf_counter()
        request = body.request
        token = body.source_token if body.source_token is not None else self.token
        m = RequestMetrics(request_id=request.request_id, role=request.role,
                           route=self._route_name, method="disaggregated",
                           model=self.spec.name, started_at=time.time())
        with pool.admit() as ticket:
            prompt = pool.items[0].prompt_tokens(request)
            hs = self.puller.handshake(body.source, body.handle, token, ident)
            max_tokens = request.max_tokens or self._max_tokens
            if hs.n_tokens + max_tokens > self.n_ctx:
                raise ContextOverflowError(hs.n_tokens, max_tokens, self.n_ctx)
            if hs.n_tokens != len(prompt):
                raise InvalidRequestError(_OTHER_PROMPT.format(hs.n_tokens, len(prompt)))
            # The announced bytes are reserved before any is pulled, until the reply ends.
            with self.kv_budget.hold(hs.nbytes):
                pulled = self.puller.pull(body.source, body.handle, token, ident, hs)
                kv = pulled.kv
                if list(kv.tokens) != prompt:
                    raise InvalidRequestError(_OTHER_PROMPT.format(len(kv.tokens),
                                                                   len(prompt)))
                self.metrics.kv_bytes_received.inc(kv.wire_bytes)
                self.metrics.kv_transfer_seconds.inc(hs.seconds + pulled.seconds)
                m.kv_bytes = kv.nbytes
                m.kv_transfer_seconds = m.handoff_seconds = hs.seconds + pulled.seconds
                handle = KVHandle(request, kv.tokens, kv.first_token, kv.state,
                                  self._fingerprint, m, t_start)
                if self._batch is not None:
                    waited = 0.0
                    outcome = _outcome(lambda: self._batch.decode(handle, on_token))
                else:
                    with ticket.slot() as (backend, waited):
                        outcome = _outcome(lambda: backend.decode(handle, on_token))
        m.queue_seconds += waited
        load_seconds = m.handoff_seconds - m.kv_transfer_seconds
        self.metrics.record(m)
        timings = KVTimings(kv.nbytes, hs.seconds, pulled.seconds, load_seconds)
        return Outcome(outcome.text, outcome.finish_reason, outcome.tokens, m, timings,
                       outcome.output_error)

    # -- the prefill side of a KV move -----------------------------------------------
    def handshake(self, handle: str, peer: ModelIdentity) -> dict[str, Any]:
        _, ident = self._ready()
        item = self.store.get(handle, renew=True)
        problem = ident.mismatch(peer)
        if problem is not None:
            raise KVIncompatibleError(problem)
        reply = {"format_version": 1, "nbytes": item.nbytes, "n_tokens": len(item.tokens),
                 "chunk_bytes": self.options.chunk_bytes}
        if self.data is not None:
            reply.update(data_port=self.data.port, ticket=self.data.ticket(handle))
        return reply

    def kv_stream(self, handle: str) -> Iterator[bytes]:
        """The framed KV of ``handle`` (HandleNotFoundError now, not when iterated).
        The handle is freed once the stream has been sent in full."""
        _, ident = self._ready()
        item = self.store.begin_pull(handle)

        def frames() -> Iterator[bytes]:
            complete = False
            try:
                for chunk in write_frames(ident, item.tokens, item.first_token, item.state,
                                          self.options.chunk_bytes, item.checksums):
                    yield chunk
                    self.metrics.kv_bytes_sent.inc(len(chunk))
                complete = True
            finally:
                self.store.end_pull(item, complete)
                log.info("KV %s: %s (%d bytes)", handle,
                         "sent in full, freed" if complete else "stream cut", item.nbytes)

        return frames()

    def delete_kv(self, handle: str) -> None:
        self.store.delete(handle)


def _outcome(run: Callable[[], GenerationResult]) -> Outcome:
    """Run a backend call; a reply that fails the schema is still an outcome."""
    try:
        result = run()
    except OutputValidationError as exc:
        m = exc.metrics if isinstance(exc.metrics, RequestMetrics) else RequestMetrics()
        return Outcome(exc.text, m.finish_reason or "stop", (), m, output_error=str(exc))
    return Outcome(result.text, result.finish_reason, result.tokens, result.metrics)
