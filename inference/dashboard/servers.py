"""What the Dashboard shows of the machines, computed without Streamlit: a card per
embedded worker and per remote server, the servers' timeline (state and circuit
changes, failovers, canary results, KV errors) in words, the measured KV links
between prefill and decode servers, and the router's decisions with what they took.

Everything is read from the client's ``Cluster`` (``inference.cluster``): the health
monitor's snapshots and events, the link table and the cost model's decision log; and
from the cluster journal, where other processes (a CLI batch, the app before a restart)
recorded theirs: a card's "since" is the oldest time anyone saw the server in its state
(``cluster_history`` merges the rest). Nothing here probes or changes a server.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import plotly.graph_objects as go

from ..cluster.health import HealthEvent
from ..cluster.routing import Decision, RouteOption
from ..types import WorkerHealth

if TYPE_CHECKING:
    from ..client import DisaggregatedClient
    from ..cluster.cluster import Cluster
    from ..cluster.journal import ClusterJournal
    from ..cluster.measure import LinkEstimate

__all__ = [
    "CIRCUIT_COLORS",
    "EVENT_WORDS",
    "LEVEL_MARKS",
    "STATE_COLORS",
    "DecisionRow",
    "LinkRow",
    "ServerCard",
    "TimelineRow",
    "WorkerCard",
    "cluster_cards",
    "decision_figure",
    "decision_rows",
    "decision_summary",
    "is_server",
    "link_rows",
    "plain",
    "server_cards",
    "table",
    "timeline_rows",
    "worker_cards",
]

STATE_COLORS = {"up": "green", "degraded": "orange", "down": "red", "loading": "gray"}
CIRCUIT_COLORS = {"closed": "green", "half_open": "orange", "open": "red"}
CIRCUIT_WORDS = {"closed": "circuit closed", "half_open": "circuit half-open",
                 "open": "circuit open"}
# kind -> (what the timeline says, how bad: "bad", "warn", "good" or "info")
EVENT_WORDS: dict[str, tuple[str, str]] = {
    "down": ("went down", "bad"),
    "up": ("came up", "good"),
    "degraded": ("degraded", "warn"),
    "loading": ("loading its model", "info"),
    "circuit_open": ("circuit opened: requests avoid it", "bad"),
    "circuit_half_open": ("circuit half-open: one trial request at a time", "warn"),
    "circuit_closed": ("circuit closed: serving again", "good"),
    "failover": ("failover: served instead of a failed server", "warn"),
    "canary_ok": ("canary agreed", "good"),
    "canary_skipped": ("canary not compared: a server did not answer", "warn"),
    "canary_fail": ("canary diverged: KV not shipped to it", "bad"),
    "kv_error": ("KV handoff failed", "bad"),
}
LEVEL_MARKS = {"bad": "\N{LARGE RED CIRCLE}", "warn": "\N{LARGE ORANGE CIRCLE}",
               "good": "\N{LARGE GREEN CIRCLE}", "info": "\N{MEDIUM WHITE CIRCLE}"}
MAX_ALTERNATIVES = 3
_MD_SPECIAL = set("\\`*_{}[]()<>#+-.!|:~$")


def _clock(at: float | None, date: bool = False) -> str:
    """The time of day, with the date when ``date`` or when it is not today's."""
    if not at:
        return ""
    when = datetime.fromtimestamp(at)
    date = date or when.date() != datetime.now().date()
    return when.strftime("%Y-%m-%d %H:%M:%S" if date else "%H:%M:%S")


def _round(x: float | None, digits: int) -> float | None:
    return None if x is None else round(x, digits)


def plain(text: str) -> str:
    """``text`` escaped for Markdown, so an error message or a URL shows as written."""
    return "".join(f"\\{c}" if c in _MD_SPECIAL else c for c in text)


def table(rows: Iterable[TimelineRow | LinkRow | DecisionRow]) -> list[dict[str, Any]]:
    """The rows as a table's records (column names carry the units)."""
    return [r.row() for r in rows]


# -- embedded workers -------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class WorkerCard:
    name: str
    role: str
    route: str
    kind: str
    state: str
    color: str  # of the state's badge
    model: str
    last_latency: str  # "0.412 s", or "-" before the first request
    queue: int
    busy: bool
    requests: int
    errors: int
    detail: str


def is_server(h: WorkerHealth) -> bool:
    """Whether ``h`` is a remote server's card (the cluster sets its address)."""
    return "url" in h.extra


def worker_cards(health: Iterable[WorkerHealth]) -> list[WorkerCard]:
    return [WorkerCard(
        name=h.name, role=h.role, route=h.route, kind=h.kind, state=h.state,
        color=STATE_COLORS.get(h.state, "gray"), model=h.model,
        last_latency="-" if h.last_latency_s is None else f"{h.last_latency_s:.3f} s",
        queue=h.queue, busy=h.busy, requests=h.requests, errors=h.errors, detail=h.detail,
    ) for h in health]


# -- remote servers ---------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ServerCard:
    """One remote server as the Dashboard shows it. ``roles``: the client roles it
    serves ("code, feedback"); ``kind``: its own role (prefill, decode, both)."""

    name: str
    roles: str
    kind: str
    protocol: str
    address: str
    state: str
    color: str
    since: str  # when it entered ``state``
    circuit: str  # closed, open, half_open
    circuit_color: str
    model: str
    identity: str  # the first 8 hex of the identity hash; "" where the protocol has none
    probe_latency_s: float | None
    slots_busy: int
    slots_total: int
    queue: int  # requests waiting on the server (its own count)
    outstanding: int  # this client's requests in flight there
    prefill_tps: float  # 0: not measured
    decode_tps: float
    requests: int
    errors: int
    last_error: str  # "" when it never failed
    last_error_at: str
    degraded_reason: str

    @property
    def probe_latency(self) -> str:
        return "-" if self.probe_latency_s is None else f"{self.probe_latency_s * 1000:.0f} ms"

    @property
    def slots(self) -> str:
        return f"{self.slots_busy} / {self.slots_total}" if self.slots_total else "-"

    @property
    def circuit_words(self) -> str:
        return CIRCUIT_WORDS.get(self.circuit, f"circuit {self.circuit}")

    @property
    def model_line(self) -> str:
        model = self.model or "model unknown"
        return f"{model} ({self.identity})" if self.identity else model

    @property
    def speeds(self) -> str:
        def one(x: float) -> str:
            return f"{x:.0f}" if x > 0 else "-"
        return f"{one(self.prefill_tps)} / {one(self.decode_tps)} tok/s"

    @property
    def error_line(self) -> str:
        if not self.last_error:
            return ""
        return f"{self.last_error_at}: {self.last_error}" if self.last_error_at \
            else self.last_error


def server_cards(client: DisaggregatedClient) -> list[ServerCard]:
    """A card per server of the client's cluster, by name; none without a remote route.
    The cluster is built with the backends, on first use: this builds them if needed."""
    if client.cluster is None and any(r.remote for r in client.config.routes.values()):
        client.health()
    return [] if client.cluster is None else cluster_cards(client.cluster, client.journal)


def cluster_cards(cluster: Cluster, journal: ClusterJournal | None = None) -> list[ServerCard]:
    """A card per server of ``cluster``, by name, as its health monitor sees it now;
    with a ``journal``, "since" goes back to when any process first saw that state."""
    routes = sorted(cluster.config.routes.items())
    cards = []
    for name in sorted(cluster.endpoints):
        state = cluster.state(name)
        roles = ", ".join(role for role, r in routes if r.remote and name in r.servers)
        h = cluster.card(state, roles, "")
        x = h.extra
        failed = state.last_error_at is not None or state.state == "down"
        since = journal.since(name, state.state, state.since) if journal else state.since
        circuit = str(x["circuit"])
        cards.append(ServerCard(
            name=name, roles=roles, kind=str(x["server_role"]), protocol=str(x["protocol"]),
            address=str(x["url"]), state=h.state, color=STATE_COLORS.get(h.state, "gray"),
            since=_clock(since), circuit=circuit,
            circuit_color=CIRCUIT_COLORS.get(circuit, "gray"), model=h.model,
            identity=str(x.get("identity_hash") or "")[:8],
            probe_latency_s=x.get("probe_latency_s"), slots_busy=int(x.get("slots_busy") or 0),
            slots_total=int(x.get("slots_total") or 0), queue=h.queue,
            outstanding=int(x.get("outstanding") or 0),
            prefill_tps=float(x.get("prefill_tps") or 0.0),
            decode_tps=float(x.get("decode_tps") or 0.0), requests=h.requests,
            errors=h.errors, last_error=state.last_error if failed else "",
            last_error_at=_clock(state.last_error_at), degraded_reason=state.degraded_reason))
    return cards


# -- the timeline ------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class TimelineRow:
    at: float
    server: str
    kind: str
    event: str  # in words
    level: str  # bad, warn, good, info
    detail: str

    def row(self) -> dict[str, Any]:
        return {"time": _clock(self.at, date=True), "server": self.server,
                "event": f"{LEVEL_MARKS.get(self.level, '')} {self.event}",
                "detail": self.detail}


def timeline_rows(events: Iterable[HealthEvent], limit: int = 200,
                  kinds: Iterable[str] | None = None) -> list[TimelineRow]:
    """The events newest first (at most ``limit``), in words; ``kinds`` keeps only
    those kinds."""
    keep = None if kinds is None else set(kinds)
    rows = []
    # oldest first in, newest first out; ties keep the later-recorded event first
    for e in sorted(reversed(list(events)), key=lambda e: e.at, reverse=True):
        if keep is not None and e.kind not in keep:
            continue
        words, level = EVENT_WORDS.get(e.kind, (e.kind.replace("_", " "), "info"))
        rows.append(TimelineRow(e.at, e.server, e.kind, words, level, e.detail))
        if len(rows) >= limit:
            break
    return rows


# -- links between prefill and decode servers ---------------------------------------
@dataclass(frozen=True, slots=True)
class LinkRow:
    """A prefill -> decode pair. Bandwidth and latency as measured on real KV
    transfers (None: never measured, or latency not separable from bandwidth)."""

    prefill: str
    decode: str
    bandwidth_mb_s: float | None
    latency_ms: float | None
    samples: int
    updated: str
    note: str

    def row(self) -> dict[str, Any]:
        return {"prefill": self.prefill, "decode": self.decode,
                "KV bandwidth (MB/s)": self.bandwidth_mb_s, "latency (ms)": self.latency_ms,
                "samples": self.samples, "measured at": self.updated, "note": self.note}


def link_rows(cluster: Cluster | None,
              estimates: dict[tuple[str, str], LinkEstimate] | None = None) -> list[LinkRow]:
    """Every pair of our servers that could ship KV, and every pair measured
    (``estimates``: the cluster's own by default)."""
    ours = [e for e in cluster.endpoints.values() if e.protocol == "kvserver"] \
        if cluster is not None else []
    pairs = {(p.name, d.name) for p in ours for d in ours
             if p.name != d.name and p.can_prefill and d.can_decode}
    if estimates is None:
        estimates = cluster.links.estimates() if cluster is not None else {}
    rows = []
    for p, d in sorted(pairs | set(estimates)):
        est = estimates.get((p, d))
        refused = cluster.compatible(p, d) if cluster is not None and p in cluster.endpoints \
            and d in cluster.endpoints else None
        if est is None:
            rows.append(LinkRow(p, d, None, None, 0, "", refused or
                                "not measured yet: the router guesses until a KV transfer"))
            continue
        note = refused or ("" if est.fitted else
                           "one transfer size so far: latency counted in the bandwidth")
        rows.append(LinkRow(p, d, round(est.bandwidth_bps / 1e6, 1),
                            _round(est.latency_s * 1000, 1) if est.fitted else None,
                            est.samples, _clock(est.updated_at), note))
    return rows


# -- the router's decisions ---------------------------------------------------------
@dataclass(frozen=True, slots=True)
class DecisionRow:
    at: float
    chosen: str  # "ship p->d", "self d", "single x"
    method: str
    predicted_s: float
    actual_s: float | None
    error_pct: float | None  # (actual / predicted - 1) x 100
    parts: str
    alternatives: str
    why: str

    def row(self) -> dict[str, Any]:
        return {"time": _clock(self.at, date=True), "chosen route": self.chosen,
                "predicted (s)": round(self.predicted_s, 3),
                "actual (s)": _round(self.actual_s, 3),
                "error (%)": _round(self.error_pct, 1), "predicted parts": self.parts,
                "alternatives": self.alternatives, "why": self.why}


def _alternatives(options: Sequence[RouteOption]) -> str:
    shown = ", ".join(f"{o.label} {o.predicted_s:.2f} s" for o in options[:MAX_ALTERNATIVES])
    more = len(options) - MAX_ALTERNATIVES
    return (shown + (f" (+{more} more)" if more > 0 else "")) or "none"


def _why(o: RouteOption) -> str:
    why = o.reason or "cheapest"
    return why + (f"; guessed: {', '.join(o.guessed)}" if o.guessed else "")


def decision_rows(decisions: Iterable[Decision], limit: int = 100) -> list[DecisionRow]:
    """The decisions newest first (at most ``limit``)."""
    rows = []
    for d in sorted(decisions, key=lambda d: d.at, reverse=True)[:limit]:
        o = d.option
        error = ((d.actual_s / o.predicted_s - 1) * 100
                 if d.actual_s is not None and o.predicted_s > 0 else None)
        parts = ", ".join(f"{k.replace('_', ' ')} {v:.2f}" for k, v in o.parts.items() if v)
        rows.append(DecisionRow(d.at, o.label, o.method, o.predicted_s, d.actual_s, error,
                                parts, _alternatives(d.alternatives), _why(o)))
    return rows


def decision_summary(decisions: Sequence[Decision]) -> str:
    """One line: how many decisions, and how far off the predictions were."""
    if not decisions:
        return "No routing decision yet."
    done = [d for d in decisions if d.actual_s is not None and d.option.predicted_s > 0]
    line = f"{len(decisions)} routing decisions, {len(done)} with a measured outcome"
    if not done:
        return line + "."
    errors = [abs(d.actual_s / d.option.predicted_s - 1) * 100 for d in done
              if d.actual_s is not None]
    return f"{line}; median prediction error {statistics.median(errors):.0f} %."


def decision_figure(decisions: Sequence[Decision]) -> go.Figure:
    """Predicted against actual seconds, one point per decision with an outcome, by
    method; the dashed line is a perfect prediction."""
    done = [d for d in decisions if d.actual_s is not None]
    fig = go.Figure()
    for method in sorted({d.option.method for d in done}):
        mine = [d for d in done if d.option.method == method]
        fig.add_trace(go.Scatter(
            x=[d.option.predicted_s for d in mine], y=[d.actual_s for d in mine],
            mode="markers", name=method, text=[d.option.label for d in mine],
            hovertemplate="%{text}<br>predicted %{x:.2f} s<br>actual %{y:.2f} s"))
    top = max([d.option.predicted_s for d in done] + [d.actual_s or 0.0 for d in done]
              + [0.1])
    fig.add_trace(go.Scatter(x=[0, top], y=[0, top], mode="lines", name="perfect",
                             line={"dash": "dash", "color": "gray"}, hoverinfo="skip"))
    fig.update_layout(height=320, margin={"t": 30, "b": 20, "l": 10, "r": 10},
                      xaxis_title="predicted (s)", yaxis_title="actual (s)",
                      title="Route predictions against what they took")
    return fig
