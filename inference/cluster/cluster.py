"""Every remote server of a client, watched and measured in one place.

A ``Cluster`` holds one transport per server that any route names, one health
monitor (prober + circuit breakers), the routing tables (link bandwidths,
server speeds, KV bytes per token, prefix affinity) and the correctness canary.
Routes that share servers share all of it: a server that died is avoided by
every role at once. Given a ``ClusterJournal``, the monitor's events, the measured
KV transfers and the router's decisions (with their outcomes) are also written to it,
for other processes to see.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..endpoint import Endpoint, Timeouts, Transport
from ..types import WorkerHealth
from .breaker import BreakerSettings
from .health import HealthMonitor, ServerState
from .measure import LinkTable, SpeedTable
from .routing import CostModel, Selector

if TYPE_CHECKING:
    from ..config import EngineConfig
    from .journal import ClusterJournal

log = logging.getLogger(__name__)

_TRANSPORTS = {
    "kvserver": "inference.cluster.kvclient:KVServerTransport",
    "openai": "inference.cluster.openai_api:OpenAITransport",
    "ollama": "inference.cluster.ollama_api:OllamaTransport",
}


def make_transport(endpoint: Endpoint, timeouts: Timeouts) -> Transport:
    module, _, attr = _TRANSPORTS[endpoint.protocol].partition(":")
    cls = getattr(importlib.import_module(module), attr)
    transport: Transport = cls(endpoint, timeouts, **endpoint.options)
    return transport


class Cluster:
    def __init__(self, config: EngineConfig, journal: ClusterJournal | None = None) -> None:
        names = sorted({n for r in config.routes.values() if r.remote for n in r.servers})
        self.config = config
        self.journal = journal  # its owner (the client) closes it
        self.endpoints: dict[str, Endpoint] = {n: config.servers[n] for n in names}
        self.transports: dict[str, Transport] = {
            n: make_transport(ep, config.timeouts) for n, ep in self.endpoints.items()}
        h = config.health
        self.monitor = HealthMonitor(
            self.transports, interval=h.probe_interval,
            breaker=BreakerSettings(failures=h.breaker_failures,
                                    reset_seconds=h.breaker_reset_seconds),
            on_event=journal.record_event if journal is not None else None)
        self.selector = Selector()
        self.links = LinkTable()
        self.speeds = SpeedTable()
        self._kv_per_token: dict[str, float] = {}
        self.cost = CostModel(self.links, self.speeds, kv_bytes_per_token=self.kv_bytes_per_token)
        if journal is not None:
            self.links.on_record = journal.record_link
            self.cost.on_decision = journal.record_decision
            self.cost.on_outcome = journal.record_outcome
        # (prefill, decode) -> why the pair must not ship KV (canary divergence, identity)
        self.bad_pairs: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()
        self._started = False
        self.canary = None  # set in start() when canary_interval > 0

    # -- life cycle -------------------------------------------------------------
    def start(self) -> None:
        """Probe every server once (so the first request knows who is up), then keep
        probing in the background; start the canary. Idempotent."""
        with self._lock:
            if self._started:
                return
            self._started = True
        self.monitor.probe_all()
        self.monitor.start()
        for name, state in self.monitor.snapshots().items():
            if state.status is not None:
                self.speeds.seed(name, state.status)
        if self.config.health.canary_interval > 0:
            from .canary import Canary

            self.canary = Canary(self, self.config.health.canary_interval)
            self.canary.start()

    def close(self) -> None:
        if self.canary is not None:
            self.canary.stop()
        self.monitor.stop()
        for t in self.transports.values():
            t.close()

    # -- what the routing reads -------------------------------------------------
    def state(self, name: str) -> ServerState:
        return self.monitor.snapshot(name)

    def usable(self, names: Iterable[str]) -> list[ServerState]:
        return [self.monitor.snapshot(n) for n in names if self.monitor.usable(n, claim=False)]

    def compatible(self, prefill: str, decode: str) -> str | None:
        """Why KV must not move from ``prefill`` to ``decode``, or None."""
        return self.bad_pairs.get((prefill, decode)) or self.identity_mismatch(prefill, decode)

    def identity_mismatch(self, prefill: str, decode: str) -> str | None:
        """Why the two servers' models cannot exchange KV, as their probes report them."""
        a, b = self.state(prefill).status, self.state(decode).status
        if a is None or b is None or not a.identity_hash or not b.identity_hash:
            return None  # unknown until probed: the server's handshake decides
        if a.identity_hash != b.identity_hash:
            return (f"{prefill} serves {a.model or '?'} ({a.identity_hash[:8]}), {decode} "
                    f"serves {b.model or '?'} ({b.identity_hash[:8]}): KV cannot move")
        return None

    def kv_bytes_per_token(self, server: str) -> float:
        """KV bytes per prompt token of ``server``'s model: measured on real prefills,
        else an upper bound from the model's shape (2 x layers x n_embd x f16)."""
        measured = self._kv_per_token.get(server)
        if measured:
            return measured
        status = self.state(server).status
        ident = status.identity if status is not None else {}
        layers, embd = int(ident.get("n_layer") or 0), int(ident.get("n_embd") or 0)
        return float(2 * layers * embd * 2) if layers and embd else 64_000.0

    def record_kv(self, server: str, kv_bytes: int, n_tokens: int) -> None:
        if kv_bytes > 0 and n_tokens > 0:
            self._kv_per_token[server] = kv_bytes / n_tokens

    # -- dashboard --------------------------------------------------------------
    def cards(self, names: Iterable[str], role: str, route: str) -> list[WorkerHealth]:
        """One WorkerHealth per server, as the Dashboard shows them."""
        return [self.card(self.monitor.snapshot(n), role, route) for n in names]

    def card(self, s: ServerState, role: str, route: str) -> WorkerHealth:
        st = s.status
        ep = s.endpoint
        extra = {
            "url": ep.url, "protocol": ep.protocol, "server_role": ep.role,
            "circuit": s.circuit, "probe_latency_s": s.probe_latency_s,
            "identity_hash": st.identity_hash if st else "",
            "slots_total": st.slots_total if st else 0,
            "slots_busy": st.slots_busy if st else 0,
            "prefill_tps": (self.speeds.prefill_tps(ep.name, 1000, default=None)
                            or (st.prefill_tps if st else 0.0)),
            "decode_tps": (self.speeds.decode_tps(ep.name, default=None)
                           or (st.decode_tps if st else 0.0)),
            "outstanding": s.outstanding, "since": s.since,
            "degraded_reason": s.degraded_reason,
        }
        return WorkerHealth(
            name=ep.name, role=role, route=route, kind=ep.role, state=s.state,
            model=(st.model if st and st.model else ep.model), detail=s.last_error,
            busy=bool(st and st.slots_busy) or s.outstanding > 0,
            queue=st.queue_depth if st else 0, last_latency_s=s.probe_latency_s,
            requests=s.requests, errors=s.errors, extra=extra)
