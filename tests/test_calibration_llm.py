"""The calibration run on the bundled examples (issue 23), with the bundled model: the
Dashboard's background run (``python -m grader calibrate --json --db``, a process of its
own) over two py-levels notebooks, executed in the sandbox, with the embedded default
(SmolLM2-135M on both roles, advisory). Two notebooks keep it to a couple of minutes on
two cores; they are too few to find any route fit, which the verdict says."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.service.calibration import latest
from grader.service.calibration_figures import MIN_CRITERIA
from grader.service.calibration_runs import CalibrationRuns
from grader.store.database import Store

pytestmark = [pytest.mark.slow, pytest.mark.llm]


def test_the_bundled_model_calibrated_on_the_bundled_examples(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("GRADER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("GRADER_CONFIG", raising=False)
    db = tmp_path / "data" / "grader.db"
    result = CalibrationRuns(db, limit=2, names=["py-levels"]).calibrate()
    assert result.notebooks == 2
    assert result.problems == ()
    assert result.warnings == ()
    assert result.examples == ("py-levels (2 notebooks, 2 with the instructor's points from "
                               "expected.toml [points])")
    code, feedback = result.routes
    assert (code.route, feedback.route) == ("code:embedded/smollm2-135m",
                                            "feedback:embedded/smollm2-135m")
    for r in (code, feedback):
        assert r.model == "smollm2-135m"
        assert r.server == "embedded (in-process)"
        assert not r.can_judge  # the default: advisory; measured as if trusted
        assert r.notebooks == 2
        judged_on = r.notebooks - r.failed
        # py-levels: three code criteria and one written answer per notebook
        assert r.judged <= judged_on * (3 if r.role == "code" else 1)
        assert 0 <= r.agreed <= r.judged
        # the instructor's totals (expected.toml) are the checks' own, run in the sandbox
        assert r.mae_over == "notebook"
        assert r.mae_n == judged_on
        assert r.checks_mae == 0.0
        assert r.instructor_mae is not None
        assert r.instructor_mae >= 0.0
        assert r.judged < MIN_CRITERIA
        assert not r.fit
        assert "too few to tell" in r.verdict
    assert code.moved == 0  # a code model never moves points
    assert not result.fit
    with Store(db) as store:
        kept = {r.route: r for r in latest(store)}
    assert set(kept) == {code.route, feedback.route}
    assert (kept[code.route].judged, kept[code.route].agreed) == (code.judged, code.agreed)
    assert kept[feedback.route].instructor_mae == feedback.instructor_mae
