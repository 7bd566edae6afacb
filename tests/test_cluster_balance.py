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
