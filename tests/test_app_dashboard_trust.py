"""The Dashboard's trust section in Streamlit's AppTest: the judging warning of a route
trusted with a bundled model, the latest calibration of each route from the store, and
the button that calibrates in the background (a stand-in run here: the real one, a
process grading with the models, is tests/test_calibration_llm.py)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pandas as pd
from streamlit.testing.v1 import AppTest

from grader.service.calibration import Calibration
from grader.service.calibration_figures import RouteCalibration
from grader.service.calibration_runs import CalibrationRuns
from grader.store.database import Store


def page(runs=None) -> None:
    from app_pages.dashboard_trust import calibration_section

    calibration_section(runs)


class HeldRun(CalibrationRuns):
    """A calibration that finishes when the test lets it, with a result made up here."""

    def __init__(self, db: Path) -> None:
        super().__init__(db)
        self.go = threading.Event()
        self.calls = 0

    def calibrate(self) -> Calibration:
        self.calls += 1
        assert self.go.wait(30)
        route = RouteCalibration("code", "L3", "code:embedded/smollm2-135m", "embedded", "m",
                                 True, notebooks=12, judged=40, agreed=14)
        return Calibration(time.time(), "bundled examples", 12, (route,))


def _stored(data: Path) -> None:
    """A calibration of the code route from yesterday, one of a route no longer used."""
    good = RouteCalibration("code", "L3", "code:embedded/smollm2-135m", "embedded (in-process)",
                            "smollm2-135m", True, notebooks=6, judged=20, agreed=7)
    gone = RouteCalibration("code", "L3", "code:openai/qwen2.5-7b", "gpu1", "qwen2.5-7b",
                            True, notebooks=6, judged=24, agreed=23)
    with Store(data / "grader.db") as store:
        for when, r in ((time.time() - 86_400, good), (time.time() - 90_000, gone)):
            store.add_calibration(when, r.role, r.route, r.server, r.model, "py-levels (6)",
                                  r.fit, r.to_dict())


def test_the_section_warns_shows_the_latest_calibrations_and_calibrates(
        app_data: Path, tmp_path: Path, monkeypatch):
    toml = tmp_path / "grader.toml"
    toml.write_text("[roles.code]\ncan_judge = true\n[roles.feedback]\n")
    monkeypatch.setenv("GRADER_CONFIG", str(toml))
    _stored(app_data)
    runs = HeldRun(app_data / "grader.db")
    at = AppTest.from_function(page, kwargs={"runs": runs}, default_timeout=60).run()
    assert not at.exception, at.exception
    assert at.subheader[0].value == "Models trusted to judge"
    (warning,) = [w.value for w in at.warning]
    assert warning.startswith("The code role may move scores (can_judge = true), but code "
                              "(embedded) serves smollm2-135m, which is too small to judge")
    assert at.caption[0].value.startswith("Trusted to judge now (can_judge = true): code; "
                                          "advisory: feedback.")
    (table,) = [d.value for d in at.dataframe]
    assert isinstance(table, pd.DataFrame)
    assert list(table["route"]) == ["code:embedded/smollm2-135m", "code:openai/qwen2.5-7b"]
    assert list(table["in use"]) == ["yes", "no"]
    assert list(table["agreement with the checks"]) == ["35%", "96%"]
    assert list(table["fit to judge"]) == ["no", "yes"]
    assert "keep can_judge = false for the code role" in table["verdict"][0]
    assert list(table["agreement with the instructor"]) == ["—", "—"]

    (button,) = [b for b in at.button if b.label == "Calibrate on the bundled examples"]
    at = button.click().run()
    assert any(i.value.startswith("Calibrating since") for i in at.info), at.info
    at = at.run()  # drawn again while it runs (the Dashboard refreshes by itself)
    assert any(i.value.startswith("Calibrating since") for i in at.info), at.info
    assert [b.disabled for b in at.button] == [True]  # one run at a time
    runs.go.set()
    deadline = time.monotonic() + 30
    while (state := runs.state()) is not None and state.running:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    at = at.run()
    assert not at.exception, at.exception
    assert [w.value for w in at.warning][-1] == (
        "Calibrated on 12 notebooks: the code role is not fit to judge (agrees with the "
        "checks on 35% of 40 criteria).")
    assert runs.calls == 1
    assert not any(b.disabled for b in at.button)


def test_without_calibrations_the_section_says_so(app_data: Path):
    at = AppTest.from_function(page, kwargs={"runs": HeldRun(app_data / "grader.db")},
                               default_timeout=60).run()
    assert not at.exception, at.exception
    assert not at.warning  # the embedded default is advisory: nothing to warn about
    assert [i.value for i in at.info] == ["No route has been calibrated yet."]
    assert at.caption[0].value.startswith("Trusted to judge now (can_judge = true): no role; "
                                          "advisory: code, feedback.")
