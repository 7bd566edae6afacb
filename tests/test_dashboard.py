"""The dashboard's library side: the filtered history (SQL and in memory), percentiles,
bucketed time series, figures, and the LLM layers' timings per graded notebook, against
real SQLite files. Request ids and students are invented (student042, ...)."""

from __future__ import annotations

import json
import math
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from grader.store.database import Store
from grader.types import GradeReport, LayerResult
from grader.views.model_timings import efficiency_figure, notebook_llm_stats, stats_rows
from inference import GenerationResult, InvalidRequestError, RequestMetrics, WorkerHealth
from inference.dashboard import requests as dash
from inference.metrics import HistoryFilter, MetricsHistory, Sample

T0 = 1_800_000_000.0  # a fixed "now" for the synthetic history


def req(i: int, role: str = "code", at: float = T0, error: str = "", ttft: float = 0.5,
        prefill: tuple[int, float] = (400, 2.0), decode: tuple[int, float] = (64, 0.5),
        route: str | None = None) -> RequestMetrics:
    return RequestMetrics(
        request_id=f"req-{i:05d}", role=role, route=route or f"{role}:embedded/smollm2-135m",
        prompt_tokens=prefill[0], prefill_tokens=prefill[0], prefill_seconds=prefill[1],
        decode_tokens=decode[0], decode_evals=decode[0], decode_seconds=decode[1],
        ttft_seconds=ttft, total_seconds=ttft + decode[1], started_at=at,
        finished_at=at + ttft + decode[1], error=error)


def mixed() -> list[RequestMetrics]:
    """12 requests over 12 minutes: code and feedback alternate, every 4th fails."""
    return [req(i, "code" if i % 2 == 0 else "feedback", at=T0 - 720 + 60 * i,
                error="BackendError: worker crashed" if i % 4 == 3 else "",
                ttft=0.1 * (i + 1)) for i in range(12)]


@pytest.fixture
def history(tmp_path: Path) -> Iterator[MetricsHistory]:
    h = MetricsHistory(tmp_path / "grader.db")
    for m in mixed():
        h.record(m)
    yield h
    h.close()


def ids(entries) -> list[str]:
    return [e.metrics.request_id for e in entries]


# -- the filtered history ----------------------------------------------------------
FILTERS = [
    HistoryFilter(),
    HistoryFilter(role="feedback"),
    HistoryFilter(route="code:embedded/smollm2-135m"),
    HistoryFilter(status="ok"),
    HistoryFilter(status="error"),
    HistoryFilter(since=T0 - 300),
    HistoryFilter(since=T0 - 600, until=T0 - 300),
    HistoryFilter(text="REQ-0000"),
    HistoryFilter(text="crashed"),
    HistoryFilter(role="code", status="ok", since=T0 - 500),
]


def test_filters_select_what_they_say(history: MetricsHistory):
    all_ids = [f"req-{i:05d}" for i in range(12)][::-1]  # newest first
    assert ids(history.search()) == all_ids
    assert ids(history.search(HistoryFilter(role="feedback"))) == [
        f"req-{i:05d}" for i in (11, 9, 7, 5, 3, 1)]
    assert ids(history.search(HistoryFilter(status="error"))) == ["req-00011", "req-00007",
                                                                  "req-00003"]
    assert len(history.search(HistoryFilter(status="ok"))) == 9
    # since inclusive, until exclusive: started at T0-300, -240, ..., -60 -> 7..11
    assert ids(history.search(HistoryFilter(since=T0 - 300))) == all_ids[:5]
    assert ids(history.search(HistoryFilter(since=T0 - 600, until=T0 - 300))) == [
        f"req-{i:05d}" for i in (6, 5, 4, 3, 2)]
    assert ids(history.search(HistoryFilter(text="REQ-00010"))) == ["req-00010"]
    assert len(history.search(HistoryFilter(text="Crashed"))) == 3
    assert ids(history.search(limit=2)) == all_ids[:2]
    assert history.count(HistoryFilter(role="code", status="ok")) == 6
    assert history.count() == 12


@pytest.mark.parametrize("flt", FILTERS)
def test_memory_and_sqlite_agree(history: MetricsHistory, flt: HistoryFilter):
    memory = MetricsHistory(None)
    for m in mixed():
        memory.record(m)
    assert ids(memory.search(flt)) == ids(history.search(flt))
    assert memory.count(flt) == history.count(flt)
    assert memory.samples(flt) == history.samples(flt)
    assert memory.distinct("route") == history.distinct("route")


def test_reads_see_what_was_recorded_since(history: MetricsHistory):
    assert history.count() == 12  # the read connection has read the table once
    history.record(req(99, "feedback", at=T0 + 1))
    assert ids(history.search(limit=1)) == ["req-00099"]
    assert history.count(HistoryFilter(since=T0)) == 1
    history.close()
    assert ids(history.search(limit=1)) == ["req-00099"]  # closed: from memory


def test_distinct_lists_roles_and_refuses_other_columns(history: MetricsHistory):
    assert history.distinct("role") == ["code", "feedback"]
    with pytest.raises(ValueError, match="one of role"):
        history.distinct("error; DROP TABLE inference_requests")


def test_a_failure_without_timestamps_is_placed_when_recorded(tmp_path: Path):
    h = MetricsHistory(tmp_path / "h.db")
    before = time.time()
    h.record(RequestMetrics(request_id="req-x", role="code", error="SchemaError: bad"))
    (entry,) = h.search(dash.make_filter("Last 15 minutes"))
    assert entry.at >= before
    assert dash.table_rows([entry])[0]["status"] == "error"
    h.close()


def test_an_older_table_gets_its_time_column(tmp_path: Path):
    db = tmp_path / "old.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE inference_requests (id INTEGER PRIMARY KEY AUTOINCREMENT, "
                     "request_id TEXT, role TEXT, started_at REAL, finished_at REAL, "
                     "error TEXT)")
        conn.execute("INSERT INTO inference_requests (request_id, role, started_at, "
                     "finished_at, error) VALUES ('req-old', 'code', ?, ?, '')", (T0, T0 + 1))
    conn.close()
    h = MetricsHistory(db)
    assert [e.at for e in h.search()] == [T0]
    assert ids(h.search(HistoryFilter(since=T0 - 1))) == ["req-old"]
    h.close()


def test_a_bad_status_is_refused():
    with pytest.raises(ValueError, match="ok, error"):
        HistoryFilter(status="failed")  # type: ignore[arg-type]


# -- controls ----------------------------------------------------------------------
def test_make_filter_maps_the_widgets():
    f = dash.make_filter("Last hour", "code", dash.ANY, "Error", "  req-1 ", now=T0)
    assert f == HistoryFilter(role="code", route=None, status="error", since=T0 - 3600,
                              text="req-1")
    assert dash.make_filter("All time", now=T0).since is None
    with pytest.raises(ValueError, match="Last hour"):
        dash.make_filter("Last fortnight")


def test_pausing_stops_the_refresh():
    assert dash.run_every(True, 5) == 5.0
    assert dash.run_every(False, 5) is None
    assert dash.status_line(False, 5, now=T0).startswith("Paused")
    assert "every 5 s" in dash.status_line(True, 5, now=T0)
    with pytest.raises(ValueError, match="must be positive"):
        dash.run_every(True, 0)


def test_filter_choices_include_configured_roles(history: MetricsHistory):
    roles, routes = dash.filter_choices(history, ["grader", "code"])
    assert roles == [dash.ANY, "code", "feedback", "grader"]
    assert routes == [dash.ANY, "code:embedded/smollm2-135m", "feedback:embedded/smollm2-135m"]


# -- percentiles -------------------------------------------------------------------
def test_percentiles_per_role_by_hand(tmp_path: Path):
    h = MetricsHistory(tmp_path / "h.db")
    for i, ttft in enumerate([0.5, 0.1, 0.4, 0.2, 0.3]):  # sorted: .1 .2 .3 .4 .5
        h.record(req(i, "code", at=T0 + i, ttft=ttft, prefill=(100 * (i + 1), 1.0),
                     decode=(10, 0.1 * (i + 1))))  # TPOT 10, 20, 30, 40, 50 ms
    h.record(req(9, "code", at=T0 + 9, ttft=9.0, error="BackendError: down"))  # left out
    h.record(req(10, "feedback", at=T0 + 10, error="BackendError: down"))
    code, feedback = dash.summarize_roles(h.samples())
    assert (code.role, code.requests, code.errors) == ("code", 6, 1)
    assert code.ttft_p50 == pytest.approx(0.3)
    assert code.ttft_p95 == pytest.approx(0.48)  # 0.4 + 0.8 * (0.5 - 0.4)
    assert code.tpot_p50 == pytest.approx(0.030)
    assert code.tpot_p95 == pytest.approx(0.048)
    assert code.prefill_tps == pytest.approx(1500 / 5.0)  # tokens summed / seconds summed
    assert code.decode_tps == pytest.approx(50 / 1.5)
    assert (feedback.requests, feedback.errors, feedback.ttft_p50) == (1, 1, None)
    row = dash.summary_rows([feedback])[0]
    assert row["TTFT p50 (s)"] is None
    assert row["decode tok/s"] is None
    assert dash.summary_rows([code])[0]["TPOT p95 (ms)"] == 48.0
    h.close()


# -- time series -------------------------------------------------------------------
def test_buckets_hold_each_request_once_within_bounds():
    n, span = 10_000, 86_400.0
    samples = [Sample(T0 - span + span * i / n, "code" if i % 3 else "feedback", i % 50 != 0,
                      0.2, 0.01, 500, 2.0, 64, 0.64) for i in range(n)]
    series = dash.time_series(samples, T0 - span, T0, max_points=200)
    assert [s.role for s in series] == ["code", "feedback"]
    assert all(0 < len(s) <= 200 for s in series)
    assert sum(sum(s.requests) for s in series) == n
    assert sum(sum(s.errors) for s in series) == n // 50
    for s in series:
        assert s.at == sorted(s.at)
        assert T0 - span <= s.at[0]
        assert s.at[-1] <= T0
        assert all(v == pytest.approx(250.0) for v in s.prefill_tps)
        assert all(v == pytest.approx(100.0) for v in s.decode_tps)


def test_bucket_values_by_hand():
    ok = [Sample(T0 + 1, "code", True, 0.2, 0.01, 300, 1.0, 10, 0.1),
          Sample(T0 + 2, "code", True, 0.4, 0.03, 100, 1.0, 30, 0.9),
          Sample(T0 + 95, "code", False, 0.0, 0.0, 0, 0.0, 0, 0.0)]
    (s,) = dash.time_series(ok, T0, T0 + 100, max_points=2)  # buckets of 50 s
    assert s.at == [T0 + 25, T0 + 75]
    assert s.requests == [2, 1]
    assert s.errors == [0, 1]
    assert s.prefill_tps == [pytest.approx(200.0), None]  # 400 tokens / 2 s; a gap
    assert s.decode_tps == [pytest.approx(40 / 1.0), None]
    assert s.ttft_p50 == [pytest.approx(0.3), None]
    assert s.tpot_p95 == [pytest.approx(0.029), None]
    with pytest.raises(ValueError, match="at least 1"):
        dash.time_series(ok, max_points=0)


def test_figures_have_a_trace_per_role_and_no_nan(history: MetricsHistory):
    view = dash.build_view(history, HistoryFilter(), now=T0 + 1)
    tput = dash.throughput_figure(view.series)
    lat = dash.latency_figure(view.series)
    assert len(tput.data) == 2 * 2  # prefill and decode, two roles
    assert len(lat.data) == 2 * 2 * 2  # TTFT and TPOT, p50 and p95, two roles
    assert {t.name for t in tput.data} == {"code", "feedback"}
    for fig in (tput, lat):
        assert "NaN" not in fig.to_json()


# -- one view --------------------------------------------------------------------
def test_the_view_of_a_history(history: MetricsHistory):
    view = dash.build_view(history, HistoryFilter(role="code", since=T0 - 3600), now=T0 + 1,
                           table_limit=4)
    assert (view.total, view.matched) == (12, 6)
    assert view.measured
    assert not view.empty
    assert [r["request"] for r in view.rows] == ["req-00010", "req-00008", "req-00006",
                                                 "req-00004"]
    assert {r["role"] for r in view.rows} == {"code"}
    assert view.rows[0]["time"] == time.strftime("%Y-%m-%d %H:%M:%S",
                                                 time.localtime(T0 - 720 + 600))
    assert view.summaries[0].requests == 6


def test_an_empty_history(tmp_path: Path):
    h = MetricsHistory(tmp_path / "h.db")
    view = dash.build_view(h, dash.make_filter("Last hour"))
    assert view.empty
    assert view.matched == 0
    assert not view.measured
    assert view.series == []
    assert view.rows == []
    assert view.summaries == []
    assert dash.time_series([]) == []
    assert dash.summarize_roles([]) == []
    h.close()


def test_only_failures_measure_nothing(tmp_path: Path):
    h = MetricsHistory(tmp_path / "h.db")
    h.record(req(1, error="ModelLoadError: no file"))
    view = dash.build_view(h, HistoryFilter())
    assert view.matched == 1
    assert not view.measured
    assert all(v is None for v in view.series[0].prefill_tps)
    h.close()


# -- worker cards and the test prompt ------------------------------------------------
def test_worker_cards():
    cards = dash.worker_cards([
        WorkerHealth("code/prefill", "code", "code:embedded/m", "prefill", "up", "m",
                     last_latency_s=0.41234, queue=2, requests=7, errors=1),
        WorkerHealth("code/decode", "code", "code:embedded/m", "decode", "degraded", "m"),
        WorkerHealth("feedback", "feedback", "feedback:remote/m", "route", "down", "m",
                     detail="connection refused"),
        WorkerHealth("x/prefill", "x", "x:embedded/m", "prefill", "loading", "m"),
    ])
    assert [c.color for c in cards] == ["green", "orange", "red", "gray"]
    assert cards[0].last_latency == "0.412 s"
    assert cards[1].last_latency == "-"
    assert (cards[0].queue, cards[0].requests, cards[0].errors) == (2, 7, 1)
    assert cards[2].detail == "connection refused"


@pytest.mark.parametrize(("schema", "message"), [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "JSON object"),
])
def test_a_bad_schema_text_is_an_invalid_request(schema: str, message: str):
    with pytest.raises(InvalidRequestError, match=message):
        dash.prompt_request("code", "", "Name a fruit.", 16, 0.0, schema)


def test_prompt_request_carries_the_form():
    r = dash.prompt_request("feedback", "  ", "Name a fruit.", 16, 0.5, '{"type": "object"}')
    assert (r.role, r.max_tokens, r.temperature) == ("feedback", 16, 0.5)
    assert r.json_schema == {"type": "object"}
    assert [m.role for m in r.messages] == ["user"]  # a blank system message is left out


def test_stream_capture_keeps_the_result():
    result = GenerationResult("an apple", "stop", req(1))
    capture = dash.StreamCapture(iter(["an", " apple", result]))
    assert list(capture) == ["an", " apple"]
    assert capture.result is result


# -- parallel efficiency per graded notebook -------------------------------------------
def llm_layer(name: str, total: float, wall: float, error: str = "") -> LayerResult:
    details = {"parallel_wall_s": wall, "parallel_efficiency": round(2 * total / wall, 3),
               "route": f"{'code' if name == 'L3' else 'feedback'}:embedded/smollm2-135m"}
    if not error:
        details.update(total_s=total, queue_s=0.0, prefill_tps=250.0, decode_tps=90.0)
    return LayerResult(name, error=error, details=details)


def report(student: str, sha: str, layers: dict[str, LayerResult]) -> GradeReport:
    return GradeReport(file=f"{student}.ipynb", sha256=sha, assignment="hw1",
                       rubric_version="v1", status="graded", score=4.0, max_score=5.0,
                       layers={"L1": LayerResult("L1"), **layers})


@pytest.fixture
def graded(tmp_path: Path) -> Iterator[Store]:
    store = Store(tmp_path / "grader.db")
    a = store.upsert_assignment("hw1", "Homework 1", "python", "/srv/hw1")
    rv = store.add_rubric_version(a, "v1", "{}")
    plans = {
        "student041": {},  # graded without the LLM layers
        "student042": {"L3": llm_layer("L3", 6.0, 8.0), "L4": llm_layer("L4", 6.0, 8.0)},
        "student043": {"L3": llm_layer("L3", 4.0, 4.0),
                       "L4": llm_layer("L4", 4.0, 4.0, error="BackendError: down")},
        "student044": {"L3": llm_layer("L3", 3.0, 3.0), "L4": llm_layer("L4", 3.0, 3.0)},
    }
    for i, (student, layers) in enumerate(plans.items()):
        sha = f"{i:064x}"
        sub = store.add_submission(a, sha, f"{student}.ipynb", student_id=student)
        store.save_grade(sub, rv, report(student, sha, layers))
    yield store
    store.close()


def test_llm_timings_per_notebook_newest_first(graded: Store):
    stats = notebook_llm_stats(graded, limit=10)
    assert [s.notebook for s in stats] == ["student044.ipynb", "student043.ipynb",
                                           "student042.ipynb"]
    s44, s43, s42 = stats
    assert (s42.l3_seconds, s42.l4_seconds, s42.wall_seconds) == (6.0, 6.0, 8.0)
    assert s42.efficiency == 1.5
    assert s43.l4_seconds is None
    assert "L4: BackendError: down" in s43.errors
    assert s44.routes == "code:embedded/smollm2-135m, feedback:embedded/smollm2-135m"
    assert [s.notebook for s in notebook_llm_stats(graded, limit=1)] == ["student044.ipynb"]
    row = stats_rows([s42])[0]
    assert (row["L3 (s)"], row["wall (s)"], row["parallel efficiency"]) == (6.0, 8.0, 1.5)


def test_llm_timings_hide_names_when_anonymous(graded: Store):
    stats = notebook_llm_stats(graded, anonymous=True)
    names = [s.notebook for s in stats]
    # a pseudonym's file, with its assignment: pseudonyms are numbered per assignment
    assert all(n.split("/")[-1].startswith("student_0") for n in names), names
    assert all(n.endswith(".ipynb") for n in names)
    assert not any("student04" in n for n in names)
    assert len(set(names)) == 3
    assert "student04" not in json.dumps(stats_rows(stats))


def test_efficiency_figure(graded: Store):
    stats = notebook_llm_stats(graded)
    fig = efficiency_figure(stats)
    (bars,) = fig.data
    assert list(bars.y) == [s.efficiency for s in reversed(stats)]  # oldest on the left
    assert list(bars.x)[-1] == stats[0].label
    assert not any(isinstance(y, float) and math.isnan(y) for y in bars.y)


def test_no_llm_grades_no_rows(tmp_path: Path):
    with Store(tmp_path / "grader.db") as store:
        assert notebook_llm_stats(store) == []
