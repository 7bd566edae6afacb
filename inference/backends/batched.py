"""Continuous batching on the decode side: one llama.cpp context, many sequences.

Requests that reach a route's decode worker at the same time (a notebook's L3 and L4,
the requests of several notebooks of a batch, several clients of a server) share one
context of ``n_seq`` sequences (``route.options["decode_batch"]``, 4 by default). Each
arrives as a KV handle from the prefill side and its state is loaded into a free
sequence (``llama_state_seq_set_data`` with that sequence's id); every step then
evaluates one token of every active sequence in one ``llama_decode`` (a ``llama_batch``
of one token per sequence, each at its own position), and each sequence samples from
its own row of logits with its own sampler (its grammar, its seed). A request joins
between two steps and leaves when its reply ends (its sequence's cells removed with
``llama_memory_seq_rm``), so a short reply never waits for a long one. Prefill stays on
the prefill worker's own context: a new request's prompt is evaluated there while the
running replies go on decoding.

The step loop runs in a thread of its own, holding one ``ThreadBudget`` slot while any
sequence is active; a caller's thread waits for its reply. A request's ``decode_seconds``
is the wall time of the steps it was part of, ``decode_evals`` their number, and
``decode_batch`` the most sequences decoded together during its reply and
``decode_width`` how many on average: what the request saw, not a share of what the
batch did (its rate times its width is the server's throughput while it decoded).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from dataclasses import dataclass, field

import llama_cpp as C

from ..errors import BackendError, KVTransferError, ModelLoadError
from ..threads import ThreadBudget
from ..types import GenerationResult, KVHandle
from ._llama import LoadedModel, Sampler, kv_fingerprint, set_seq_state
from .base import TokenCallback
from .compute import compute_timed
from .decode_text import Reply
from .decoding import Decoding, RouteModel
from .worker import Worker

__all__ = ["BatchContext", "BatchDecoder"]

log = logging.getLogger(__name__)


class BatchContext:
    """A llama.cpp context of ``n_seq`` sequences (ids 0..n_seq-1) sharing one unified
    KV cache of ``n_cells`` cells (as many as a serial decode context had: the
    sequences decoding together share them, ``BatchDecoder`` admits a request only
    while its prompt and reply fit beside the others'). Used by one thread only."""

    def __init__(self, model: LoadedModel, n_cells: int, n_seq: int, threads: int,
                 flash_attn: int = -1) -> None:
        params = C.llama_context_default_params()
        params.n_ctx = n_cells
        params.n_batch = params.n_ubatch = max(n_seq, 32)
        params.n_seq_max = n_seq
        params.n_threads = params.n_threads_batch = threads
        params.no_perf = True
        params.kv_unified = True  # a state saved on another context loads into any sequence
        params.flash_attn_type = flash_attn
        self._ptr = C.llama_init_from_model(model.ptr, params)
        if not self._ptr:
            raise ModelLoadError(f"model {model.name!r}: could not create a decode context of "
                                 f"{n_cells} cells for {n_seq} sequences")
        self.model, self.n_seq, self.n_cells = model, n_seq, n_cells
        self._mem = C.llama_get_memory(self._ptr)
        self._batch = C.llama_batch_init(n_seq, 0, 1)
        self._threads = threads
        self.fingerprint = kv_fingerprint(model, flash_attn)

    @property
    def ptr(self):
        return self._ptr

    def set_threads(self, n: int) -> None:
        if n != self._threads:
            C.llama_set_n_threads(self._ptr, n, n)
            self._threads = n

    def load(self, seq: int, state: bytes | memoryview) -> None:
        """Put a sequence's KV state (``Context.get_state`` of any context with the same
        fingerprint) into sequence ``seq``."""
        self.drop(seq)
        if not set_seq_state(self._ptr, state, seq):
            self.drop(seq)
            raise KVTransferError("llama_state_seq_set_data refused the KV state (model, KV "
                                  "type or context layout differ, or the batch is full)")

    def step(self, items: list[tuple[int, int, int]]) -> float:
        """Evaluate one token per sequence: ``(seq, token, position)``, logits for each;
        the seconds the ``llama_decode`` ran (not the time it queued for the compute
        thread)."""
        b = self._batch
        for i, (seq, token, pos) in enumerate(items):
            b.token[i], b.pos[i], b.n_seq_id[i], b.logits[i] = token, pos, 1, 1
            b.seq_id[i][0] = seq
        b.n_tokens = len(items)
        rc, ran = compute_timed(C.llama_decode, self._ptr, b)
        if rc != 0:
            raise BackendError(f"llama_decode of a batch of {len(items)} sequences failed "
                               f"with code {rc}")
        return ran

    def drop(self, seq: int) -> None:
        C.llama_memory_seq_rm(self._mem, seq, -1, -1)

    def close(self) -> None:
        if self._ptr:
            C.llama_batch_free(self._batch)
            C.llama_free(self._ptr)
            self._ptr = None


@dataclass(eq=False)
class _Seq:
    handle: KVHandle
    reply: Reply
    sampler: Sampler
    token: int  # the next token to push
    slot: int = -1
    position: int = 0
    joined: float = 0.0
    steps: int = 0
    widest: int = 0
    shared: int = 0  # sequences of every step it was part of, itself included
    done: threading.Event = field(default_factory=threading.Event)

    @property
    def need(self) -> int:
        """KV cells the reply can fill: its prompt and every token it may write."""
        return len(self.handle.prompt_tokens) + self.reply.max_tokens + 1
    result: GenerationResult | None = None
    error: BaseException | None = None


class BatchDecoder:
    """The decode side of a route as one batched context and its step loop.

    ``model``: the route's model (loaded with the context, on first use); ``decoding``:
    the route's defaults, which make each request's sampler and reply; the context has
    ``n_seq`` sequences sharing ``n_cells`` KV cells, ``flash_attn`` as the prefill
    side's (the KV layouts must match); ``budget``: the threads it computes with.
    """

    def __init__(self, worker: Worker, model: RouteModel, decoding: Decoding,
                 budget: ThreadBudget, *, n_cells: int, n_seq: int,
                 flash_attn: int = -1) -> None:
        self.worker, self.model, self.decoding = worker, model, decoding
        self.n_cells, self.n_seq, self.flash_attn = n_cells, n_seq, flash_attn
        self._budget = budget
        self._ctx: BatchContext | None = None
        self._cond = threading.Condition()
        self._waiting: deque[_Seq] = deque()
        self._active: list[_Seq] = []
        self._thread: threading.Thread | None = None
        self._closed = False

    @property
    def active(self) -> int:
        """Sequences decoding now."""
        return len(self._active)

    def context(self) -> BatchContext:
        """The context (created on first use: loads the model)."""
        if self._ctx is None:
            self._ctx = BatchContext(self.model.get(), self.n_cells, self.n_seq,
                                     self._budget.total, self.flash_attn)
            self.worker.attach(self._ctx)  # its health shows it loaded
        return self._ctx

    def decode(self, handle: KVHandle, on_token: TokenCallback | None = None
               ) -> GenerationResult:
        """Decode one request's reply in the batch; returns when it is finished."""
        model, request = self.model.get(), handle.request
        # The decode side's sampler continues the prefill side's: a seed of its own.
        sampler = self.decoding.sampler(model, request, request.seed + 1)
        try:
            sampler.accept(handle.first_token)  # the prefill side sampled it
            reply = self.decoding.reply(model, request, handle.metrics, handle.t_start, on_token)
            seq = _Seq(handle, reply, sampler, handle.first_token)
        except BaseException:
            sampler.close()
            raise
        t0 = time.perf_counter()
        with self._cond:
            if self._closed:
                sampler.close()
                raise BackendError(f"{self.worker.name} is closed")
            self._waiting.append(seq)
            self.worker.waiting = len(self._waiting)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, daemon=True,
                                                name=f"batch {self.worker.name}")
                self._thread.start()
            self._cond.notify()
        seq.done.wait()
        seq.handle.metrics.queue_seconds += max(0.0, seq.joined - t0)
        if seq.error is not None:
            raise seq.error
        assert seq.result is not None
        return seq.result

    # -- the step loop (its own thread) -------------------------------------------------
    def _loop(self) -> None:
        while True:
            try:
                with self._cond:
                    while not self._closed and not self._waiting and not self._active:
                        self._cond.wait()
                    if self._closed:
                        break
                    joining = self._admit()
            except BaseException as exc:  # the context could not be made (model load)
                log.error("%s: %s", self.worker.name, exc)
                self._fail_all(exc)
                continue
            for seq in joining:
                self._join(seq)
            if self._active:
                with self._budget.slot():
                    self._step()
        self._fail_all(BackendError(f"{self.worker.name} was closed"))

    def _admit(self) -> list[_Seq]:
        """Waiting requests, in order, that fit in the free sequences and beside the
        running replies' cells (called with the lock). One that could never fit is
        admitted alone, for ``_join`` to refuse."""
        ctx = self.context()
        free = [s for s in range(ctx.n_seq) if s not in {q.slot for q in self._active}]
        used = sum(q.need for q in self._active)
        joining = []
        while self._waiting and free:
            need = self._waiting[0].need
            if used + need > ctx.n_cells and (self._active or joining):
                break
            used += need
            seq = self._waiting.popleft()
            seq.slot = free.pop(0)
            joining.append(seq)
        self.worker.waiting = len(self._waiting)
        return joining

    def _join(self, seq: _Seq) -> None:
        ctx, handle = self.context(), seq.handle
        seq.joined = time.perf_counter()
        try:
            if handle.fingerprint != ctx.fingerprint:
                raise KVTransferError(
                    f"KV state from a different model or layout ({handle.fingerprint} != "
                    f"{ctx.fingerprint}); refusing to load it")
            if seq.need > ctx.n_cells:
                raise KVTransferError(f"the reply does not fit: {len(handle.prompt_tokens)} "
                                      f"prompt + {seq.reply.max_tokens} > {ctx.n_cells} cells")
            t = time.perf_counter()
            ctx.load(seq.slot, handle.state)
            handle.metrics.handoff_seconds += time.perf_counter() - t
        except BaseException as exc:  # this request only: the others go on
            self._finish(seq, error=exc)
            return
        handle.metrics.decode_worker = self.worker.name
        seq.position = len(handle.prompt_tokens)
        if seq.reply.push(seq.token):
            self._active.append(seq)
            self.worker.busy = True
        else:
            self._finish(seq)

    def _step(self) -> None:
        ctx, active = self.context(), list(self._active)
        ctx.set_threads(self._budget.share())
        t0 = time.perf_counter()
        try:
            ran = ctx.step([(s.slot, s.token, s.position) for s in active])
            t1 = time.perf_counter()
            for i, seq in enumerate(active):
                seq.token = seq.sampler.sample(ctx, i)
        except BaseException as exc:
            for seq in active:
                self._finish(seq, error=exc)
            return
        t2 = time.perf_counter()
        spent = t2 - t0
        for seq in active:
            seq.position += 1
            seq.steps += 1
            seq.widest = max(seq.widest, len(active))
            seq.shared += len(active)
            seq.handle.metrics.decode_seconds += spent
            if not seq.reply.push(seq.token):
                self._finish(seq)
        # The step's own work: its llama_decode, the sampling, the replies' text.
        self.worker.count_step(len(active), ran + time.perf_counter() - t1)

    def _finish(self, seq: _Seq, error: BaseException | None = None) -> None:
        if seq in self._active:
            self._active.remove(seq)
        if seq.slot >= 0 and self._ctx is not None:
            self._ctx.drop(seq.slot)
        m = seq.handle.metrics
        m.decode_evals, m.decode_batch = seq.steps, seq.widest
        m.decode_width = seq.shared / seq.steps if seq.steps else 0.0
        m.threads = self._budget.share()
        seq.sampler.close()
        if error is None:
            try:
                seq.result = seq.reply.result()
            except BaseException as exc:  # the model's JSON did not validate
                error = exc
        w = self.worker
        w.requests += 1
        w.last_latency_s = time.perf_counter() - (seq.joined or time.perf_counter())
        if error is not None:
            w.errors += 1
            w.last_error = f"{type(error).__name__}: {error}"
            seq.error = error
        w.busy = bool(self._active)
        seq.done.set()

    def _fail_all(self, error: BaseException) -> None:
        with self._cond:
            pending = [*self._active, *self._waiting]
            self._active, self._waiting = [], deque()
        for seq in pending:
            self._finish(seq, error=error)

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=60)
        else:
            self._fail_all(BackendError(f"{self.worker.name} was closed"))
        if self._ctx is not None:
            self._ctx.close()
            self._ctx = None
            self.worker.attach(None)
