"""The Dashboard's view of the machines, built from real objects: a real ``Cluster`` whose
health monitor watches scripted transports (subclasses of the real ``Transport``
answering ``Probe`` objects), real routing decisions of the real ``CostModel``, real
events, and a real client whose servers nobody listens on. Also the history's server
filter, in SQL and in memory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from inference import DisaggregatedClient, HistoryFilter, MetricsHistory, RequestMetrics
from inference.cluster.cluster import Cluster
from inference.cluster.health import BreakerSettings, HealthMonitor
from inference.cluster.routing import CostModel, LinkTable, SpeedTable
from inference.config import parse_config
from inference.dashboard import requests as dash
from inference.dashboard import servers as machines
from inference.endpoint import Endpoint, Probe, ServerStatus, Timeouts, Transport
from inference.metrics import HistoryEntry
from inference.types import GenerationRequest, GenerationResult, WorkerHealth
from tests.server_procs import free_port

IDENTITY = "abcdef0123456789"


class ScriptedTransport(Transport):
    """Answers probes with what ``status`` says (None: connection refused)."""

    def __init__(self, endpoint: Endpoint, status: ServerStatus | None,
                 latency_s: float = 0.005) -> None:
        super().__init__(endpoint, Timeouts())
        self.status = status
        self.latency_s = latency_s

    def probe(self) -> Probe:
        if self.status is None:
            return Probe(ok=False, latency_s=0.001,
                         error="ConnectError: [Errno 111] Connection refused")
        return Probe(ok=True, latency_s=self.latency_s, status=self.status)

    def generate(self, request: GenerationRequest, on_token=None) -> GenerationResult:
        raise AssertionError("the dashboard never sends requests")


def config(tmp: Path, ports: dict[str, int] | None = None):
    """Three of our servers: ``pre`` prefills, ``dec`` decodes, ``gone`` does both and
    also serves the feedback role alone."""
    ports = ports or {name: free_port() for name in ("pre", "dec", "gone")}
    roles = {"pre": "prefill", "dec": "decode", "gone": "both"}
    return parse_config({
        "engine": {"history_db": str(tmp / "history.db")},
        "servers": {n: {"url": f"http://127.0.0.1:{p}", "role": roles[n]}
                    for n, p in ports.items()},
        "roles": {"code": {"backend": "kvserver", "servers": ["dec", "gone", "pre"]},
                  "feedback": {"backend": "kvserver", "mode": "single", "servers": ["gone"]}},
        "health": {"canary_interval": 0},
    })


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    """A real cluster whose monitor watches scripted transports; never started."""
    cl = Cluster(config(tmp_path))
    up = ServerStatus(model="smollm2-135m", identity_hash=IDENTITY, role="both",
                      slots_total=2, slots_busy=1, queue_depth=3, prefill_tps=240.0,
                      decode_tps=98.0)
    scripted = {"pre": ScriptedTransport(cl.endpoints["pre"], up),
                "dec": ScriptedTransport(cl.endpoints["dec"], up, latency_s=0.012),
                "gone": ScriptedTransport(cl.endpoints["gone"], None)}
    cl.monitor = HealthMonitor(scripted, interval=60, breaker=BreakerSettings(failures=3))
    try:
        cl.monitor.probe_all()
        yield cl
    finally:
        cl.close()


# -- cards ------------------------------------------------------------------------
def test_cards_show_state_circuit_model_slots_and_errors(cluster: Cluster):
    cards = {c.name: c for c in machines.cluster_cards(cluster)}
    assert list(cards) == ["dec", "gone", "pre"]
    pre, dec, gone = cards["pre"], cards["dec"], cards["gone"]
    assert (pre.state, pre.color, pre.circuit, pre.circuit_color) == ("up", "green", "closed",
                                                                      "green")
    assert (pre.kind, pre.protocol, pre.roles) == ("prefill", "kvserver", "code")
    assert pre.address == cluster.endpoints["pre"].url
    assert pre.model_line == "smollm2-135m (abcdef01)"
    assert (pre.slots, pre.queue, pre.outstanding) == ("1 / 2", 3, 0)
    assert pre.speeds == "240 / 98 tok/s"
    assert dec.probe_latency == "12 ms"
    assert pre.last_error == ""
    assert pre.error_line == ""
    assert (gone.state, gone.color, gone.roles) == ("down", "red", "code, feedback")
    assert gone.circuit == "closed"  # one failed probe of three
    assert "Connection refused" in gone.error_line
    assert gone.slots == "-"
    assert gone.model_line == "model unknown"
    # A refused request opens the circuit at once.
    cluster.monitor.report_failure("gone", "BackendUnavailable: refused", decisive=True)
    gone = {c.name: c for c in machines.cluster_cards(cluster)}["gone"]
    assert (gone.circuit, gone.circuit_color, gone.circuit_words) == ("open", "red",
                                                                     "circuit open")
    assert gone.error_line.endswith("BackendUnavailable: refused")
    assert gone.errors == 1


def test_speeds_measured_by_the_client_beat_the_servers_own(cluster: Cluster):
    cluster.speeds.record_decode("dec", 100, 2.0)
    assert {c.name: c for c in machines.cluster_cards(cluster)}["dec"].speeds == \
        "240 / 50 tok/s"


def test_degraded_reason_is_on_the_card(cluster: Cluster):
    cluster.monitor.mark_degraded("dec", "canary: pre -> dec diverged")
    dec = {c.name: c for c in machines.cluster_cards(cluster)}["dec"]
    assert (dec.state, dec.color) == ("degraded", "orange")
    assert dec.degraded_reason == "canary: pre -> dec diverged"


def test_server_cards_of_a_client_whose_servers_nobody_listens_on(tmp_path: Path):
    with DisaggregatedClient(config(tmp_path)) as client:
        assert client.cluster is None
        cards = machines.server_cards(client)  # builds the backends, probes once
        assert client.cluster is not None
        assert [c.name for c in cards] == ["dec", "gone", "pre"]
        assert {c.state for c in cards} == {"down"}
        assert all("ConnectError" in c.error_line for c in cards)
        # The workers section leaves the servers to the servers section.
        health = client.health()
        assert health
        assert all(machines.is_server(h) for h in health)
        assert machines.worker_cards(h for h in health if not machines.is_server(h)) == []


def test_a_client_without_servers_has_no_server_cards(tmp_path: Path):
    cfg = parse_config({"engine": {"history_db": str(tmp_path / "h.db")}})
    with DisaggregatedClient(cfg) as client:
        assert machines.server_cards(client) == []
        assert client.cluster is None
    embedded = WorkerHealth("code/prefill", "code", "code:embedded/m", "prefill", "up")
    assert not machines.is_server(embedded)


# -- the timeline -----------------------------------------------------------------
def test_timeline_is_newest_first_and_in_words(cluster: Cluster):
    mon = cluster.monitor
    mon.report_failure("gone", "ConnectError: refused", decisive=True)
    mon.record_event("dec", "failover", "server gone: BackendUnavailable: refused -> "
                     "served by server dec")
    mon.record_event("dec", "canary_ok", "pre -> dec: 8 greedy tokens identical")
    mon.record_event("dec", "canary_fail", "pre -> dec agreed on 3 of 8 greedy tokens")
    rows = machines.timeline_rows(mon.events())
    kinds = [r.kind for r in rows]
    assert kinds[:4] == ["canary_fail", "canary_ok", "failover", "circuit_open"]
    assert set(kinds[4:]) == {"up"}  # pre and dec answered their first probe
    fail, ok, failover, opened = rows[:4]
    assert (fail.event, fail.level) == ("canary diverged: KV not shipped to it", "bad")
    assert ok.level == "good"
    assert failover.detail.endswith("served by server dec")
    assert failover.row()["event"] == "\N{LARGE ORANGE CIRCLE} failover: served instead " \
                                      "of a failed server"
    assert (opened.server, opened.event) == ("gone", "circuit opened: requests avoid it")
    assert set(failover.row()) == {"time", "server", "event", "detail"}
    only = machines.timeline_rows(mon.events(), kinds={"failover", "canary_ok"})
    assert [r.kind for r in only] == ["canary_ok", "failover"]
    assert len(machines.timeline_rows(mon.events(), limit=2)) == 2
    assert machines.timeline_rows([]) == []


def test_an_unknown_event_kind_is_shown_as_is(cluster: Cluster):
    cluster.monitor.record_event("pre", "route_changed", "why not")
    (row,) = machines.timeline_rows(cluster.monitor.events(), kinds={"route_changed"})
    assert (row.event, row.level) == ("route changed", "info")


# -- links -------------------------------------------------------------------------
def test_link_rows_measured_and_not(cluster: Cluster):
    cluster.links.record("pre", "dec", 10e6, 0.1)
    cluster.links.record("pre", "dec", 40e6, 0.31)  # two sizes: t0 separated
    cluster.links.record("gone", "dec", 8e6, 0.2)  # one size: folded into bandwidth
    cluster.bad_pairs[("pre", "gone")] = "canary diverged"
    rows = {(r.prefill, r.decode): r for r in machines.link_rows(cluster)}
    assert list(rows) == [("gone", "dec"), ("pre", "dec"), ("pre", "gone")]
    measured = rows[("pre", "dec")]
    assert measured.bandwidth_mb_s == pytest.approx(142.9, abs=0.05)
    assert measured.latency_ms == pytest.approx(30.0, abs=0.05)
    assert (measured.samples, measured.note) == (2, "")
    folded = rows[("gone", "dec")]
    assert (folded.bandwidth_mb_s, folded.latency_ms, folded.samples) == (40.0, None, 1)
    assert "one transfer size" in folded.note
    refused = rows[("pre", "gone")]
    assert (refused.bandwidth_mb_s, refused.note) == (None, "canary diverged")
    assert machines.table([measured])[0]["KV bandwidth (MB/s)"] == measured.bandwidth_mb_s


def test_link_rows_say_when_identities_differ(cluster: Cluster):
    other = ServerStatus(model="gemma3-270m", identity_hash="9999888877776666")
    cluster.monitor.stop()
    cluster.monitor = HealthMonitor(
        {"pre": ScriptedTransport(cluster.endpoints["pre"], ServerStatus(
            model="smollm2-135m", identity_hash=IDENTITY)),
         "dec": ScriptedTransport(cluster.endpoints["dec"], other),
         "gone": ScriptedTransport(cluster.endpoints["gone"], None)}, interval=60)
    cluster.monitor.probe_all()
    rows = {(r.prefill, r.decode): r for r in machines.link_rows(cluster)}
    assert "KV cannot move" in rows[("pre", "dec")].note


# -- route decisions ----------------------------------------------------------------
@pytest.fixture
def cost() -> CostModel:
    speeds = SpeedTable()
    speeds.record_prefill("pre", 1000, 2.0)
    speeds.record_prefill("dec", 1000, 10.0)
    speeds.record_decode("dec", 100, 1.0)
    links = LinkTable()
    links.record("pre", "dec", 10e6, 0.1)
    return CostModel(links, speeds, kv_bytes_per_token=20_000.0)


def test_decision_rows_predicted_against_actual(cost: CostModel):
    first = cost.choose(2000, 64, [("pre", "dec")])
    cost.record_outcome(first, first.predicted_s * 1.25)
    second = cost.choose(200, 16, [("pre", "dec")])  # no outcome (it failed, say)
    rows = machines.decision_rows(cost.decisions())
    assert [r.predicted_s for r in rows] == [second.predicted_s, first.predicted_s]
    done = rows[1]
    assert done.chosen == "ship pre->dec"  # 2000 tokens: the decode server prefills slowly
    assert done.predicted_s == pytest.approx(first.predicted_s)
    assert done.actual_s == pytest.approx(first.predicted_s * 1.25)
    assert done.error_pct == pytest.approx(25.0)
    assert "self dec" in done.alternatives
    assert done.why == "cheapest"
    assert "prefill" in done.parts
    assert "transfer" in done.parts
    assert (rows[0].actual_s, rows[0].error_pct) == (None, None)
    record = machines.table(rows)[1]
    assert (record["chosen route"], record["error (%)"]) == ("ship pre->dec", 25.0)
    assert machines.decision_summary(cost.decisions()) == (
        "2 routing decisions, 1 with a measured outcome; median prediction error 25 %.")
    fig = machines.decision_figure(cost.decisions())
    points = [t for t in fig.data if t.mode == "markers"]
    assert [list(t.x) for t in points] == [[pytest.approx(first.predicted_s)]]


def test_an_unmeasured_link_is_explored_and_says_so():
    speeds = SpeedTable()
    speeds.record_prefill("pre", 1000, 0.5)
    speeds.record_prefill("dec", 1000, 1.0)
    speeds.record_decode("dec", 100, 1.0)
    cost = CostModel(LinkTable(), speeds, kv_bytes_per_token=1000.0)
    cost.choose(3000, 8, [("pre", "dec")], singles=["x1", "x2", "x3", "x4"])
    (row,) = machines.decision_rows(cost.decisions())
    assert row.why.startswith("explore: link pre->dec never measured")
    assert "guessed: link" in row.why
    assert row.alternatives.endswith("(+2 more)")
    assert machines.decision_summary([]) == "No routing decision yet."


# -- the history: the server filter and the failover column ---------------------------
def served(i: int, prefill: str, decode: str, failover: str = "") -> RequestMetrics:
    return RequestMetrics(request_id=f"r{i}", role="code", route="code:kvserver/m",
                          prefill_worker=prefill, decode_worker=decode, failover=failover,
                          started_at=1_800_000_000.0 + i)


@pytest.mark.parametrize("on_disk", [True, False])
def test_history_filter_by_server(tmp_path: Path, on_disk: bool):
    h = MetricsHistory(tmp_path / "h.db" if on_disk else None)
    for i, (p, d) in enumerate([("a", "b"), ("b", "b"), ("c", "a"), ("c", "c"), ("", "")]):
        h.record(served(i, p, d))
    try:
        def ids(flt: HistoryFilter) -> list[str]:
            return [e.metrics.request_id for e in h.search(flt)]

        assert ids(HistoryFilter(server="a")) == ["r2", "r0"]
        assert ids(HistoryFilter(server="b")) == ["r1", "r0"]
        assert ids(HistoryFilter(server="c")) == ["r3", "r2"]
        assert h.count(HistoryFilter(server="nobody")) == 0
        assert h.count(HistoryFilter(server="")) == 5
        assert len(h.samples(HistoryFilter(server="c"))) == 2
        assert dash.server_choices(h, ["z"]) == [dash.ANY, "a", "b", "c", "z"]
    finally:
        h.close()


def test_make_filter_passes_the_server():
    assert dash.make_filter("All time", server="dec").server == "dec"
    assert dash.make_filter("All time", server=dash.ANY).server is None


def test_the_history_table_shows_failover_only_when_some_request_failed_over():
    plain = [HistoryEntry(1.0, served(0, "a", "a"))]
    assert "failover" not in dash.table_rows(plain)[0]
    mixed = [*plain, HistoryEntry(2.0, served(1, "b", "b", "server a: refused -> served "
                                                          "by server b"))]
    rows = dash.table_rows(mixed)
    assert [r["failover"] for r in rows] == ["", "server a: refused -> served by server b"]
    assert list(rows[0])[:3] == ["time", "status", "failover"]


def test_plain_escapes_markdown():
    assert machines.plain("a_b [x](y) http://h:80") == r"a\_b \[x\]\(y\) http\://h\:80"
