"""The embedded backend: llama.cpp in-process, prefill and decode on separate contexts.

A route gets two workers, each owning its own llama.cpp context over one shared
copy of the weights. ``prefill`` evaluates the prompt on the prefill context
(resuming from the longest cached prefix), samples the first token, and copies
the sequence's KV out with ``llama_state_seq_get_data``. ``decode`` loads those
bytes into the decode context with ``llama_state_seq_set_data`` and generates
the rest. While one request decodes, the next one can already prefill.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from ..config import EngineConfig, RouteConfig
from ..errors import KVTransferError
from ..prefix_cache import PrefixCache, common_prefix
from ..prompting import render_chat
from ..threads import ThreadBudget
from ..types import GenerationRequest, GenerationResult, KVHandle, RequestMetrics, WorkerHealth
from ._llama import Context, LoadedModel
from .base import Backend, TokenCallback
from .batched import BatchDecoder
from .decoding import Decoding, RouteModel
from .prompt_tokens import PromptTokens
from .worker import Worker

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _Prefill:
    tokens: list[int]
    cached: int
    first: int
    perf_seconds: float
    perf_tokens: int
    wall_seconds: float


class EmbeddedBackend(Backend):
    def __init__(self, route: RouteConfig, config: EngineConfig, budget: ThreadBudget, *,
                 prefix_cache: PrefixCache | None = None, one_context: bool = False,
                 worker_name: str | None = None) -> None:
        """``prefix_cache``: share one cache between backends (a server's slots) instead
        of the route's own; ``one_context``: prefill and decode on the same context (a
        server slot, where the KV arrives from another machine); ``worker_name``: how
        health and metrics name that worker."""
        super().__init__(route, config, budget)
        self.spec = config.model(route.model)
        self.n_ctx = route.n_ctx or self.spec.n_ctx
        self.flash_attn = int(route.options.get("flash_attn", -1))
        # 256 prefills as fast as 512 here (268 vs 269 tok/s) and wastes less of
        # a cached prefix to alignment (see _reuse_prefix).
        self.n_batch = int(route.options.get("n_batch", 256))
        defaults = self.spec.defaults
        self.decoding = Decoding(
            max_tokens=route.max_tokens or int(defaults.get("max_tokens", 256)),
            temperature=(route.temperature if route.temperature is not None
                         else float(defaults.get("temperature", 0.0))))
        cache_bytes = int(route.prefix_cache_mb) * 1024 * 1024
        self.prefix_cache = prefix_cache if prefix_cache is not None else (
            PrefixCache(cache_bytes, min_tokens=self.n_batch) if cache_bytes > 0 else None)
        self.route_model = RouteModel(self.spec)
        self.prompts = PromptTokens()  # a prompt counted while fitting is not tokenized again
        self.prefill_worker: Worker[Context] = Worker(
            worker_name or f"{route.role}/prefill", "prefill", route.role, route.name,
            self._new_context)
        self.decode_worker: Worker[Context] = self.prefill_worker if one_context else Worker(
            f"{route.role}/decode", "decode", route.role, route.name, self._new_context)
        # requests decoding at once share one context, a sequence each (batched.py)
        self.decode_batch = int(route.options.get("decode_batch", 4))
        self.batch: BatchDecoder | None = None
        if not one_context and route.mode == "disaggregated" and self.decode_batch > 1:
            self.batch = BatchDecoder(
                self.decode_worker, self.route_model, self.decoding, self.budget,
                n_cells=int(route.options.get("decode_cells", self.n_ctx)),
                n_seq=self.decode_batch, flash_attn=self.flash_attn)

    # -- set-up ---------------------------------------------------------------
    @property
    def max_tokens(self) -> int:
        """The route's max_tokens, for requests that set none."""
        return self.decoding.max_tokens

    def model(self) -> LoadedModel:
        """The route's model (loaded on first use)."""
        return self.route_model.get()

    def _new_context(self) -> Context:
        return Context(self.model(), self.n_ctx, n_batch=self.n_batch,
                       threads=self.budget.total, flash_attn=self.flash_attn)

    def warm(self) -> None:
        self.prefill_worker.warm()
        if self.batch is not None:
            self.batch.context()
        elif self.route.mode == "disaggregated":
            self.decode_worker.warm()

    def close(self) -> None:
        self.prefill_worker.close(Context.close)
        if self.batch is not None:
            self.batch.close()
        else:
            self.decode_worker.close(Context.close)

    def health(self) -> list[WorkerHealth]:
        workers = [self.prefill_worker]
        if self.route.mode == "disaggregated":
            workers.append(self.decode_worker)
        out = []
        for w in workers:
            h = w.health(self.spec.name, self.route_model.load_error)
            if w is self.prefill_worker and self.prefix_cache is not None:
                h.extra.update(prefix_cache_entries=len(self.prefix_cache),
                               prefix_cache_mb=round(self.prefix_cache.nbytes / 2**20, 1),
                               prefix_cache_hits=self.prefix_cache.hits)
            out.append(h)
        return out

    def context_length(self) -> int | None:
        return self.n_ctx

    # -- the request path -----------------------------------------------------
    def prompt_tokens(self, request: GenerationRequest) -> list[int]:
        """The prompt's tokens, remembered by its messages (``PromptTokens``)."""
        return self.prompts.get(request.messages, lambda: self.tokenize(self.prompt_text(request)))

    def prompt_text(self, request: GenerationRequest) -> str:
        """The request's chat rendered with the model's (or the spec's) template."""
        model = self.model()
        template = self.spec.chat_template or model.chat_template
        return render_chat(request.messages, template, model.bos_text, model.eos_text)

    def tokenize(self, text: str) -> list[int]:
        """``text`` in the model's tokens (every prompt's tokens come from here)."""
        return self.model().tokenize(text)

    def _metrics(self, request: GenerationRequest, method: str) -> RequestMetrics:
        return RequestMetrics(
            request_id=request.request_id, role=self.route.role, route=self.route.name,
            method=method, model=self.spec.name, started_at=time.time(),  # type: ignore[arg-type]
        )

    def deterministic(self, request: GenerationRequest) -> bool:
        return self.decoding.deterministic(request)

    def _run_prefill(self, ctx: Context, request: GenerationRequest) -> _Prefill:
        t0 = time.perf_counter()
        tokens = self.prompt_tokens(request)
        ctx.check_fits(len(tokens), self.decoding.max_tokens_of(request))
        cached = self._reuse_prefix(ctx, tokens)
        ctx.perf_reset()
        with self.budget.slot():
            for start in range(cached, len(tokens), ctx.n_batch):
                ctx.set_threads(self.budget.share())
                ctx.eval(tokens[start:start + ctx.n_batch])
        perf = ctx.perf()
        with self.decoding.sampler(self.model(), request, request.seed) as sampler:
            first = sampler.sample(ctx)
        return _Prefill(tokens, cached, first, perf.seconds, perf.tokens,
                        time.perf_counter() - t0)

    def _reuse_prefix(self, ctx: Context, tokens: list[int]) -> int:
        """Keep or restore the longest known prefix of ``tokens`` in ctx; its length.

        The length is rounded down to a multiple of n_batch, and prompts are
        evaluated in n_batch chunks from position 0: every token is then computed
        in the same batch shape as in a cold prefill, so reuse is bit-exact and
        a regrade gives the same output whatever the cache held. (Reusing an
        unaligned prefix changes the batch shapes, and with them the float
        rounding; greedy output then differs now and then.)
        """
        if self.prefix_cache is None:
            ctx.clear()
            return 0
        align = ctx.n_batch
        live = min(common_prefix(ctx.tokens, tokens), len(tokens) - 1) // align * align
        entry, cached = self.prefix_cache.lookup(tokens)
        cached = cached // align * align
        if entry is not None and cached > live:
            ctx.set_state(entry.state, entry.tokens)
            ctx.truncate(cached)
            return cached
        ctx.truncate(live)
        return live

    def prefill(self, request: GenerationRequest) -> KVHandle:
        t_start = time.perf_counter()
        m = self._metrics(request, "disaggregated")
        with self.prefill_worker.hold() as (ctx, queued):
            pre = self._run_prefill(ctx, request)
            t_get = time.perf_counter()
            state = ctx.get_state()
            get_seconds = time.perf_counter() - t_get
            if self.prefix_cache is not None:
                self.prefix_cache.put(pre.tokens, state)
        m.prefill_worker = self.prefill_worker.name
        m.queue_seconds = queued
        self._fill_prefill(m, pre)
        m.kv_bytes = len(state)
        m.handoff_seconds = get_seconds
        return KVHandle(request, tuple(pre.tokens), pre.first, state, ctx.fingerprint, m, t_start)

    @staticmethod
    def _fill_prefill(m: RequestMetrics, pre: _Prefill) -> None:
        m.prompt_tokens = len(pre.tokens)
        m.cached_tokens = pre.cached
        m.prefill_tokens = pre.perf_tokens
        m.prefill_seconds = pre.perf_seconds

    def decode(self, handle: KVHandle, on_token: TokenCallback | None = None) -> GenerationResult:
        if self.batch is not None:
            return self.batch.decode(handle, on_token)
        request, m = handle.request, handle.metrics
        with self.decode_worker.hold() as (ctx, queued):
            if handle.fingerprint != ctx.fingerprint:
                raise KVTransferError(
                    f"KV state from a different model or layout ({handle.fingerprint} != "
                    f"{ctx.fingerprint}); refusing to load it")
            t_set = time.perf_counter()
            ctx.set_state(handle.state, handle.prompt_tokens)
            m.handoff_seconds += time.perf_counter() - t_set
            m.queue_seconds += queued
            m.decode_worker = self.decode_worker.name
            return self._run_decode(ctx, request, handle.first_token, m, handle.t_start, on_token)

    def generate(self, request: GenerationRequest,
                 on_token: TokenCallback | None = None) -> GenerationResult:
        t_start = time.perf_counter()
        m = self._metrics(request, "single")
        with self.prefill_worker.hold() as (ctx, queued):
            pre = self._run_prefill(ctx, request)
            if self.prefix_cache is not None:
                self.prefix_cache.put(pre.tokens, ctx.get_state())
            m.queue_seconds = queued
            m.prefill_worker = m.decode_worker = self.prefill_worker.name
            self._fill_prefill(m, pre)
            return self._run_decode(ctx, request, pre.first, m, t_start, on_token)

    def _run_decode(self, ctx: Context, request: GenerationRequest, first: int,
                    m: RequestMetrics, t_start: float,
                    on_token: TokenCallback | None) -> GenerationResult:
        model = self.model()
        reply = self.decoding.reply(model, request, m, t_start, on_token)
        ctx.perf_reset()
        # The decode side's sampler continues the prefill side's: same settings,
        # the first token accepted (advancing the grammar), a seed of its own.
        with self.decoding.sampler(model, request, request.seed + 1) as sampler, \
                self.budget.slot():
            sampler.accept(first)
            token = first
            while reply.push(token):
                ctx.set_threads(self.budget.share())
                ctx.eval([token])
                token = sampler.sample(ctx)
            m.threads = self.budget.share()
        perf = ctx.perf()
        m.decode_evals = perf.n_eval + perf.n_prompt
        m.decode_seconds = perf.seconds
        return reply.result()
