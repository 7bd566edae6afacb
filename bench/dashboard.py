"""Benchmark of the Dashboard page's live fragment against its one-second budget.

    .venv/bin/python -m bench.dashboard --quick --json

Fills a temporary data folder with a request history of ``--requests`` synthetic
requests (default 10,000, spread over the last 24 hours, two roles, 2% failed)
and a grade store of ``--grades`` graded notebooks with L3/L4 timings, then times
what the fragment does on each refresh, through the same library calls the page
makes (worker cards from a real client's ``health()``, the filter choices, the
view of the "Last 24 hours" window, i.e. all the requests, the three Plotly
figures validated and serialised as ``st.plotly_chart`` does, the notebooks'
timings). Prints progress to stderr and, as the last line of stdout, one JSON
object:

- ``fragment_seconds``: median wall time of that work; ``budget_ratio`` is it over
  the 1-second budget (target well under 1).
- ``fragment_all_time_seconds``: the same over the "All time" window.
- ``app_rerun_seconds`` (unless ``--no-app``): median of full reruns of the page in
  Streamlit's AppTest on the "Last 24 hours" window (sidebar, prompt form and
  fragment: more than a fragment rerun does), after the models finished loading;
  ``app_budget_ratio`` is it over 1 s.
- a breakdown: ``samples_seconds``, ``table_seconds``, ``figures_seconds``,
  ``llm_stats_seconds``.
"""

from __future__ import annotations

import logging
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import plotly.io
import plotly.tools

from grader.store.database import Store
from grader.types import GradeReport, LayerResult
from grader.views.model_timings import efficiency_figure, notebook_llm_stats, stats_rows
from inference import DisaggregatedClient, RequestMetrics, default_config
from inference.dashboard import requests as dash
from inference.metrics import MetricsHistory

from .report import emit, parser

log = logging.getLogger("bench.dashboard")


def fill_history(db: Path, n: int, now: float) -> None:
    rng = random.Random(7)
    h = MetricsHistory(db)
    for i in range(n):
        role = "code" if i % 2 == 0 else "feedback"
        at = now - 86_000 + 86_000 * i / n
        prompt, evals = rng.randint(400, 2000), rng.randint(20, 300)
        pre_s, dec_s = prompt / rng.uniform(200, 300), evals / rng.uniform(60, 140)
        h.record(RequestMetrics(
            request_id=f"bench-{i:05d}", role=role, route=f"{role}:embedded/smollm2-135m",
            model="smollm2-135m", prefill_worker=f"{role}/prefill",
            decode_worker=f"{role}/decode", prompt_tokens=prompt, prefill_tokens=prompt,
            prefill_seconds=pre_s, decode_tokens=evals, decode_evals=evals,
            decode_seconds=dec_s, kv_bytes=prompt * 23_000, ttft_seconds=pre_s + 0.01,
            total_seconds=pre_s + dec_s, started_at=at, finished_at=at + pre_s + dec_s,
            finish_reason="stop", error="BackendError: worker crashed" if i % 50 == 7 else ""))
    h.close()


def fill_store(db: Path, n: int) -> None:
    """``n`` graded notebooks whose reports are about as large as real ones (~15 kB)."""
    rng = random.Random(11)
    with Store(db) as store:
        a = store.upsert_assignment("bench", "Bench", "python", "/srv/bench")
        rv = store.add_rubric_version(a, "v1", "{}")
        for i in range(n):
            sha = f"{i:064x}"
            sub = store.add_submission(a, sha, f"student{i:03d}.ipynb", f"student{i:03d}")
            wall = rng.uniform(8, 16)
            layers = {name: LayerResult(name, details={
                "total_s": wall * rng.uniform(0.4, 1.0), "parallel_wall_s": wall,
                "parallel_efficiency": rng.uniform(1.0, 2.0), "route": f"{name}:bench",
                "output": {f"c{k}": {"verdict": "met", "issue": "x" * 400} for k in range(8)},
            }) for name in ("L3", "L4")}
            layers["L2"] = LayerResult("L2", notes=["y" * 6000])
            store.save_grade(sub, rv, GradeReport(
                file=f"student{i:03d}.ipynb", sha256=sha, assignment="bench",
                rubric_version="v1", status="graded", score=1.0, max_score=2.0, layers=layers))


def _sent(fig: Any) -> str:
    """What ``st.plotly_chart`` does with a figure: validate it, serialise it."""
    figure = plotly.tools.return_figure_from_figure_or_data(fig, validate_figure=True)
    return plotly.io.to_json(figure, validate=False)


def fragment_work(client: DisaggregatedClient, store: Store, window: str,
                  parts: dict[str, list[float]] | None = None) -> None:
    """The library calls of one fragment run, in the page's order."""
    def lap(name: str, t0: float) -> float:
        t1 = time.perf_counter()
        if parts is not None:
            parts.setdefault(name, []).append(t1 - t0)
        return t1

    t = time.perf_counter()
    dash.worker_cards(client.health())
    dash.filter_choices(client.history, client.roles)
    flt = dash.make_filter(window)
    total = client.history.count()
    samples = client.history.samples(flt)
    t = lap("samples_seconds", t)
    rows = dash.table_rows(client.history.search(flt, dash.TABLE_LIMIT))
    t = lap("table_seconds", t)
    summaries = dash.summarize_roles(samples)
    series = dash.time_series(samples, flt.since, time.time())
    dash.summary_rows(summaries)
    _sent(dash.throughput_figure(series))
    _sent(dash.latency_figure(series))
    t = lap("figures_seconds", t)
    stats = notebook_llm_stats(store, limit=50)
    stats_rows(stats)
    _sent(efficiency_figure(stats))
    lap("llm_stats_seconds", t)
    if not (total and rows and stats):
        raise RuntimeError("the synthetic data did not reach the fragment")


def timed(fn: Callable[[], Any], repeat: int) -> list[float]:
    fn()  # warm: imports, plotly's validators, SQLite's page cache
    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def bench_app(data: Path, repeat: int) -> dict[str, float]:
    os.environ["GRADER_DATA_DIR"] = str(data)
    os.environ.pop("GRADER_CONFIG", None)
    import streamlit as st

    from .apptest import open_page

    at = open_page("dashboard")  # once the models, loading in the background, are ready
    at.selectbox(key="dash_window").set_value("Last 24 hours").run()  # all the requests
    if at.exception:
        raise RuntimeError(f"the page failed: {at.exception}")
    times = timed(at.run, repeat)
    if len(at.get("plotly_chart")) != 3:
        raise RuntimeError("the page did not draw its three charts")
    st.cache_resource.clear()
    return {"app_rerun_seconds": statistics.median(times), "app_rerun_max_seconds": max(times)}


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, "5 repetitions instead of 15")
    ap.add_argument("--requests", type=int, default=10_000)
    ap.add_argument("--grades", type=int, default=300)
    ap.add_argument("--no-app", action="store_true", help="skip the AppTest reruns")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    logging.getLogger("grader").setLevel(logging.WARNING)
    logging.getLogger("inference").setLevel(logging.WARNING)
    repeat = 5 if args.quick else 15

    out: dict[str, Any] = {"requests": args.requests, "grades": args.grades}
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        db = data / "grader.db"
        t0 = time.perf_counter()
        fill_history(db, args.requests, time.time())
        fill_store(db, args.grades)
        log.info("filled %d requests and %d grades in %.1f s", args.requests, args.grades,
                 time.perf_counter() - t0)
        parts: dict[str, list[float]] = {}
        with DisaggregatedClient(default_config(history_db=db)) as client, Store(db) as store:
            day = timed(lambda: fragment_work(client, store, "Last 24 hours", parts), repeat)
            every = timed(lambda: fragment_work(client, store, "All time"), repeat)
        out["fragment_seconds"] = statistics.median(day)
        out["fragment_max_seconds"] = max(day)
        out["fragment_all_time_seconds"] = statistics.median(every)
        out["budget_ratio"] = out["fragment_seconds"] / 1.0
        out.update({k: statistics.median(v) for k, v in parts.items()})
        log.info("fragment: median %.3f s over %d runs", out["fragment_seconds"], repeat)
        if not args.no_app:
            log.info("AppTest reruns of the page (loading the models first)...")
            out.update(bench_app(data, repeat))
            out["app_budget_ratio"] = out["app_rerun_seconds"] / 1.0
    emit(out, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
