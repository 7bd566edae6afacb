"""Server selection, link and speed tables, and the ship-vs-recompute cost model."""

from __future__ import annotations

import time

import pytest

from inference.cluster.health import ServerState
from inference.cluster.routing import (
    CostModel,
    LinkTable,
    Selector,
    SpeedTable,
    prediction_error,
    regret,
)
from inference.endpoint import Endpoint, ServerStatus
from inference.errors import BackendUnavailable, ConfigError

KV_BYTES = 23_000.0  # SmolLM2's KV per token


def server(name: str, outstanding: int = 0, requests: int = 0,
           weight: float = 1.0) -> ServerState:
    return ServerState(
        endpoint=Endpoint(name, f"http://{name}.invalid:8090", weight=weight), state="up",
        circuit="closed", last_probe=None, probe_latency_s=None, last_error="",
        last_error_at=None, since=time.time(), outstanding=outstanding, requests=requests,
        errors=0, status=None, degraded_reason="")


# ---- selector --------------------------------------------------------------------

def test_selector_picks_the_least_outstanding() -> None:
    chosen = Selector().choose([server("a", 3), server("b", 1), server("c", 2)], None)
    assert chosen.name == "b"


def test_selector_weighs_load_by_endpoint_weight() -> None:
    # a: 3 outstanding on weight 4 (0.75) beats b: 1 on weight 1
    chosen = Selector().choose([server("a", 3, weight=4), server("b", 1)], None)
    assert chosen.name == "a"


def test_selector_breaks_ties_by_requests_then_name() -> None:
    selector = Selector()
    assert selector.choose([server("a", 1, requests=9), server("b", 1, requests=2)]).name == "b"
    assert selector.choose([server("b", 0, requests=2), server("a", 0, requests=2)]).name == "a"


def test_affinity_sticks_within_slack_and_moves_beyond_it() -> None:
    selector = Selector(slack=2)
    assert selector.choose([server("a", 0), server("b", 0)], "prefix-1").name == "a"
    # a is busier, but within the slack: the cached prefix wins
    assert selector.choose([server("a", 2), server("b", 0)], "prefix-1").name == "a"
    # beyond the slack: go to the least loaded, and remember that
    assert selector.choose([server("a", 3), server("b", 0)], "prefix-1").name == "b"
    assert selector.choose([server("a", 0), server("b", 1)], "prefix-1").name == "b"
    # another key has no affinity
    assert selector.choose([server("a", 0), server("b", 1)], "prefix-2").name == "a"


def test_affinity_ignores_a_server_that_is_not_a_candidate() -> None:
    selector = Selector()
    selector.choose([server("a"), server("b", 1)], "k")
    assert selector.choose([server("b", 1), server("c", 2)], "k").name == "b"


def test_forget_drops_the_affinity() -> None:
    selector = Selector(slack=5)
    selector.choose([server("a"), server("b")], "k")
    assert selector.choose([server("a", 3), server("b", 0)], "k").name == "a"
    selector.forget("a")
    assert selector.choose([server("a", 3), server("b", 0)], "k").name == "b"


def test_selector_without_candidates_is_unavailable() -> None:
    with pytest.raises(BackendUnavailable):
        Selector().choose([], "k")
    with pytest.raises(ConfigError):
        Selector(slack=-1)


# ---- link table ------------------------------------------------------------------

def test_link_fit_recovers_bandwidth_and_latency() -> None:
    bandwidth, t0 = 50e6, 0.012
    links = LinkTable()
    noise = [1.02, 0.98, 1.01, 0.99, 1.03, 0.97, 1.0, 1.0]
    sizes = [1e5, 2e6, 5e5, 8e6, 3e5, 4e6, 1e6, 6e6]
    for n, k in zip(sizes, noise, strict=True):
        links.record("p", "d", n, (t0 + n / bandwidth) * k)
    est = links.estimate("p", "d")
    assert est is not None
    assert est.fitted
    assert est.samples == 8
    assert est.bandwidth_bps == pytest.approx(bandwidth, rel=0.1)
    assert est.latency_s == pytest.approx(t0, abs=0.005)


def test_link_of_one_size_folds_latency_into_bandwidth() -> None:
    links = LinkTable()
    for _ in range(3):
        links.record("p", "d", 1e6, 0.1)
    est = links.estimate("p", "d")
    assert est is not None
    assert not est.fitted
    assert (est.bandwidth_bps, est.latency_s) == (pytest.approx(1e7), 0.0)
    assert links.estimate("d", "p") is None  # links are directed
    assert set(links.estimates()) == {("p", "d")}


def test_link_estimate_follows_a_link_that_slows_down() -> None:
    links = LinkTable(window=16)
    for n in (1e6, 4e6) * 4:
        links.record("p", "d", n, n / 100e6)
    for n in (1e6, 4e6) * 3:
        links.record("p", "d", n, n / 10e6)
    est = links.estimate("p", "d")
    assert est is not None
    assert est.bandwidth_bps < 30e6


def test_link_rejects_impossible_samples() -> None:
    with pytest.raises(ValueError, match="nbytes"):
        LinkTable().record("p", "d", 0, 1.0)


# ---- speed table -----------------------------------------------------------------

def test_prefill_speed_is_kept_per_prompt_length_bucket() -> None:
    speeds = SpeedTable()
    speeds.record_prefill("s", 300, 1.0)
    speeds.record_prefill("s", 3000, 20.0)
    assert speeds.prefill_tps("s", 400) == 300
    assert speeds.prefill_tps("s", 3500) == 150
    assert speeds.prefill_tps("s", 100) == 300  # nearest measured bucket
    assert speeds.prefill_tps("s", 20_000) == 150
    speeds.record_prefill("s", 300, 0.5)
    assert 300 < (speeds.prefill_tps("s", 300) or 0) < 600  # an EWMA moves toward 600


def test_speeds_are_seeded_by_the_server_and_measured_ones_win() -> None:
    now = [1000.0]
    speeds = SpeedTable(half_life_s=60.0, clock=lambda: now[0])
    assert speeds.decode_tps("s") is None
    assert speeds.prefill_tps("s", 100, default=7.0) == 7.0
    speeds.seed("s", ServerStatus(prefill_tps=900.0, decode_tps=60.0))
    assert (speeds.prefill_tps("s", 100), speeds.decode_tps("s")) == (900.0, 60.0)
    speeds.record_decode("s", 100, 2.0)
    assert speeds.decode_tps("s") == 50.0
    # A slow measurement (the server was busy) fades back to what the server itself
    # says it does now, half way per half-life: it is not judged by it forever.
    speeds.record_prefill("s", 100, 1.0)
    assert speeds.prefill_tps("s", 100) == 100.0
    now[0] += 60.0
    assert speeds.prefill_tps("s", 100) == 500.0
    assert speeds.decode_tps("s") == 55.0
    now[0] += 600.0
    assert speeds.prefill_tps("s", 100) == pytest.approx(900.0, rel=0.01)
    speeds.seed("s", ServerStatus(prefill_tps=0.0, decode_tps=0.0))  # nothing new: kept
    assert speeds.decode_tps("s") == pytest.approx(60.0, rel=0.01)
    speeds.record_load("s", 2e9, 1.0)
    assert speeds.load_bps("s") == 2e9
    assert speeds.load_bps("t", default=1e9) == 1e9


# ---- cost model ------------------------------------------------------------------

def measured(p_prefill: float, d_prefill: float, decode: float, link_bps: float | None,
             t0: float = 0.005) -> CostModel:
    """P prefills fast or slow, D decodes; the link P->D measured at two sizes."""
    speeds = SpeedTable()
    speeds.record_prefill("P", 2000, 2000 / p_prefill)
    speeds.record_prefill("D", 2000, 2000 / d_prefill)
    speeds.record_decode("D", 100, 100 / decode)
    links = LinkTable()
    if link_bps is not None:
        for n in (1e6, 2e7):
            links.record("P", "D", n, t0 + n / link_bps)
    return CostModel(links, speeds, KV_BYTES)


def test_ships_a_long_prompt_over_a_fast_link() -> None:
    model = measured(p_prefill=2000, d_prefill=100, decode=50, link_bps=1e9)
    choice = model.choose(2000, 16, pairs=[("P", "D")])
    assert (choice.method, choice.prefill, choice.decode) == ("ship", "P", "D")
    assert not choice.explore
    assert not choice.guessed
    assert choice.predicted_s == pytest.approx(sum(choice.parts.values()))
    assert choice.parts["transfer"] == pytest.approx(2000 * KV_BYTES / 1e9, rel=0.01)
    assert choice.parts["prefill"] == pytest.approx(1.0)


def test_prefills_on_the_decode_side_over_a_slow_link() -> None:
    model = measured(p_prefill=2000, d_prefill=100, decode=50, link_bps=1e5)
    choice = model.choose(2000, 16, pairs=[("P", "D")])
    assert (choice.method, choice.prefill, choice.decode) == ("self", None, "D")
    ship = next(o for o in model.options(2000, 16, [("P", "D")]) if o.method == "ship")
    assert ship.parts["transfer"] > 400  # 46 MB at 100 kB/s


def test_a_short_prompt_is_not_worth_shipping_even_on_a_fast_link() -> None:
    model = measured(p_prefill=2000, d_prefill=1000, decode=50, link_bps=1e8, t0=0.2)
    assert model.choose(20, 16, pairs=[("P", "D")]).method == "self"


def test_cached_prefix_and_queues_change_the_answer() -> None:
    model = measured(p_prefill=2000, d_prefill=100, decode=50, link_bps=1e9)
    assert model.choose(2000, 16, [("P", "D")], cached={"D": 1990}).method == "self"
    assert model.choose(2000, 16, [("P", "D")], queue={"P": 60.0}).method == "self"
    depth = CostModel(model.links, model.speeds, KV_BYTES, queue_unit_s=30.0)
    assert depth.choose(2000, 16, [("P", "D")], queue={"P": 2}).method == "self"


def test_picks_single_when_only_a_both_server_is_fast() -> None:
    model = measured(p_prefill=100, d_prefill=100, decode=50, link_bps=1e9)
    model.speeds.record_prefill("X", 2000, 1.0)
    model.speeds.record_decode("X", 100, 1.0)
    choice = model.choose(2000, 16, pairs=[("P", "D")], singles=["X"])
    assert (choice.method, choice.decode) == ("single", "X")
    methods = {o.method for o in model.decisions()[-1].alternatives}
    assert methods == {"ship", "self"}


def test_an_unmeasured_link_is_explored_once() -> None:
    speeds = SpeedTable()
    speeds.record_prefill("P", 2000, 1.0)
    speeds.record_prefill("D", 2000, 20.0)
    speeds.record_decode("D", 100, 2.0)
    links = LinkTable()
    # the guess for an unmeasured link is pessimistic: only exploring ships
    model = CostModel(links, speeds, KV_BYTES, default_link_bps=1e5)
    first = model.choose(2000, 16, [("P", "D")])
    assert (first.method, first.explore) == ("ship", True)
    assert "never measured" in first.reason
    assert "link" in first.guessed
    second = model.choose(2000, 16, [("P", "D")])
    assert (second.method, second.explore) == ("self", False)
    # the explored transfer was measured: from now on the link speaks for itself
    links.record("P", "D", 1e6, 0.002)
    links.record("P", "D", 4e7, 0.041)
    third = model.choose(2000, 16, [("P", "D")])
    assert (third.method, third.explore, third.guessed) == ("ship", False, ())


def test_no_exploration_when_even_a_free_link_cannot_win() -> None:
    speeds = SpeedTable()
    speeds.record_prefill("P", 2000, 40.0)  # P is slower than D at prefill
    speeds.record_prefill("D", 2000, 20.0)
    speeds.record_decode("D", 100, 2.0)
    model = CostModel(LinkTable(), speeds, KV_BYTES)
    for _ in range(2):
        choice = model.choose(2000, 16, [("P", "D")])
        assert (choice.method, choice.explore) == ("self", False)


def test_unmeasured_speeds_are_labelled_as_guesses() -> None:
    model = CostModel(LinkTable(), SpeedTable(), lambda name: {"P": 1000.0}[name])
    option = next(o for o in model.options(100, 10, [("P", "D")]) if o.method == "ship")
    assert set(option.guessed) == {"link", "prefill_tps:P", "decode_tps:D"}
    assert model.kv_bytes("P", 100) == 100_000


def test_outcomes_are_logged_against_their_decisions() -> None:
    model = measured(p_prefill=2000, d_prefill=100, decode=50, link_bps=1e9)
    choice = model.choose(2000, 16, [("P", "D")])
    decision = model.record_outcome(choice, 1.8)
    assert decision.option is choice
    assert decision.actual_s == 1.8
    assert [o.method for o in decision.alternatives] == ["self"]
    assert model.decisions() == [decision]
    other = model.choose(100, 16, [("P", "D")])
    model.record_outcome(other, 0.9)
    logged = model.decisions()
    assert [d.actual_s for d in logged] == [1.8, 0.9]
    err = prediction_error(logged)
    assert err is not None
    assert err >= 0
    assert regret(logged, [1.8, 0.6]) == pytest.approx(2.7 / 2.4)
    with pytest.raises(ValueError, match="one best"):
        regret(logged, [1.0])


def test_no_route_at_all_is_unavailable() -> None:
    with pytest.raises(BackendUnavailable):
        CostModel(LinkTable(), SpeedTable(), KV_BYTES).choose(10, 10, pairs=[])
