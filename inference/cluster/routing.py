"""Choosing servers: least-outstanding selection with prefix affinity, tables of
measured link and engine speeds, and the per-request ship-vs-recompute cost model.

For a prompt of S tokens (``cached`` of them already in a server's prefix cache) and
``max_tokens`` to generate, with b KV bytes per token:

    ship(P->D)  = max(wait(P) + (S - cached_P)/prefill_tps(P) + t0 + S*b/BW, wait(D))
                  + S*b/load_rate(D) + max_tokens/decode_tps(D)
    self(D)     = wait(D) + (S - cached_D)/prefill_tps(D) + max_tokens/decode_tps(D)
    single(X)   = self on a server of role "both", asked to do everything

Given a ``backlog`` (the decodes already sent to D, each with when its KV arrives:
``backlog.DecodeBacklog``), ``wait(D)`` in ship is D's queue played forward to the
moment this request's KV arrives, instead of all of D's work counted from now.

Static thresholds (Dynamo's 2048 tokens, exo's 1000) stand in for these measured
quantities elsewhere; here every term comes from a table fed by real transfers. A
pair whose link was never measured is shipped once when that could win, to learn it.
"""

from __future__ import annotations

import logging
import statistics
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from ..errors import BackendUnavailable, ConfigError
from .health import ServerState
from .measure import LinkTable, SpeedTable

log = logging.getLogger(__name__)

RouteMethod = Literal["ship", "self", "single"]
# per decode server: (seconds until a decode sent there can start, seconds of its work)
Backlog = Mapping[str, Sequence[tuple[float, float]]]
ROUTE_METHODS = ("ship", "self", "single")

DEFAULT_LOAD_BPS = 1e9  # bytes/s a decode server loads KV at, until measured
DEFAULT_LINK_BPS = 125e6  # an unmeasured link is guessed at 1 Gbit/s ...
DEFAULT_LINK_LATENCY_S = 0.002  # ... and 2 ms
DEFAULT_PREFILL_TPS = 200.0  # guesses for a server nobody measured or seeded
DEFAULT_DECODE_TPS = 50.0
TIE = 0.02  # predictions this close (2 %) are a tie, spread between the options


class Selector:
    """Least outstanding requests per unit of ``endpoint.weight`` (ties: fewest
    requests, then name), with prefix affinity: a key goes back to the server it went
    to last while that server is a candidate and its load is at most ``slack`` above
    the least loaded one. Thread-safe."""

    def __init__(self, slack: int = 2, max_keys: int = 10_000) -> None:
        if slack < 0:
            raise ConfigError(f"selector slack must be >= 0, not {slack!r}")
        self.slack = slack
        self._max_keys = max_keys
        self._affinity: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def load(state: ServerState) -> float:
        return state.outstanding / state.endpoint.weight

    def choose(self, candidates: Sequence[ServerState],
               affinity_key: str | None = None) -> ServerState:
        if not candidates:
            raise BackendUnavailable("no usable server to choose from")
        best = min(candidates, key=lambda s: (self.load(s), s.requests, s.endpoint.name))
        if affinity_key is None:
            return best
        with self._lock:
            chosen = best
            previous = self._affinity.get(affinity_key)
            for state in candidates:
                if state.endpoint.name == previous \
                        and self.load(state) <= self.load(best) + self.slack:
                    chosen = state
                    break
            self._affinity[affinity_key] = chosen.endpoint.name
            self._affinity.move_to_end(affinity_key)
            while len(self._affinity) > self._max_keys:
                self._affinity.popitem(last=False)
        return chosen

    def forget(self, server: str) -> None:
        """Drop every affinity to ``server`` (it went down or was removed)."""
        with self._lock:
            for key in [k for k, v in self._affinity.items() if v == server]:
                del self._affinity[key]


@dataclass(frozen=True, slots=True)
class RouteOption:
    """One way to serve a request and its predicted seconds; ``parts`` are the named
    terms (they add up to ``predicted_s``); ``guessed`` names the terms that came from
    defaults rather than measurements; ``explore``: chosen to measure a link."""

    method: RouteMethod
    prefill: str | None
    decode: str
    predicted_s: float
    parts: dict[str, float] = field(default_factory=dict)
    guessed: tuple[str, ...] = ()
    explore: bool = False
    reason: str = ""

    @property
    def label(self) -> str:
        return f"ship {self.prefill}->{self.decode}" if self.method == "ship" \
            else f"{self.method} {self.decode}"


@dataclass(frozen=True, slots=True)
class Decision:
    """A routing decision, the options it was chosen over, and (later) what it took."""

    at: float
    option: RouteOption
    alternatives: tuple[RouteOption, ...]
    actual_s: float | None = None


class CostModel:
    """Predicts every route for a request and picks the cheapest (see the module doc).

    ``kv_bytes_per_token``: a number, or a function of the prefill server's name.
    ``queue`` values are multiplied by ``queue_unit_s``: pass seconds (the default 1.0;
    the kvserver route passes each server's predicted outstanding work, see
    ``remote._wait_s``) or queue depths with ``queue_unit_s`` set to a typical
    request's seconds. Options predicted within ``TIE`` of the best take turns.
    """

    def __init__(self, links: LinkTable, speeds: SpeedTable,
                 kv_bytes_per_token: Callable[[str], float] | float, *,
                 load_bps: float = DEFAULT_LOAD_BPS, queue_unit_s: float = 1.0,
                 default_prefill_tps: float = DEFAULT_PREFILL_TPS,
                 default_decode_tps: float = DEFAULT_DECODE_TPS,
                 default_link_bps: float = DEFAULT_LINK_BPS,
                 default_link_latency_s: float = DEFAULT_LINK_LATENCY_S,
                 explore: bool = True, log_size: int = 500,
                 clock: Callable[[], float] = time.time) -> None:
        for name, value in (("load_bps", load_bps), ("queue_unit_s", queue_unit_s),
                            ("default_prefill_tps", default_prefill_tps),
                            ("default_decode_tps", default_decode_tps),
                            ("default_link_bps", default_link_bps)):
            if not value > 0:
                raise ConfigError(f"cost model {name} must be > 0, not {value!r}")
        self.links, self.speeds = links, speeds
        self._kv = kv_bytes_per_token
        self.load_bps, self.queue_unit_s = load_bps, queue_unit_s
        self._defaults = (default_prefill_tps, default_decode_tps)
        self._default_link = (default_link_bps, default_link_latency_s)
        self.explore = explore
        self._clock = clock
        self._explored: set[tuple[str, str]] = set()
        self._log: deque[Decision] = deque(maxlen=log_size)
        self._lock = threading.Lock()
        # Told each decision as it is logged and as its outcome arrives (the cluster
        # journal); an exception there is logged, never raised into the request.
        self.on_decision: Callable[[Decision], None] | None = None
        self.on_outcome: Callable[[Decision], None] | None = None

    def _tell(self, hook: Callable[[Decision], None] | None, decision: Decision) -> None:
        if hook is not None:
            try:
                hook(decision)
            except Exception:  # a journal must not break a request
                log.exception("routing hook failed for %s", decision.option.label)

    def kv_bytes(self, server: str, tokens: int) -> float:
        per_token = self._kv(server) if callable(self._kv) else self._kv
        return per_token * tokens

    def options(self, prompt_tokens: int, max_tokens: int, pairs: Sequence[tuple[str, str]],
                singles: Sequence[str] = (), cached: Mapping[str, int] | None = None,
                queue: Mapping[str, float] | None = None,
                backlog: Backlog | None = None) -> list[RouteOption]:
        """Every route with its prediction, cheapest first."""
        if prompt_tokens < 0 or max_tokens < 0:
            raise ValueError("prompt_tokens and max_tokens must be >= 0")
        cached, queue = cached or {}, queue or {}
        opts = [self._ship(p, d, prompt_tokens, max_tokens, cached, queue, backlog)
                for p, d in pairs]
        decoders = dict.fromkeys(d for _, d in pairs)
        opts += [self._local("self", d, prompt_tokens, max_tokens, cached, queue)
                 for d in decoders]
        opts += [self._local("single", x, prompt_tokens, max_tokens, cached, queue)
                 for x in dict.fromkeys(singles) if x not in decoders]  # else: self(x)
        return sorted(opts, key=lambda o: o.predicted_s)

    def choose(self, prompt_tokens: int, max_tokens: int, pairs: Sequence[tuple[str, str]],
               singles: Sequence[str] = (), cached: Mapping[str, int] | None = None,
               queue: Mapping[str, float] | None = None, turn: int = 0,
               backlog: Backlog | None = None) -> RouteOption:
        """The cheapest route, except that a pair whose link was never measured is
        shipped once when even a free link would make it the cheapest. ``turn``: how
        many of the caller's requests are being planned or served beside this one;
        the options tied for the best take turns by it (``spread``)."""
        opts = self.options(prompt_tokens, max_tokens, pairs, singles, cached, queue, backlog)
        if not opts:
            raise BackendUnavailable("no route: no server pair and no single server given")
        opts = spread(opts, turn, queue)
        with self._lock:
            best = picked = chosen = opts[0]
            for opt in opts if self.explore else ():
                pair = (opt.prefill or "", opt.decode)
                if opt.method != "ship" or "link" not in opt.guessed or pair in self._explored:
                    continue
                free_link = opt.predicted_s - opt.parts["link_latency"] - opt.parts["transfer"]
                if opt is best or free_link < best.predicted_s:
                    self._explored.add(pair)
                    picked = opt
                    chosen = replace(opt, explore=True, reason=(
                        f"explore: link {pair[0]}->{pair[1]} never measured; "
                        f"{free_link:.2f} s with a free link, best {best.predicted_s:.2f} s"))
                    break
            alternatives = tuple(o for o in opts if o is not picked)
            decision = Decision(self._clock(), chosen, alternatives)
            self._log.append(decision)
        self._tell(self.on_decision, decision)
        log.debug("route %s predicted %.2f s (%s)", chosen.label, chosen.predicted_s,
                  chosen.reason or "cheapest")
        return chosen

    def record_decision(self, option: RouteOption,
                        alternatives: tuple[RouteOption, ...] = ()) -> None:
        """Log a choice made by a fixed policy rather than ``choose`` (it still gets
        its actual time through ``record_outcome``)."""
        decision = Decision(self._clock(), option, alternatives)
        with self._lock:
            self._log.append(decision)
        self._tell(self.on_decision, decision)

    def record_outcome(self, option: RouteOption, actual_s: float) -> Decision:
        """Attach what ``option`` really took to its decision (or log a new one)."""
        with self._lock:
            for i in range(len(self._log) - 1, -1, -1):
                decision = self._log[i]
                if decision.option is option and decision.actual_s is None:
                    decision = self._log[i] = replace(decision, actual_s=actual_s)
                    break
            else:
                decision = Decision(self._clock(), option, (), actual_s)
                self._log.append(decision)
        self._tell(self.on_outcome, decision)
        return decision

    def decisions(self, limit: int = 200) -> list[Decision]:
        with self._lock:
            items = list(self._log)
        return items[-limit:] if limit > 0 else []

    def _wait(self, queue: Mapping[str, float], server: str) -> float:
        return max(0.0, queue.get(server, 0.0)) * self.queue_unit_s

    def _prefill_s(self, server: str, s: int, cached: int, guessed: list[str]) -> float:
        tps = self.speeds.prefill_tps(server, s)
        if tps is None:
            tps = self._defaults[0]
            guessed.append(f"prefill_tps:{server}")
        return max(s - cached, 1 if s else 0) / tps

    def _decode_s(self, server: str, n: int, guessed: list[str]) -> float:
        tps = self.speeds.decode_tps(server)
        if tps is None:
            tps = self._defaults[1]
            guessed.append(f"decode_tps:{server}")
        return n / tps

    def _decode_wait(self, queue: Mapping[str, float], backlog: Backlog | None, d: str,
                     ready: float) -> float:
        """Seconds a decode whose KV reaches ``d`` after ``ready`` s waits there: with a
        backlog, D serves the decodes that arrive before it in order of arrival."""
        items = backlog.get(d) if backlog is not None else None
        if items is None:
            return max(0.0, self._wait(queue, d) - ready)
        free = 0.0
        for arrive, work in sorted(items):
            if arrive > ready:
                break
            free = max(free, arrive) + work
        return max(0.0, free - ready)

    def _ship(self, p: str, d: str, s: int, n: int, cached: Mapping[str, int],
              queue: Mapping[str, float], backlog: Backlog | None = None) -> RouteOption:
        guessed: list[str] = []
        nbytes = self.kv_bytes(p, s)
        est = self.links.estimate(p, d)
        bandwidth, t0 = ((est.bandwidth_bps, est.latency_s) if est is not None
                         else self._default_link)
        if est is None:
            guessed.append("link")
        wait_p = self._wait(queue, p)
        prefill = self._prefill_s(p, s, cached.get(p, 0), guessed)
        transfer = nbytes / bandwidth
        ready = wait_p + prefill + t0 + transfer
        parts = {"wait": wait_p, "prefill": prefill, "link_latency": t0, "transfer": transfer,
                 "decode_wait": self._decode_wait(queue, backlog, d, ready),
                 "load": nbytes / (self.speeds.load_bps(d) or self.load_bps),
                 "decode": self._decode_s(d, n, guessed)}
        return RouteOption("ship", p, d, sum(parts.values()), parts, tuple(guessed))

    def _local(self, method: RouteMethod, x: str, s: int, n: int, cached: Mapping[str, int],
               queue: Mapping[str, float]) -> RouteOption:
        guessed: list[str] = []
        parts = {"wait": self._wait(queue, x),
                 "prefill": self._prefill_s(x, s, cached.get(x, 0), guessed),
                 "decode": self._decode_s(x, n, guessed)}
        return RouteOption(method, None, x, sum(parts.values()), parts, tuple(guessed))


def spread(opts: list[RouteOption], turn: int,
           load: Mapping[str, float] | None = None) -> list[RouteOption]:
    """``opts`` (cheapest first) with one of the options of the first one's method
    predicted within ``TIE`` of it moved first: the one whose servers have the least
    ``load`` (seconds of work waiting there), and among equals the ``turn``-th.
    Requests planned at the same moment, before any is counted on its servers, do not
    all go to the first server by name, and a prefill server whose wait hides under a
    decode server's is still chosen by its own; a request alone (turn 0, no load)
    keeps the order."""
    if not opts:
        return opts
    best = opts[0].predicted_s
    ties = [o for o in opts if o.predicted_s <= best * (1 + TIE) + 1e-9
            and o.method == opts[0].method]
    if len(ties) < 2:
        return opts
    load = load or {}

    def weight(o: RouteOption) -> float:
        return load.get(o.prefill or "", 0.0) + load.get(o.decode, 0.0)

    least = min(map(weight, ties))
    ties = [o for o in ties if weight(o) <= least + 1e-6]
    first = ties[turn % len(ties)]
    return [first, *(o for o in opts if o is not first)]


def regret(decisions: Sequence[Decision], best_actual: Sequence[float]) -> float:
    """Total seconds of the chosen routes over the total of the best route in hindsight
    (1.0: every choice was the best; 1.3: 30 % slower than an oracle)."""
    if len(decisions) != len(best_actual) or not decisions:
        raise ValueError("regret needs one best-in-hindsight time per decision")
    chosen = [d.actual_s for d in decisions]
    if any(a is None for a in chosen):
        raise ValueError("every decision needs its actual_s (record_outcome) first")
    best = sum(best_actual)
    if not best > 0:
        raise ValueError("best-in-hindsight times must add up to > 0")
    return sum(a for a in chosen if a is not None) / best


def prediction_error(decisions: Sequence[Decision]) -> float | None:
    """Median of |actual / predicted - 1| over decisions with an outcome."""
    errors = [abs(d.actual_s / d.option.predicted_s - 1) for d in decisions
              if d.actual_s is not None and d.option.predicted_s > 0]
    return statistics.median(errors) if errors else None
