"""The server's Prometheus metrics, in a registry of its own (never the global one).

Names follow llama-server where they mean the same (``llamacpp:*``); ours are
``grader_*``. See docs/server-protocol.md (GET /metrics).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import generate_latest
from prometheus_client.registry import Collector

from ..types import RequestMetrics

CONTENT_TYPE = CONTENT_TYPE_LATEST


RECENT = 32


def _rate(samples: deque[tuple[int, float]] | deque[tuple[float, float]]) -> float:
    seconds = sum(s for _, s in samples)
    return sum(n for n, _ in samples) / seconds if seconds > 0 else 0.0


class _DecodeSteps(Collector):
    """The batched decoder's steps, read from its worker at scrape time: how many, the
    tokens they decoded (tokens / steps = sequences decoded together on average) and
    the seconds of their own work; and the sequences decoding now."""

    def __init__(self) -> None:
        self.read: Callable[[], tuple[int, int, float, int]] = lambda: (0, 0, 0.0, 0)

    def collect(self):
        steps, tokens, seconds, active = self.read()
        for name, doc, value in (
                ("grader_decode_steps", "Batched decode steps (one llama_decode each)", steps),
                ("grader_decode_step_tokens", "Tokens decoded by batched steps", tokens),
                ("grader_decode_step_seconds",
                 "Seconds of the batched steps' own work (decode, sampling, text)", seconds)):
            c = CounterMetricFamily(name, doc)
            c.add_metric([], value)
            yield c
        yield GaugeMetricFamily("grader_decoding", "Sequences in the decode batch now",
                                value=active)


class ServerMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.prompt_tokens = Counter("llamacpp:prompt_tokens", "Prompt tokens evaluated",
                                     registry=r)
        self.prompt_seconds = Counter("llamacpp:prompt_seconds",
                                      "Seconds spent evaluating prompts", registry=r)
        self.tokens_predicted = Counter("llamacpp:tokens_predicted", "Tokens generated",
                                        registry=r)
        self.tokens_predicted_seconds = Counter("llamacpp:tokens_predicted_seconds",
                                                "Seconds spent generating", registry=r)
        self.requests_processing = Gauge("llamacpp:requests_processing",
                                         "Requests holding a slot", registry=r)
        self.requests_deferred = Gauge("llamacpp:requests_deferred",
                                       "Requests waiting for a slot", registry=r)
        self.requests = Counter("grader_requests", "HTTP requests by endpoint and status",
                                ["endpoint", "status"], registry=r)
        self.rejected = Counter("grader_requests_rejected", "Requests refused, by reason",
                                ["reason"], registry=r)
        self.kv_bytes_sent = Counter("grader_kv_bytes_sent", "KV state bytes streamed out",
                                     registry=r)
        self.kv_bytes_received = Counter("grader_kv_bytes_received",
                                         "KV state bytes pulled in", registry=r)
        self.kv_transfer_seconds = Counter("grader_kv_transfer_seconds",
                                           "Seconds spent in KV handshakes and pulls",
                                           registry=r)
        self.kv_errors = Counter("grader_kv_errors", "KV transfers refused, by error type",
                                 ["type"], registry=r)
        self.kv_handles = Gauge("grader_kv_handles", "KV handles waiting to be pulled",
                                registry=r)
        self.kv_store_bytes = Gauge("grader_kv_store_bytes",
                                    "Bytes of KV waiting to be pulled", registry=r)
        self.kv_leases_expired = Counter("grader_kv_leases_expired",
                                         "KV handles freed because nobody pulled them",
                                         registry=r)
        self._steps = _DecodeSteps()
        r.register(self._steps)
        self._lock = threading.Lock()
        # the last RECENT requests' (tokens, seconds): /status's speeds say what the
        # server does now, which a router seeds its estimates with
        self._prefill: deque[tuple[int, float]] = deque(maxlen=RECENT)
        self._decode: deque[tuple[int, float]] = deque(maxlen=RECENT)
        self._through: deque[tuple[float, float]] = deque(maxlen=RECENT)

    def bind(self, *, busy: Callable[[], float], waiting: Callable[[], float],
             handles: Callable[[], float], store_bytes: Callable[[], float],
             steps: Callable[[], tuple[int, int, float, int]] | None = None) -> None:
        """Gauges read live from the engine at scrape time (``steps``: the batched
        decoder's steps, tokens, seconds and active sequences)."""
        if steps is not None:
            self._steps.read = steps
        self.requests_processing.set_function(busy)
        self.requests_deferred.set_function(waiting)
        self.kv_handles.set_function(handles)
        self.kv_store_bytes.set_function(store_bytes)

    def record(self, m: RequestMetrics) -> None:
        """Count what llama.cpp measured for one request (either phase may be zero)."""
        if m.prefill_tokens:
            self.prompt_tokens.inc(m.prefill_tokens)
            self.prompt_seconds.inc(m.prefill_seconds)
        if m.decode_tokens:
            self.tokens_predicted.inc(m.decode_tokens)
            self.tokens_predicted_seconds.inc(m.decode_seconds)
        with self._lock:
            if m.prefill_tokens and m.prefill_seconds > 0:
                self._prefill.append((m.prefill_tokens, m.prefill_seconds))
            if m.decode_evals and m.decode_seconds > 0:
                self._decode.append((m.decode_evals, m.decode_seconds))
                self._through.append((m.decode_evals * max(1.0, m.decode_width),
                                      m.decode_seconds))

    @property
    def prefill_tps(self) -> float:
        """Prompt tokens per second over the last RECENT prefills (0: none yet)."""
        with self._lock:
            return _rate(self._prefill)

    @property
    def decode_tps(self) -> float:
        """Tokens per second over the last RECENT decodes (0: none yet)."""
        with self._lock:
            return _rate(self._decode)

    @property
    def decode_batch_tps(self) -> float:
        """The server's decode throughput over the last RECENT decodes: each reply's
        tokens times the sequences it shared its steps with on average, over its
        seconds (equal to ``decode_tps`` when nothing was batched; 0: none yet)."""
        with self._lock:
            return _rate(self._through)

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
