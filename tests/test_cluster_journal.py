"""The cluster journal (``inference.cluster.journal``): written by one process, read by
another; fed by the real hooks of a real ``Cluster`` (health monitor, link table, cost
model); merged with the live state on the Dashboard without showing anything twice;
bounded; and never an exception into a request when the file cannot be written."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from inference import DisaggregatedClient
from inference.cluster import journal as journal_module
from inference.cluster.cluster import Cluster
from inference.cluster.health import HealthEvent
from inference.cluster.journal import EVENTS, ClusterJournal
from inference.cluster.measure import LinkEstimate, LinkTable, SpeedTable
from inference.cluster.routing import CostModel, Decision, RouteOption
from inference.config import parse_config
from inference.dashboard.cluster_history import (
    cluster_history,
    merge_decisions,
    merge_events,
    merge_links,
)
from tests.server_procs import free_port

ROOT = Path(__file__).resolve().parents[1]
T0 = 1_800_000_000.0

WRITER = textwrap.dedent("""
    import sys
    from inference.cluster.health import HealthEvent
    from inference.cluster.journal import ClusterJournal
    from inference.cluster.routing import Decision, RouteOption

    T0 = 1_800_000_000.0
    j = ClusterJournal(sys.argv[1])
    j.record_event(HealthEvent(T0, "d1", "up", "probe ok in 3 ms"))
    j.record_event(HealthEvent(T0 + 10, "d1", "circuit_open", "request failed (decisive)"))
    j.record_event(HealthEvent(T0 + 10, "d1", "down", "request failed (decisive)"))
    j.record_event(HealthEvent(T0 + 11, "d2", "failover", "decode server d1 -> served by d2"))
    for i, (nbytes, seconds) in enumerate([(1e6, 0.012), (4e6, 0.042), (2e6, 0.022)]):
        j.record_link("p", "d2", nbytes, seconds, T0 + 20 + i)
    ship = RouteOption("ship", "p", "d2", 1.5, {"prefill": 1.0, "transfer": 0.5},
                       ("link",), reason="cheapest")
    alone = RouteOption("self", None, "d2", 2.5, {"prefill": 2.5})
    j.record_decision(Decision(T0 + 30, ship, (alone,)))
    j.record_outcome(Decision(T0 + 30, ship, (alone,), actual_s=1.8))
    j.record_decision(Decision(T0 + 40, alone, (ship,)))  # no outcome: it failed
    j.close()
""")


def test_what_one_process_writes_another_reads(tmp_path: Path):
    db = tmp_path / "grader.db"
    done = subprocess.run([sys.executable, "-c", WRITER, str(db)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    reader = ClusterJournal(db)
    try:
        events = reader.events()
        assert [(e.at - T0, e.server, e.kind) for e in events] == [
            (0, "d1", "up"), (10, "d1", "circuit_open"), (10, "d1", "down"),
            (11, "d2", "failover")]
        assert events[-1].detail == "decode server d1 -> served by d2"
        assert [e.kind for e in reader.events(limit=2)] == ["down", "failover"]

        (pair, est), = reader.link_estimates().items()
        clock = iter([T0 + 20, T0 + 21, T0 + 22])
        same = LinkTable(clock=lambda: next(clock))
        for nbytes, seconds in [(1e6, 0.012), (4e6, 0.042), (2e6, 0.022)]:
            same.record("p", "d2", nbytes, seconds)
        assert pair == ("p", "d2")
        assert est == same.estimate("p", "d2")  # the fit a LinkTable makes of them
        assert est.fitted
        assert est.bandwidth_bps == pytest.approx(1e8, rel=0.01)
        assert est.updated_at == T0 + 22

        first, second = reader.decisions()
        assert (first.at, first.option.label, first.option.predicted_s, first.actual_s) == (
            T0 + 30, "ship p->d2", 1.5, 1.8)
        assert first.option.parts == {"prefill": 1.0, "transfer": 0.5}
        assert first.option.guessed == ("link",)
        assert [(a.label, a.predicted_s) for a in first.alternatives] == [("self d2", 2.5)]
        assert (second.option.label, second.actual_s) == ("self d2", None)

        # d1 has been down since the first process saw it go down (T0 + 10), even to a
        # process that has seen it down only since it started (T0 + 100).
        assert reader.since("d1", "down", T0 + 100) == T0 + 10
        assert reader.since("d1", "up", T0 + 100) == T0 + 100  # the journal disagrees
        assert reader.since("d2", "up", T0 + 100) == T0 + 100  # nothing recorded
        assert reader.read_error == ""
    finally:
        reader.close()


def config(tmp: Path) -> object:
    ports = {name: free_port() for name in ("p", "d")}
    roles = {"p": "prefill", "d": "decode"}
    return parse_config({
        "engine": {"history_db": str(tmp / "grader.db")},
        "servers": {n: {"url": f"http://127.0.0.1:{port}", "role": roles[n]}
                    for n, port in ports.items()},
        "roles": {"code": {"backend": "kvserver", "servers": ["p", "d"],
                           "embedded_fallback": False}},
        "health": {"probe_interval": 600, "canary_interval": 0}})


def test_a_clusters_hooks_write_the_journal(tmp_path: Path):
    journal = ClusterJournal(tmp_path / "grader.db")
    cluster = Cluster(config(tmp_path), journal)
    try:
        cluster.start()  # nobody listens: both circuits open at the first probe
        cluster.links.record("p", "d", 8e6, 0.1)
        option = cluster.cost.choose(1000, 16, [("p", "d")])
        cluster.cost.record_outcome(option, 0.75)
        assert journal.flush()
        other = ClusterJournal(tmp_path / "grader.db")  # another connection, as the app's
        try:
            opened = {e.server for e in other.events() if e.kind == "circuit_open"}
            assert opened == {"p", "d"}
            assert other.link_estimates()[("p", "d")].bandwidth_bps == pytest.approx(8e7)
            (decision,) = other.decisions()
            assert decision.option.label == option.label
            assert decision.option.predicted_s == pytest.approx(option.predicted_s)
            assert decision.actual_s == 0.75
        finally:
            other.close()
    finally:
        cluster.close()
        journal.close()


def test_the_dashboard_shows_each_event_and_decision_once(tmp_path: Path):
    with DisaggregatedClient(config(tmp_path)) as client:
        client.health()  # builds the cluster: its first probes open both circuits
        cluster = client.cluster
        assert cluster is not None
        assert client.journal is not None
        option = cluster.cost.choose(1000, 16, [("p", "d")])
        cluster.cost.record_outcome(option, 0.5)
        assert client.journal.flush()
        view = cluster_history(client)
        live = cluster.monitor.events()
    rows = [(r.at, r.server, r.kind, r.detail) for r in view.timeline]
    assert len(rows) == len(set(rows)) == len(live)  # in the journal and live: once
    assert [d.actual_s for d in view.decisions] == [0.5]
    assert {(r.prefill, r.decode) for r in view.links} == {("p", "d")}
    assert view.live
    assert view.read_error == ""


def test_merging_prefers_the_newer_and_the_measured():
    a = HealthEvent(T0, "d", "down", "x")
    b = HealthEvent(T0 + 1, "d", "up", "y")
    assert merge_events([a, b], [a]) == [a, b]
    ship = RouteOption("ship", "p", "d", 1.0)
    pending, done = Decision(T0, ship, ()), Decision(T0, ship, (), actual_s=1.2)
    assert merge_decisions([pending], [done]) == [done]  # the journal knew the outcome
    assert merge_decisions([done], [pending]) == [done]
    old, new = LinkEstimate(1e6, 0.0, 1, T0), LinkEstimate(2e6, 0.0, 2, T0 + 5)
    assert merge_links({("p", "d"): old}, {("p", "d"): new}) == {("p", "d"): new}
    assert merge_links({("p", "d"): new}, {("p", "d"): old}) == {("p", "d"): new}


def test_the_journal_keeps_its_newest_rows_only(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(journal_module, "PRUNE_EVERY", 1)  # prune after every write
    journal = ClusterJournal(tmp_path / "grader.db", max_rows={EVENTS: 50})
    try:
        for i in range(300):
            journal.record_event(HealthEvent(T0 + i, "s", "failover", f"#{i}"))
        assert journal.flush()
        events = journal.events(limit=1000)
    finally:
        journal.close()
    assert len(events) == 50
    assert [e.detail for e in events[-2:]] == ["#298", "#299"]


def test_a_journal_that_cannot_be_written_never_raises(tmp_path: Path,
                                                       caplog: pytest.LogCaptureFixture):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    journal = ClusterJournal(blocker / "grader.db")  # its folder cannot be made
    with caplog.at_level(logging.WARNING, "inference.cluster.journal"):
        journal.record_event(HealthEvent(T0, "s", "down", "gone"))
        journal.record_link("p", "d", 1e6, 0.01, T0)
        assert journal.flush()
    assert journal.dropped == 2
    assert "not written" in caplog.text
    assert journal.events() == []  # nothing was written: nothing to read
    journal.close()
    unreadable = ClusterJournal(tmp_path)  # a folder, not a database
    assert unreadable.events() == []
    assert "unable to open" in unreadable.read_error
    unreadable.close()


def test_a_hook_that_fails_does_not_fail_the_request(caplog: pytest.LogCaptureFixture):
    def broken(*_args: object) -> None:
        raise RuntimeError("journal on fire")

    links = LinkTable()
    links.on_record = broken
    cost = CostModel(links, SpeedTable(), kv_bytes_per_token=1000.0)
    cost.on_decision = cost.on_outcome = broken
    with caplog.at_level(logging.ERROR):
        links.record("p", "d", 1e6, 0.01)
        option = cost.choose(100, 8, [("p", "d")])
        decision = cost.record_outcome(option, 0.2)
    assert links.estimate("p", "d") is not None
    assert decision.actual_s == 0.2
    failed = [r for r in caplog.records if r.exc_info and "journal on fire" in str(r.exc_info[1])]
    assert len(failed) == 3  # logged, never raised
