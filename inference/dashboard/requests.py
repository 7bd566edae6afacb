"""What the dashboard shows, computed without Streamlit: per-role latency
percentiles, throughput and latency over time, the filtered request history, and the
Plotly figures of them. The machines (worker and server cards, the servers' timeline,
links and routing decisions) are built in ``servers``; its names are re-exported here.

Every number comes from ``RequestMetrics`` the engine measured and the history
recorded; nothing is estimated. Filtering runs as SQL (``MetricsHistory``); time
series are bucketed so that a chart never has more than ``max_points`` points per
role, whatever the size of the history. Throughput in a bucket is the bucket's
evaluated tokens over the seconds spent evaluating them (failed requests left
out); TTFT and TPOT are percentiles over the bucket's successful requests. Where a
bucket has nothing to measure its value is ``None`` (a gap), never NaN or 0.
"""

from __future__ import annotations

import json
import math
import time
import uuid
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from ..errors import InvalidRequestError
from ..metrics import HistoryEntry, HistoryFilter, MetricsHistory, Sample, Status, percentile
from ..types import GenerationRequest, GenerationResult
from .rows import history_rows
from .servers import STATE_COLORS, WorkerCard, worker_cards

__all__ = [
    "ANY",
    "PROMPT_PREFIX",
    "REFRESH_SECONDS",
    "STATE_COLORS",
    "STATUSES",
    "WINDOWS",
    "DashboardView",
    "RoleSummary",
    "Series",
    "StreamCapture",
    "WorkerCard",
    "build_view",
    "filter_choices",
    "latency_figure",
    "make_filter",
    "prompt_request",
    "run_every",
    "server_choices",
    "status_line",
    "summarize_roles",
    "summary_rows",
    "table_rows",
    "throughput_figure",
    "time_series",
    "worker_cards",
]

ANY = "Any"  # the choice of a filter that filters nothing
WINDOWS: dict[str, float | None] = {
    "Last 15 minutes": 15 * 60.0, "Last hour": 3600.0, "Last 24 hours": 86_400.0,
    "Last 7 days": 7 * 86_400.0, "All time": None,
}
STATUSES: dict[str, Status | None] = {ANY: None, "OK": "ok", "Error": "error"}
REFRESH_SECONDS = (2, 5, 10, 30, 60)
MAX_POINTS = 200
TABLE_LIMIT = 200
_PALETTE = qualitative.Plotly


# -- controls -------------------------------------------------------------------
def run_every(live: bool, seconds: float) -> float | None:
    """The fragment's refresh interval: ``None`` (no automatic rerun) when paused."""
    if seconds <= 0:
        raise ValueError(f"a refresh interval must be positive, got {seconds}")
    return float(seconds) if live else None


def make_filter(window: str, role: str = ANY, route: str = ANY, status: str = ANY,
                text: str = "", now: float | None = None, *, server: str = ANY) -> HistoryFilter:
    """The filter the page's widgets describe (``ANY`` filters nothing); ``server``
    matches the prefill or the decode worker."""
    if window not in WINDOWS:
        raise ValueError(f"window {window!r} is not one of {', '.join(WINDOWS)}")
    if status not in STATUSES:
        raise ValueError(f"status {status!r} is not one of {', '.join(STATUSES)}")
    span = WINDOWS[window]
    now = time.time() if now is None else now
    return HistoryFilter(role=None if role == ANY else role,
                         route=None if route == ANY else route, status=STATUSES[status],
                         since=None if span is None else now - span, text=text.strip(),
                         server=None if server == ANY else server)


def filter_choices(history: MetricsHistory, roles: Iterable[str] = ()) -> tuple[
        list[str], list[str]]:
    """The role and route filter's choices: ``ANY``, then the configured ``roles`` and
    every role and route the history holds."""
    return ([ANY, *sorted(set(roles) | set(history.distinct("role")))],
            [ANY, *history.distinct("route")])


def server_choices(history: MetricsHistory, servers: Iterable[str] = ()) -> list[str]:
    """The server filter's choices: ``ANY``, the configured ``servers`` and every
    prefill and decode worker the history holds."""
    return [ANY, *sorted(set(servers) | set(history.distinct("prefill_worker"))
                         | set(history.distinct("decode_worker")))]


def status_line(live: bool, seconds: float, now: float | None = None) -> str:
    clock = datetime.fromtimestamp(time.time() if now is None else now).strftime("%H:%M:%S")
    if live:
        return f"Live: refreshes every {seconds:g} s (last at {clock})."
    return f"Paused: as of {clock}. Switch Live on to refresh."


# -- percentiles per role ---------------------------------------------------------
def _pct(values: Sequence[float], q: float) -> float | None:
    return None if not values else percentile(values, q)


def _rate(tokens: float, seconds: float) -> float | None:
    return tokens / seconds if seconds > 0 else None


@dataclass(slots=True)
class _Acc:
    """The measurements of a group of samples (a role, or a role's time bucket)."""

    requests: int = 0
    errors: int = 0
    ttft: list[float] = field(default_factory=list)
    tpot: list[float] = field(default_factory=list)
    prefill_tokens: float = 0.0
    prefill_seconds: float = 0.0
    decode_evals: float = 0.0
    decode_seconds: float = 0.0

    def add(self, s: Sample) -> None:
        self.requests += 1
        if not s.ok:
            self.errors += 1
            return
        if s.ttft_seconds > 0:
            self.ttft.append(s.ttft_seconds)
        if s.tpot_seconds > 0:
            self.tpot.append(s.tpot_seconds)
        if s.prefill_seconds > 0:
            self.prefill_tokens += s.prefill_tokens
            self.prefill_seconds += s.prefill_seconds
        if s.decode_seconds > 0:
            self.decode_evals += s.decode_evals
            self.decode_seconds += s.decode_seconds


@dataclass(frozen=True, slots=True)
class RoleSummary:
    """A role's requests in the filtered window. Times in seconds; ``None``: nothing
    measured (say, every request failed)."""

    role: str
    requests: int
    errors: int
    ttft_p50: float | None
    ttft_p95: float | None
    tpot_p50: float | None
    tpot_p95: float | None
    prefill_tps: float | None  # evaluated prompt tokens / prefill seconds, summed
    decode_tps: float | None


def _summary(role: str, a: _Acc) -> RoleSummary:
    return RoleSummary(role, a.requests, a.errors, _pct(a.ttft, 50), _pct(a.ttft, 95),
                       _pct(a.tpot, 50), _pct(a.tpot, 95),
                       _rate(a.prefill_tokens, a.prefill_seconds),
                       _rate(a.decode_evals, a.decode_seconds))


def summarize_roles(samples: Iterable[Sample]) -> list[RoleSummary]:
    accs: dict[str, _Acc] = defaultdict(_Acc)
    for s in samples:
        accs[s.role].add(s)
    return [_summary(role, accs[role]) for role in sorted(accs)]


def _r(x: float | None, scale: float = 1.0, digits: int = 3) -> float | None:
    return None if x is None or math.isnan(x) else round(x * scale, digits)


def summary_rows(summaries: Iterable[RoleSummary]) -> list[dict[str, Any]]:
    return [{
        "role": s.role, "requests": s.requests, "errors": s.errors,
        "TTFT p50 (s)": _r(s.ttft_p50), "TTFT p95 (s)": _r(s.ttft_p95),
        "TPOT p50 (ms)": _r(s.tpot_p50, 1000, 2), "TPOT p95 (ms)": _r(s.tpot_p95, 1000, 2),
        "prefill tok/s": _r(s.prefill_tps, digits=1), "decode tok/s": _r(s.decode_tps, digits=1),
    } for s in summaries]


# -- time series -----------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Series:
    """One role over time: one point per non-empty bucket, ``at`` its centre (epoch s)."""

    role: str
    at: list[float]
    requests: list[int]
    errors: list[int]
    prefill_tps: list[float | None]
    decode_tps: list[float | None]
    ttft_p50: list[float | None]
    ttft_p95: list[float | None]
    tpot_p50: list[float | None]
    tpot_p95: list[float | None]

    def __len__(self) -> int:
        return len(self.at)


def time_series(samples: Sequence[Sample], start: float | None = None,
                end: float | None = None, max_points: int = MAX_POINTS) -> list[Series]:
    """Bucket ``samples`` (oldest first) into at most ``max_points`` equal spans of
    [start, end] (default: the samples' own span), per role."""
    if max_points < 1:
        raise ValueError(f"max_points must be at least 1, got {max_points}")
    if not samples:
        return []
    start = samples[0].at if start is None else start
    end = samples[-1].at if end is None else end
    width = max((end - start) / max_points, 1e-6)
    buckets: dict[str, dict[int, _Acc]] = defaultdict(dict)
    for s in samples:
        b = min(max(int((s.at - start) / width), 0), max_points - 1)
        acc = buckets[s.role].get(b)
        if acc is None:
            acc = buckets[s.role][b] = _Acc()
        acc.add(s)
    out = []
    for role in sorted(buckets):
        keys = sorted(buckets[role])
        sums = [_summary(role, buckets[role][b]) for b in keys]
        out.append(Series(
            role, [start + (b + 0.5) * width for b in keys], [s.requests for s in sums],
            [s.errors for s in sums], [s.prefill_tps for s in sums],
            [s.decode_tps for s in sums], [s.ttft_p50 for s in sums],
            [s.ttft_p95 for s in sums], [s.tpot_p50 for s in sums], [s.tpot_p95 for s in sums]))
    return out


# -- the history table ------------------------------------------------------------
def _clock(at: float) -> str:
    return datetime.fromtimestamp(at).strftime("%Y-%m-%d %H:%M:%S") if at > 0 else ""


def table_rows(entries: Iterable[HistoryEntry]) -> list[dict[str, Any]]:
    """Rows of the history table, in the order given, with time and status first, then
    (when some request failed over) what failed and what served instead."""
    entries = list(entries)
    failover = any(e.metrics.failover for e in entries)
    return [{"time": _clock(e.at), "status": "ok" if e.metrics.ok else "error",
             **({"failover": e.metrics.failover} if failover else {}), **row}
            for e, row in zip(entries, history_rows(e.metrics for e in entries), strict=True)]


# -- one snapshot for the page -----------------------------------------------------
@dataclass(frozen=True, slots=True)
class DashboardView:
    total: int  # every request in the history
    matched: int  # those the filter lets through
    summaries: list[RoleSummary]
    series: list[Series]
    rows: list[dict[str, Any]]  # the table: newest first, at most the limit

    @property
    def empty(self) -> bool:
        return self.total == 0

    @property
    def measured(self) -> bool:
        """Whether some matching request succeeded (and so has numbers to chart)."""
        return any(s.requests > s.errors for s in self.summaries)


def build_view(history: MetricsHistory, flt: HistoryFilter, table_limit: int = TABLE_LIMIT,
               max_points: int = MAX_POINTS, now: float | None = None) -> DashboardView:
    """Everything the dashboard's charts and table show, read from ``history`` in three
    queries (count, samples, the table's page)."""
    total = history.count()
    if total == 0:
        return DashboardView(0, 0, [], [], [])
    samples = history.samples(flt)
    start = flt.since
    end = flt.until if flt.until is not None else (
        (time.time() if now is None else now) if start is not None else None)
    return DashboardView(
        total=total, matched=len(samples), summaries=summarize_roles(samples),
        series=time_series(samples, start, end, max_points),
        rows=table_rows(history.search(flt, table_limit)),
    )


# -- figures ---------------------------------------------------------------------
def _times(s: Series) -> list[datetime]:
    return [datetime.fromtimestamp(t) for t in s.at]


def _ms(values: list[float | None]) -> list[float | None]:
    return [None if v is None else v * 1000 for v in values]


def throughput_figure(series: Sequence[Series]) -> go.Figure:
    """Prefill and decode tokens per second over time, one line per role."""
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.12,
                        subplot_titles=("Prefill (tokens/s)", "Decode (tokens/s)"))
    for i, s in enumerate(series):
        color, x = _PALETTE[i % len(_PALETTE)], _times(s)
        for row, values in ((1, s.prefill_tps), (2, s.decode_tps)):
            fig.add_trace(go.Scatter(x=x, y=values, name=s.role, legendgroup=s.role,
                                     showlegend=row == 1, mode="lines+markers",
                                     line={"color": color}, marker={"size": 4}),
                          row=row, col=1)
    fig.update_layout(height=420, margin={"t": 40, "b": 20, "l": 10, "r": 10},
                      hovermode="x unified")
    return fig


def latency_figure(series: Sequence[Series]) -> go.Figure:
    """TTFT (s) and TPOT (ms) p50 (solid) and p95 (dashed) over time, per role."""
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.12,
                        subplot_titles=("Time to first token (s)", "Time per output token (ms)"))
    for i, s in enumerate(series):
        color, x = _PALETTE[i % len(_PALETTE)], _times(s)
        for row, p50, p95 in ((1, s.ttft_p50, s.ttft_p95),
                              (2, _ms(s.tpot_p50), _ms(s.tpot_p95))):
            for q, values, dash in (("p50", p50, "solid"), ("p95", p95, "dash")):
                fig.add_trace(go.Scatter(x=x, y=values, name=f"{s.role} {q}",
                                         legendgroup=f"{s.role} {q}", showlegend=row == 1,
                                         mode="lines+markers", marker={"size": 4},
                                         line={"color": color, "dash": dash}), row=row, col=1)
    fig.update_layout(height=420, margin={"t": 40, "b": 20, "l": 10, "r": 10},
                      hovermode="x unified")
    return fig


# -- the test prompt ---------------------------------------------------------------
PROMPT_PREFIX = "prompt-"  # a test prompt's request id: its failure is the Dashboard's


def prompt_request(role: str, system: str, user: str, max_tokens: int, temperature: float,
                   schema_text: str = "") -> GenerationRequest:
    """The request the test-prompt form describes; a schema that is not a JSON object is
    an ``InvalidRequestError`` (one that is, but cannot be compiled, fails when sent)."""
    schema = None
    if schema_text.strip():
        try:
            schema = json.loads(schema_text)
        except json.JSONDecodeError as exc:
            raise InvalidRequestError(f"the JSON schema is not valid JSON: {exc}") from exc
        if not isinstance(schema, dict):
            raise InvalidRequestError("the JSON schema must be a JSON object")
    return GenerationRequest.chat(role, system.strip() or None, user,
                                  max_tokens=int(max_tokens), temperature=float(temperature),
                                  json_schema=schema,
                                  request_id=f"{PROMPT_PREFIX}{uuid.uuid4().hex[:12]}")


class StreamCapture:
    """The text pieces of ``DisaggregatedClient.stream`` (for ``st.write_stream``); the
    final ``GenerationResult`` is kept in ``result``. Errors propagate from iteration."""

    def __init__(self, stream: Iterable[str | GenerationResult]) -> None:
        self._stream = stream
        self.result: GenerationResult | None = None

    def __iter__(self) -> Iterator[str]:
        for item in self._stream:
            if isinstance(item, GenerationResult):
                self.result = item
            else:
                yield item
