"""What the router measures: each server pair's link (bandwidth and fixed latency,
fitted to real transfers) and each server's prefill speed by prompt length, decode
speed and KV load rate."""

from __future__ import annotations

import bisect
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..endpoint import ServerStatus
from ..errors import ConfigError

log = logging.getLogger(__name__)

PREFILL_BUCKETS = (256, 512, 1024, 2048, 4096, 8192)  # prompt-length bucket bounds

LINK_WINDOW = 16  # the newest transfers per pair a link's estimate is fitted to


@dataclass(frozen=True, slots=True)
class LinkEstimate:
    """``bandwidth_bps`` in bytes per second; ``latency_s`` the fixed cost t0 of one
    transfer; ``fitted``: t0 was separated from bandwidth (samples of >= 2 sizes)."""

    bandwidth_bps: float
    latency_s: float
    samples: int
    updated_at: float
    fitted: bool = False


class LinkTable:
    """Per (source, destination): the recent transfers and a weighted least-squares
    fit of ``seconds = t0 + nbytes / bandwidth`` (newer samples weigh more, so the
    estimate follows a link that changes, like an EWMA). ``on_record(src, dst, nbytes,
    seconds, at)``, when set, is told each transfer (the cluster journal); an exception
    there is logged, never raised into the request. Thread-safe."""

    def __init__(self, window: int = LINK_WINDOW, decay: float = 0.8, min_spread: float = 1.5,
                 clock: Callable[[], float] = time.time) -> None:
        if window < 1 or not 0 < decay <= 1 or min_spread < 1:
            raise ConfigError("link table: window >= 1, 0 < decay <= 1, min_spread >= 1")
        self._window, self._decay, self._min_spread = window, decay, min_spread
        self._clock = clock
        self._samples: dict[tuple[str, str], deque[tuple[float, float, float]]] = {}
        self._lock = threading.Lock()
        self.on_record: Callable[[str, str, float, float, float], None] | None = None

    def record(self, src: str, dst: str, nbytes: float, seconds: float) -> None:
        if not nbytes > 0 or not seconds > 0:
            raise ValueError(f"a transfer needs nbytes > 0 and seconds > 0, "
                             f"not {nbytes!r} bytes in {seconds!r} s")
        with self._lock:
            samples = self._samples.setdefault((src, dst), deque(maxlen=self._window))
            at = self._clock()
            samples.append((float(nbytes), float(seconds), at))
        if (hook := self.on_record) is not None:
            try:
                hook(src, dst, float(nbytes), float(seconds), at)
            except Exception:  # a journal must not break a request
                log.exception("link table hook failed for %s -> %s", src, dst)

    def estimate(self, src: str, dst: str) -> LinkEstimate | None:
        with self._lock:
            samples = list(self._samples.get((src, dst), ()))
        if not samples:
            return None
        bandwidth, latency, fitted = _fit_link(samples, self._decay, self._min_spread)
        return LinkEstimate(bandwidth, latency, len(samples), samples[-1][2], fitted)

    def estimates(self) -> dict[tuple[str, str], LinkEstimate]:
        with self._lock:
            pairs = list(self._samples)
        return {pair: est for pair in pairs if (est := self.estimate(*pair)) is not None}


def _fit_link(samples: Sequence[tuple[float, float, float]], decay: float,
              min_spread: float) -> tuple[float, float, bool]:
    n = len(samples)
    weights = [decay ** (n - 1 - i) for i in range(n)]
    xs = [s[0] for s in samples]
    ys = [s[1] for s in samples]
    total = sum(weights)
    mx = sum(w * x for w, x in zip(weights, xs, strict=True)) / total
    my = sum(w * y for w, y in zip(weights, ys, strict=True)) / total
    sxx = sum(w * (x - mx) ** 2 for w, x in zip(weights, xs, strict=True))
    if max(xs) >= min_spread * min(xs) and sxx > 0:
        sxy = sum(w * (x - mx) * (y - my) for w, x, y in zip(weights, xs, ys, strict=True))
        slope = sxy / sxx
        latency = my - slope * mx
        if slope > 0 and latency >= 0:
            return 1.0 / slope, latency, True
    # one size only (or a noisy fit): a line through the origin, t0 folded into it
    sxy0 = sum(w * x * y for w, x, y in zip(weights, xs, ys, strict=True))
    sxx0 = sum(w * x * x for w, x in zip(weights, xs, strict=True))
    return sxx0 / sxy0, 0.0, False


class SpeedTable:
    """Measured engine speeds per server: prefill tok/s per prompt-length bucket
    (prefill slows with length), decode tok/s, and KV load bytes/s; EWMAs. Decode is
    the server's throughput: a reply that shared its steps with others (continuous
    batching, ``width`` sequences per step on average) counts at its own rate times
    that width, since the server decoded the others at the same time. Measured per
    reply alone, a server that batched four replies looked four times slower than one
    that decoded one, and the router sent it nothing more (issue 23). A server's
    own ``ServerStatus`` speeds (its recent ones, re-read at every probe) seed it until
    something is measured, and a measurement fades back towards them with age
    (``half_life_s``): a server measured slow once, while it was busy, is not judged
    by that forever, and is tried again once its own figures say it is fast.
    Thread-safe."""

    def __init__(self, alpha: float = 0.3, half_life_s: float = 120.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not 0 < alpha <= 1:
            raise ConfigError(f"speed table alpha must be in (0, 1], not {alpha!r}")
        if not half_life_s > 0:
            raise ConfigError(f"speed table half_life_s must be > 0, not {half_life_s!r}")
        self._alpha, self._half_life, self._clock = alpha, half_life_s, clock
        self._prefill: dict[str, dict[int, tuple[float, float]]] = {}
        self._decode: dict[str, tuple[float, float]] = {}
        self._load: dict[str, float] = {}
        self._seeds: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def bucket(n_tokens: int) -> int:
        return bisect.bisect_right(PREFILL_BUCKETS, n_tokens)

    def seed(self, server: str, status: ServerStatus) -> None:
        """The server's own recent speeds (``/status``); zeros (nothing served yet)
        keep the seed it had."""
        with self._lock:
            old = self._seeds.get(server, (0.0, 0.0))
            decode = status.decode_batch_tps or status.decode_tps
            self._seeds[server] = (status.prefill_tps or old[0], decode or old[1])

    def record_prefill(self, server: str, tokens: int, seconds: float) -> None:
        rate = _rate(tokens, seconds)
        with self._lock:
            buckets = self._prefill.setdefault(server, {})
            key = self.bucket(tokens)
            buckets[key] = self._ewma(buckets.get(key), rate)

    def record_decode(self, server: str, tokens: int, seconds: float,
                      width: float = 1.0) -> None:
        """One reply's decode; ``width``: sequences per step on average while it
        decoded (1 when the server decoded it alone)."""
        rate = _rate(tokens, seconds) * max(1.0, width)
        with self._lock:
            self._decode[server] = self._ewma(self._decode.get(server), rate)

    def record_load(self, server: str, nbytes: float, seconds: float) -> None:
        rate = _rate(nbytes, seconds)
        with self._lock:
            self._load[server] = self._ewma(self._load.get(server), rate)[0]

    def prefill_tps(self, server: str, n_tokens: int, default: float | None = None
                    ) -> float | None:
        """The bucket of ``n_tokens``, else the nearest measured bucket (the longer one
        on a tie), else the server's seed, else ``default``."""
        want = self.bucket(n_tokens)
        with self._lock:
            buckets = self._prefill.get(server)
            seeded = self._seeds.get(server, (0.0, 0.0))[0]
            if buckets:
                return self._aged(buckets[min(buckets, key=lambda b: (abs(b - want), -b))],
                                  seeded)
        return seeded if seeded > 0 else default

    def decode_tps(self, server: str, default: float | None = None) -> float | None:
        with self._lock:
            measured = self._decode.get(server)
            seeded = self._seeds.get(server, (0.0, 0.0))[1]
        if measured is not None:
            return self._aged(measured, seeded)
        return seeded if seeded > 0 else default

    def load_bps(self, server: str, default: float | None = None) -> float | None:
        with self._lock:
            return self._load.get(server, default)

    def _ewma(self, old: tuple[float, float] | float | None, new: float
              ) -> tuple[float, float]:
        """The new (value, when) of an estimate (prefill and decode keep their time)."""
        if isinstance(old, tuple):
            old = old[0]
        value = new if old is None else (1 - self._alpha) * old + self._alpha * new
        return value, self._clock()

    def _aged(self, measured: tuple[float, float], seeded: float) -> float:
        """A measurement, faded towards the server's own figure by its age."""
        value, at = measured
        if seeded <= 0:
            return value
        keep = 0.5 ** (max(0.0, self._clock() - at) / self._half_life)
        return keep * value + (1 - keep) * seeded


def _rate(amount: float, seconds: float) -> float:
    if not amount > 0 or not seconds > 0:
        raise ValueError(f"a speed needs amount > 0 and seconds > 0, not {amount!r} "
                         f"in {seconds!r} s")
    return amount / seconds
