"""Balanced routing (issue 23): requests of one client spread over two prefill and two
decode servers instead of piling on the first by name; the wait the router predicts is
the work it sent there (measured speeds), not a fixed second per queued request. Real
HTTP servers on 127.0.0.1 (``tests.fake_kvserver`` processes), the real client."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator

import pytest

from inference import GenerationRequest
from inference.cluster.routing import CostModel, LinkTable, SpeedTable, spread
from inference.endpoint import ServerStatus
from inference.server.prom import ServerMetrics
from inference.types import RequestMetrics
from tests.test_failover_busy import Fake, client_for


@pytest.fixture
def four() -> Iterator[list[Fake]]:
    started: list[Fake] = []
    try:
        # d1 says it decodes 60 tok/s, d2 40: long replies (600 tokens) are predicted at
        # 10 s and 15 s, so a fixed second per queued request would send d1 most of them
        for role, tps in (("prefill", 50), ("prefill", 50), ("decode", 60), ("decode", 40)):
            started.append(Fake(role, "--hold", "0.4", "--decode-tps", str(tps)))
        yield started
    finally:
        for fake in started:
            fake.kill()


def test_concurrent_requests_spread_over_two_plus_two_servers(four, tmp_path):
    p1, p2, d1, d2 = four
    n = 12
    with client_for(tmp_path, {"p1": (p1.url, "prefill"), "p2": (p2.url, "prefill"),
                               "d1": (d1.url, "decode"), "d2": (d2.url, "decode")}) as client:
        results = [None] * n

        def one(i: int) -> None:
            results[i] = client.generate(GenerationRequest.chat(
                "code", "Answer briefly.", f"Question {i}: what does a left join keep?",
                max_tokens=600, temperature=0.0))

        threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert all(r is not None and r.text for r in results)
    decode = Counter(r.metrics.decode_worker for r in results)
    prefill = Counter(r.metrics.prefill_worker for r in results)
    # fair share: 6 each; the busiest within 1.3x of it
    assert set(decode) == {"d1", "d2"}
    assert max(decode.values()) <= 1.3 * n / 2, decode
    assert set(prefill) == {"p1", "p2"}
    assert max(prefill.values()) <= 1.3 * n / 2, prefill
    assert [d1.count()["decode"], d2.count()["decode"]] == [decode["d1"], decode["d2"]]


def test_the_predicted_wait_is_the_work_sent_there_and_ties_take_turns():
    speeds = SpeedTable()
    model = CostModel(LinkTable(), speeds, 1000.0)
    for d in ("d1", "d2"):
        speeds.record_decode(d, 100, 1.0)  # 100 tok/s each
    # d1 has 30 s of work outstanding, d2 nothing: the next request goes to d2.
    opts = model.options(100, 100, pairs=[("p", "d1"), ("p", "d2")],
                         queue={"d1": 30.0, "d2": 0.0})
    assert opts[0].decode == "d2"
    # Equal predictions: a request alone keeps the order, the others beside it rotate.
    even = model.options(100, 100, pairs=[("p", "d1"), ("p", "d2")])
    assert [spread(even, t)[0].decode for t in range(4)] == ["d1", "d2", "d1", "d2"]
    assert model.choose(100, 100, pairs=[("p", "d1"), ("p", "d2")], turn=1).decode == "d2"


def test_a_batching_decode_server_is_measured_by_its_throughput_not_per_reply():
    """d1 decoded four replies at once at 25 tok/s each (100 tok/s over its batch), d2
    one reply alone at 60 tok/s: per reply d1 looked slower and got nothing more."""
    speeds = SpeedTable()
    model = CostModel(LinkTable(), speeds, 1000.0)
    for _ in range(4):
        speeds.record_decode("d1", 100, 4.0, width=4.0)
    speeds.record_decode("d2", 120, 2.0)
    assert speeds.decode_tps("d1") == pytest.approx(100.0)
    assert speeds.decode_tps("d2") == pytest.approx(60.0)
    pairs = [("p", "d1"), ("p", "d2")]
    assert model.options(100, 100, pairs=pairs)[0].decode == "d1"
    # A width below one (no batching reported) counts as one.
    speeds.record_decode("d3", 100, 2.0, width=0.0)
    assert speeds.decode_tps("d3") == pytest.approx(50.0)


def test_the_server_reports_its_decode_throughput_over_its_batch():
    metrics = ServerMetrics()
    metrics.record(RequestMetrics(decode_tokens=100, decode_evals=100, decode_seconds=4.0,
                                  decode_batch=4, decode_width=3.5))
    assert metrics.decode_tps == pytest.approx(25.0)
    assert metrics.decode_batch_tps == pytest.approx(87.5)
    seeded = SpeedTable()
    seeded.seed("d", ServerStatus(decode_tps=25.0, decode_batch_tps=87.5))
    assert seeded.decode_tps("d") == pytest.approx(87.5)
    seeded.seed("e", ServerStatus(decode_tps=25.0))  # a server that does not say
    assert seeded.decode_tps("e") == pytest.approx(25.0)


def test_a_decode_server_s_queue_is_played_forward_to_the_arrival_of_the_kv():
    """d1 is measured faster, but a decode sent to it a moment ago arrives just before
    ours: counted from now its 3 s were done before our KV came (the old rule, d1
    again); played forward they make ours wait there, and d2 is the better choice."""
    speeds = SpeedTable()
    model = CostModel(LinkTable(), speeds, 1000.0)
    speeds.record_prefill("p", 300, 3.0)  # ready after ~3 s
    for d in ("d1", "d2"):  # prefilling themselves would take 10 s
        speeds.record_prefill(d, 300, 10.0)
    speeds.record_decode("d1", 100, 2.5)  # 40 tok/s
    speeds.record_decode("d2", 100, 3.0)  # 33 tok/s
    pairs = [("p", "d1"), ("p", "d2")]
    queue = {"d1": 3.0, "d2": 0.0}
    assert model.options(300, 100, pairs=pairs, queue=queue)[0].decode == "d1"
    backlog = {"d1": [(2.9, 3.0)], "d2": []}
    best = model.options(300, 100, pairs=pairs, queue=queue, backlog=backlog)[0]
    assert best.decode == "d2"
    d1 = next(o for o in model.options(300, 100, pairs=pairs, backlog=backlog)
              if o.decode == "d1")
    assert d1.parts["decode_wait"] == pytest.approx(2.9 + 3.0 - 3.0 - d1.parts["transfer"]
                                                    - d1.parts["link_latency"], abs=0.05)


def test_the_backlog_counts_a_decode_from_its_plan_to_its_end():
    from inference.cluster.backlog import LATE_SHARE, DecodeBacklog

    now = [100.0]
    backlog = DecodeBacklog(clock=lambda: now[0])
    sent = [backlog.add("d", 2.0, 4.0)]
    assert backlog.view("d") == [(2.0, 4.0)]
    now[0] = 103.0  # started a second ago: three seconds left
    assert backlog.view("d") == [(0.0, 3.0)]
    now[0] = 120.0  # late: still there, at a share of its work
    assert backlog.view("d") == [(0.0, 4.0 * LATE_SHARE)]
    backlog.remove(sent)
    assert backlog.view("d") == []
    assert sent == []
