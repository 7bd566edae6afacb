"""The remote backends: our kvserver pairs, OpenAI-compatible servers, Ollama.

Each lists, per request, the ways its pool could serve it (``options``), best
first; ``PooledBackend`` tries them in order with safe failover.

- ``kvserver``, ``mode = "disaggregated"``: the router predicts, from measured
  link bandwidths, server speeds and queues, the time of shipping KV from each
  prefill server to each decode server ("ship"), of a decode server prefilling
  the prompt itself ("self") and of one both-server doing it all ("single"),
  and tries the cheapest first. ``mode = "single"``: one server, least loaded.
- ``openai``: one server per request (vLLM, SGLang and Dynamo disaggregate behind
  their own frontends), least outstanding with prefix affinity.
- ``ollama``: the same; ``mode = "disaggregated"`` is the old system's pair mode
  (token ids in ``context``, re-prefilled by the second server), kept only as a
  measured comparison, with a single server as its failover.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from ..errors import BackendError, BackendUnavailable, KVIncompatibleError, KVTransferError
from ..types import GenerationRequest, GenerationResult
from .backlog import DecodeBacklog
from .kvclient import KVServerTransport
from .pooled import EmitGuard, Option, PooledBackend, ServerFailure, affinity_key
from .routing import spread


def _by_load(backend: PooledBackend, names: Sequence[str], key: str) -> list[str]:
    """The usable servers in the order the selector would pick them, one after another
    (the first with prefix affinity for ``key``)."""
    states = backend.cluster.usable(names)
    out: list[str] = []
    while states:
        pick = backend.cluster.selector.choose(states, None if out else key)
        out.append(pick.endpoint.name)
        states = [s for s in states if s.endpoint.name != pick.endpoint.name]
    return out


class _SinglePool(PooledBackend):
    """One server per request, least outstanding first, with prefix affinity."""

    def _single(self, name: str, method: str = "single", work_s: float = 0.0) -> Option:
        transport = self.cluster.transports[name]

        def run(req: GenerationRequest, guard: EmitGuard) -> GenerationResult:
            with self.cluster.monitor.track(name, work_s):
                result = transport.generate(req, guard)
            m = result.metrics
            m.prefill_worker = m.decode_worker = name  # the server, not its slot
            _record_speeds(self.cluster, name, name, m)
            return result

        return Option(label=f"server {name}", servers=(name,), run=run, method=method,
                      choice="single")

    def options(self, request: GenerationRequest) -> list[Option]:
        key = affinity_key(request)
        return [self._single(n) for n in _by_load(self, self.names, key)]


class OpenAIBackend(_SinglePool):
    pass


class OllamaBackend(_SinglePool):
    def options(self, request: GenerationRequest) -> list[Option]:
        singles = super().options(request)
        if self.route.mode != "disaggregated":
            return singles
        from .ollama_api import context_pair

        usable = {s.endpoint.name: s for s in self.cluster.usable(self.names)}
        pairs: list[Option] = []
        for p in usable.values():
            for d in usable.values():
                if p.endpoint.name == d.endpoint.name or not (
                        p.endpoint.can_prefill and d.endpoint.can_decode) \
                        or p.endpoint.model != d.endpoint.model:  # token ids mean one model
                    continue
                tp = self.cluster.transports[p.endpoint.name]
                td = self.cluster.transports[d.endpoint.name]

                def run(req: GenerationRequest, guard: EmitGuard, tp: Any = tp,
                        td: Any = td) -> GenerationResult:
                    return context_pair(tp, td, req, guard)

                pairs.append(Option(
                    label=f"pair {p.endpoint.name} -> {d.endpoint.name} (token ids)",
                    servers=(p.endpoint.name, d.endpoint.name), run=run, method="context",
                    choice="context", pair=(p.endpoint.name, d.endpoint.name)))
        return pairs + singles


class KVServerBackend(_SinglePool):
    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self._cached: dict[tuple[str, str], tuple[int, int]] = {}
        self._lock = threading.Lock()
        self._in_flight = 0  # requests of this route being planned or executed now
        # Work planned on a server but not started yet (``monitor.track`` counts it from
        # the start): plans are made one at a time, each seeing the ones before it, so
        # requests sent at the same moment do not all pick the server that looked free.
        self._plan_lock = threading.Lock()
        self._planned: dict[str, float] = defaultdict(float)
        self._local = threading.local()  # .held: this thread's reservations in execute()
        self._backlog = DecodeBacklog()  # .sent: this thread's entries there

    def execute(self, request: GenerationRequest,
                on_token: Any = None) -> GenerationResult:
        with self._lock:
            self._in_flight += 1
        self._local.held, self._local.sent = [], []
        try:
            return super().execute(request, on_token)
        finally:
            self._release(self._local.held)
            self._backlog.remove(self._local.sent)
            self._local.held = self._local.sent = None
            with self._lock:
                self._in_flight -= 1

    def _reserve(self, work: dict[str, float]) -> list[tuple[str, float]]:
        """Count ``work`` as planned (called with the plan lock); returns the handle."""
        held = list(work.items())
        with self._lock:
            for name, seconds in held:
                self._planned[name] += seconds
        return held

    def _release(self, holds: list[list[tuple[str, float]]] | None) -> None:
        """Un-count reservations (each once: a released one is emptied)."""
        with self._lock:
            for held in holds or ():
                for name, seconds in held:
                    self._planned[name] = max(0.0, self._planned[name] - seconds)
                held.clear()

    def options(self, request: GenerationRequest) -> list[Option]:
        if self.route.mode == "single":
            return super().options(request)
        cl = self.cluster
        key = affinity_key(request)
        usable = cl.usable(self.names)
        decoders = [s.endpoint.name for s in usable if s.endpoint.can_decode]
        prefillers = [s.endpoint.name for s in usable if s.endpoint.can_prefill]
        refused = {(p, d): why for p in prefillers for d in decoders
                   if p != d and (why := cl.compatible(p, d)) is not None}
        pairs = [(p, d) for p in prefillers for d in decoders if p != d and (p, d) not in refused]
        if not pairs:
            if refused and not self.route.fallback:
                raise KVIncompatibleError(f"role {self.route.role}: no prefill/decode pair can "
                                          f"move KV: {'; '.join(refused.values())}")
            why = self._why_no_pair(prefillers, refused)
        else:
            why = ""
        if not decoders:
            return []
        policy = self.route.options.get("handoff", "auto")
        n_tokens = self.estimate_tokens(request)
        max_tokens = request.max_tokens or self.route.max_tokens or 256
        for s in usable:  # the servers' own recent speeds, re-read at every probe
            if s.status is not None:
                cl.speeds.seed(s.endpoint.name, s.status)
        cached = {n: self._cached_estimate(n, key, n_tokens) for n in set(prefillers + decoders)}
        held = getattr(self._local, "held", None)  # a list inside execute(): plan for real
        sent = getattr(self._local, "sent", None)
        with self._plan_lock:
            self._release(held)  # planning again after a failure: the old plan is void
            self._backlog.remove(sent)
            queue = {s.endpoint.name: _wait_s(s) + self._planned[s.endpoint.name]
                     for s in usable}
            backlog = {s.endpoint.name: [*self._backlog.view(s.endpoint.name),
                                         (0.0, _others_s(s))]
                       for s in usable if s.endpoint.can_decode}
            args = (n_tokens, max_tokens, pairs if policy != "never" else [], decoders,
                    cached, queue)
            ranked = cl.cost.options(*args, backlog=backlog)
            turn = max(0, self._in_flight - 1)  # the others planned or executed beside this
            if policy == "always":  # the instructor's topology first, the router's order
                ranked.sort(key=lambda o: o.method != "ship")
                ranked = spread(ranked, turn, queue)
                first = ranked[0]
                cl.cost.record_decision(first, tuple(o for o in ranked if o is not first))
            else:
                first = cl.cost.choose(*args, turn=turn, backlog=backlog)
            reservation = self._reserve(_work(first)) if held is not None else None
            if sent is not None:
                sent.append(self._backlog.add(first.decode, *_decode_part(first)))
        if reservation is not None:
            held.append(reservation)
        out: list[Option] = []
        for ro in [first, *ranked]:
            opt = self._from_route_option(ro, key)
            if all(o.servers != opt.servers for o in out):
                opt.fallback_reason = why
                out.append(opt)
        if reservation is not None:  # from its start, the first option is tracked instead
            inner = out[0].run

            def run(req: GenerationRequest, guard: EmitGuard) -> GenerationResult:
                self._release([reservation])
                return inner(req, guard)

            out[0].run = run
        return out

    def _why_no_pair(self, prefillers: list[str], refused: dict[tuple[str, str], str]) -> str:
        """In words: why a disaggregated route cannot ship KV right now."""
        if refused:
            return "no pair can move KV: " + "; ".join(dict.fromkeys(refused.values()))
        down = [n for n in self.names if self.cluster.endpoints[n].can_prefill
                and n not in prefillers]
        if down:
            states = ", ".join(f"{n} ({self.cluster.state(n).state}"
                               + (f": {e}" if (e := self.cluster.state(n).last_error) else "")
                               + ")" for n in down)
            return f"no prefill server is up: {states}"
        return "no prefill server besides the decode servers"

    def _cached_estimate(self, server: str, key: str, n_tokens: int) -> int:
        """Tokens of this prompt ``server`` probably holds: what it reused last time for
        the same prefix, or half of that prompt if it served the prefix once."""
        seen = self._cached.get((server, key))
        if seen is None:
            return 0
        prompt, cached = seen
        return min(n_tokens - 1, cached if cached else prompt // 2)

    def _remember(self, server: str, key: str, prompt: int, cached: int) -> None:
        with self._lock:
            self._cached[(server, key)] = (prompt, cached)

    def _from_route_option(self, ro: Any, key: str) -> Option:
        work = _work(ro)
        if ro.method == "ship":
            opt = self._ship(ro.prefill, ro.decode, key, (work[ro.prefill], work[ro.decode]))
        else:
            opt = self._single(ro.decode, "single", work[ro.decode])
            inner = opt.run

            def run(req: GenerationRequest, guard: EmitGuard, server: str = ro.decode
                    ) -> GenerationResult:
                result = inner(req, guard)
                self._remember(server, key, result.metrics.prompt_tokens,
                               result.metrics.cached_tokens)
                return result

            opt.run = run
        opt.choice = ro.method
        opt.predicted_s = ro.predicted_s
        opt.route_option = ro
        return opt

    def _ship(self, p: str, d: str, key: str, work: tuple[float, float] = (0.0, 0.0)
              ) -> Option:
        """Prefill on ``p``, decode on ``d``; ``work``: the seconds the router predicted
        for each, counted on them (``monitor.track``) from the moment the request is
        sent, so that the next request's plan sees them: ``d``'s from the start, since
        its decode is on its way."""
        cl = self.cluster
        tp = cl.transports[p]
        assert isinstance(tp, KVServerTransport)
        notes: list[str] = []  # decode servers that failed before this one served

        def run(req: GenerationRequest, guard: EmitGuard) -> GenerationResult:
            with cl.monitor.track(d, work[1]):
                return ship(req, guard)

        def ship(req: GenerationRequest, guard: EmitGuard) -> GenerationResult:
            notes.clear()
            with cl.monitor.track(p, work[0]):
                try:
                    pre = tp.prefill(req)
                except BackendError as exc:
                    if isinstance(exc, KVTransferError):
                        raise
                    raise ServerFailure((p,), exc) from exc
            cl.record_kv(p, pre.kv_bytes, pre.n_tokens)
            pm = pre.metrics
            self._remember(p, key, pm.prompt_tokens, pm.cached_tokens)
            _record_speeds(cl, p, None, pm)
            # The prompt's KV waits on p under its lease: a decode server that cannot be
            # reached is replaced by another one that pulls the same KV, no re-prefill.
            for dd in [d, *self._spare_decoders(p, d)]:
                try:
                    result = self._decode_on(dd, req, pre, guard, counted=dd == d)
                except BackendUnavailable as exc:
                    if guard.emitted:
                        tp.release(pre)
                        raise ServerFailure((dd,), exc) from exc
                    cl.monitor.report_failure(dd, f"{type(exc).__name__}: {exc}",
                                              decisive=self.gone(dd, exc))
                    notes.append(f"decode server {dd}: {type(exc).__name__}: {exc}")
                    continue
                except BackendError as exc:
                    tp.release(pre)
                    if isinstance(exc, KVTransferError):
                        raise
                    raise ServerFailure((dd,), exc) from exc
                self._merge(result, pre, p, dd)
                return result
            tp.release(pre)
            raise ServerFailure((), BackendUnavailable("no decode server could take the KV: "
                                                       + "; ".join(notes)))

        return Option(label=f"pair {p} -> {d}", servers=(p, d), run=run,
                      method="disaggregated", choice="ship", pair=(p, d), inner_failures=notes)

    def _spare_decoders(self, p: str, d: str) -> list[str]:
        usable = [s for s in self.cluster.usable(self.names)
                  if s.endpoint.can_decode and s.endpoint.name not in (p, d)
                  and self.cluster.compatible(p, s.endpoint.name) is None]
        return [s.endpoint.name for s in sorted(usable, key=lambda s: s.outstanding)]

    def _decode_on(self, dd: str, req: GenerationRequest, pre: Any,
                   guard: EmitGuard, counted: bool = False) -> GenerationResult:
        """Decode on ``dd`` (``counted``: its request is tracked already)."""
        td = self.cluster.transports[dd]
        assert isinstance(td, KVServerTransport)
        if counted:
            return td.decode(req, pre, self.cluster.endpoints[pre.server], guard)
        with self.cluster.monitor.track(dd):
            return td.decode(req, pre, self.cluster.endpoints[pre.server], guard)

    def _merge(self, result: GenerationResult, pre: Any, p: str, d: str) -> None:
        """The prefill server's half of the metrics, with the decode server's."""
        cl = self.cluster
        m, pm = result.metrics, pre.metrics
        m.prompt_tokens, m.cached_tokens = pm.prompt_tokens, pm.cached_tokens
        m.prefill_tokens, m.prefill_seconds = pm.prefill_tokens, pm.prefill_seconds
        m.prefill_worker, m.decode_worker = p, d
        m.model = m.model or pm.model
        m.queue_seconds += pm.queue_seconds
        m.handoff_seconds += pm.handoff_seconds
        m.kv_bytes = m.kv_bytes or pre.kv_bytes
        m.ttft_seconds += pre.wall_seconds
        m.started_at = pm.started_at or m.started_at
        if m.kv_transfer_seconds > 0 and m.kv_bytes > 0:
            cl.links.record(p, d, m.kv_bytes, m.kv_transfer_seconds)
        _record_speeds(cl, None, d, m)


def _work(ro: Any) -> dict[str, float]:
    """The seconds a route option's plan gives each of its servers."""
    parts = ro.parts
    if ro.method == "ship":
        return {ro.prefill: parts.get("prefill", 0.0),
                ro.decode: parts.get("load", 0.0) + parts.get("decode", 0.0)}
    return {ro.decode: parts.get("prefill", 0.0) + parts.get("decode", 0.0)}


def _decode_part(ro: Any) -> tuple[float, float]:
    """When a route option's decode can start on its decode server (seconds from now)
    and the seconds it takes there: after the KV's arrival for ship, after its wait for
    a server that prefills itself (the prefill is then its work too)."""
    parts = ro.parts
    if ro.method == "ship":
        ready = sum(parts.get(k, 0.0) for k in ("wait", "prefill", "link_latency", "transfer"))
        return ready, parts.get("load", 0.0) + parts.get("decode", 0.0)
    return parts.get("wait", 0.0), parts.get("prefill", 0.0) + parts.get("decode", 0.0)


def _others_s(state: Any) -> float:
    """Seconds of other clients' requests queued on a server (its ``queue_depth``
    beyond ours when it said it), each at its measured request time."""
    others = max(0, (state.status.queue_depth if state.status else 0)
                 - state.status_outstanding)
    return others * (state.request_latency_s or 1.0)


def _wait_s(state: Any) -> float:
    """Seconds a new request would wait on a server: the work this client predicted for
    its requests there, plus the requests of other clients queued on it (its
    ``queue_depth`` beyond ours), each at its measured request time. Ours are counted
    as they were when the server said its queue: compared with ours now, a queue read
    during the last batch stayed as other clients' work after that batch ended, and a
    server looked 15 s busy for a whole round of ``bench.balance``."""
    return state.pending_s + _others_s(state)


def _record_speeds(cluster: Any, prefill: str | None, decode: str | None,
                   m: Any) -> None:
    """Feed the router's speed table with what a server measured (servers that report
    no token counts, like llama-cpp-python's without usage, teach it nothing)."""
    if prefill and m.prefill_tokens > 0 and m.prefill_seconds > 0:
        cluster.speeds.record_prefill(prefill, m.prefill_tokens, m.prefill_seconds)
    decoded = m.decode_evals or m.decode_tokens
    if decode and decoded > 0 and m.decode_seconds > 0:
        cluster.speeds.record_decode(decode, decoded, m.decode_seconds, m.decode_width)
