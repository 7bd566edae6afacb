"""The correctness canary: a fixed greedy prompt through every prefill -> decode pair.

A KV state that loads without error can still be wrong (another build, a
different V layout, a bug in a server): serving systems have shipped silent
wrong output after a KV load. Every ``interval`` seconds (and once at start-up)
the canary sends the same greedy prompt through each usable pair of our servers
and through the decode server alone, and compares the first tokens. A pair whose
tokens diverge is marked degraded and the router stops shipping KV over it until
a later canary agrees again. Canary requests are not grading requests: they show
on the Dashboard's timeline, not in the request history.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import BackendError
from ..types import GenerationRequest
from .kvclient import KVServerTransport

if TYPE_CHECKING:
    from .cluster import Cluster

log = logging.getLogger(__name__)

COMPARE_TOKENS = 8
CANARY_REQUEST = GenerationRequest.chat(
    "canary", "You are a careful assistant. Answer in one short sentence.",
    "Name the three primary colours of light and say what mixing all three gives.",
    max_tokens=COMPARE_TOKENS, temperature=0.0, seed=0, request_id="canary")


@dataclass(frozen=True, slots=True)
class CanaryResult:
    prefill: str
    decode: str
    ok: bool
    agreed: int  # leading tokens that agree
    compared: int
    detail: str = ""


class Canary:
    def __init__(self, cluster: Cluster, interval: float) -> None:
        self.cluster = cluster
        self.interval = interval
        self.results: dict[tuple[str, str], CanaryResult] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="kv-canary", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.run_once()
            except Exception:  # a canary bug must not kill its thread: log and go on
                log.exception("canary round failed")
            self._stop.wait(self.interval)

    def pairs(self) -> list[tuple[str, str]]:
        """Every usable pair of our servers whose models match, the ones an earlier
        canary found diverging included (so that they can recover)."""
        cl = self.cluster
        ours = [s.endpoint for s in cl.usable(cl.endpoints) if s.endpoint.protocol == "kvserver"]
        return [(p.name, d.name) for p in ours for d in ours
                if p.name != d.name and p.can_prefill and d.can_decode
                and cl.identity_mismatch(p.name, d.name) is None]

    def run_once(self) -> list[CanaryResult]:
        out = [self.check(p, d) for p, d in self.pairs()]
        for r in out:
            self._apply(r)
        return out

    def check(self, p: str, d: str) -> CanaryResult:
        tp, td = self.cluster.transports[p], self.cluster.transports[d]
        assert isinstance(tp, KVServerTransport)
        assert isinstance(td, KVServerTransport)
        try:
            alone = td.generate(CANARY_REQUEST).tokens[:COMPARE_TOKENS]
            pre = tp.prefill(CANARY_REQUEST)
            shipped = td.decode(CANARY_REQUEST, pre, self.cluster.endpoints[p]).tokens
        except BackendError as exc:
            # Unreachable or refusing servers are the prober's business; a refused
            # handshake is the pair's.
            return CanaryResult(p, d, ok=True, agreed=0, compared=0,
                                detail=f"not compared: {type(exc).__name__}: {exc}")
        shipped = shipped[:COMPARE_TOKENS]
        agreed = next((i for i, (a, b) in enumerate(zip(alone, shipped, strict=False))
                       if a != b), min(len(alone), len(shipped)))
        ok = agreed == len(alone) == len(shipped)
        detail = ("" if ok else f"{p} -> {d} agreed on {agreed} of {len(alone)} greedy tokens "
                  f"with {d} alone: KV loaded but the output diverged")
        return CanaryResult(p, d, ok, agreed, len(alone), detail)

    def _apply(self, r: CanaryResult) -> None:
        cl = self.cluster
        self.results[(r.prefill, r.decode)] = r
        if r.ok and not r.compared:  # a server did not answer: the prober's business
            cl.monitor.record_event(r.decode, "canary_skipped", r.detail)
        elif r.ok:
            cl.bad_pairs.pop((r.prefill, r.decode), None)
            if not any(d == r.decode for (_p, d) in cl.bad_pairs):
                cl.monitor.clear_degraded(r.decode)
            cl.monitor.record_event(r.decode, "canary_ok",
                                    r.detail or f"{r.prefill} -> {r.decode}: "
                                    f"{r.compared} greedy tokens identical")
        else:
            log.warning("canary: %s", r.detail)
            cl.bad_pairs[(r.prefill, r.decode)] = r.detail
            cl.monitor.mark_degraded(r.decode, r.detail)
            cl.monitor.record_event(r.decode, "canary_fail", r.detail)
