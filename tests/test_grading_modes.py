"""Notebooks per minute per mode: batches graded with the models (L3, L4) and by the
checks alone are rated apart (grader.views.grading), over a real store."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from grader.store.database import Store
from grader.views import grading as gs
from grader.views.grading_figure import rate_figure
from tests.test_app_dashboard_grading import grade_batch


def test_batches_with_and_without_models_are_rated_apart(tmp_path: Path):
    now = time.time()
    with Store(tmp_path / "grader.db") as store:
        aid = store.upsert_assignment("hw1", "Homework 1", "python", "/srv/hw1")
        rv = store.add_rubric_version(aid, "v1", "{}")
        fast = grade_batch(store, aid, rv, now - 400, [(f"s{i}.ipynb", 1.0) for i in range(7)],
                           every=3)  # 7 in 21 s: 20 / min
        slow = grade_batch(store, aid, rv, now - 300, [(f"m{i}.ipynb", 1.0) for i in range(2)],
                           models=True, every=100)  # 2 in 200 s: 0.6 / min
        view = gs.grading_view(store, now=now)
    assert {b.id: b.mode for b in view.batches} == {fast: gs.CHECKS, slow: gs.MODELS}
    assert view.overall_by_mode[gs.CHECKS].per_minute == pytest.approx(20.0)
    assert view.overall_by_mode[gs.MODELS].per_minute == pytest.approx(0.6)
    assert view.recent_by_mode[gs.MODELS].notebooks == 2  # both inside the last 10 minutes
    # Together they would say 9 notebooks in 221 s: 2.4 / min, true of neither.
    assert view.overall.per_minute == pytest.approx(9 * 60 / 221)
    cards = gs.metric_cards(view)
    assert [(c.label, c.note, c.value) for c in cards[:4]] == [
        ("Notebooks / min, last 10 min", "checks only (no models)", "20.00"),
        ("Notebooks / min, last 10 min", "with models (L3, L4)", "0.60"),
        ("Notebooks / min, last 2 batches", "checks only (no models)", "20.00"),
        ("Notebooks / min, last 2 batches", "with models (L3, L4)", "0.60")]
    assert [r["models"] for r in gs.batch_rows(view.batches)] == \
        ["with models (L3, L4)", "checks only (no models)"]
    fig = rate_figure(view.batches)
    assert [(t.name, list(t.y)) for t in fig.data] == [
        ("checks only (no models)", [pytest.approx(20.0)]),
        ("with models (L3, L4)", [pytest.approx(0.6)])]
    assert fig.layout.showlegend
