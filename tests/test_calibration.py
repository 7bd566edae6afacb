"""A calibration measures a model route before it is trusted to judge (issue 23): its
figures against the checks and the instructor, worked out here from a grade without
models; the verdict's thresholds; the store; the command line. The route is a fake at
the boundary: a Backend registered in the real registry that says "met" on every code
criterion and scores every written answer 0."""

from __future__ import annotations

import csv
import dataclasses
import json
import shutil
import time
from pathlib import Path

import pytest

from grader.assignment import load_assignment
from grader.cli import main
from grader.layers.base import GradeOptions
from grader.pipeline import GradeInput, Grader
from grader.rubrics.model_notes import MET, SCORE_BAND
from grader.scoring import DISAGREE, JUDGE_BAND
from grader.service.calibration import (
    bundled_sets,
    calibrate,
    calibration_rows,
    graded_set,
    latest,
    pick,
)
from grader.service.calibration_figures import FIT_AGREEMENT, MIN_CRITERIA, RouteCalibration
from grader.store.database import Store
from inference import (
    Backend,
    EngineConfig,
    GenerationResult,
    ModelSpec,
    RequestMetrics,
    RouteConfig,
    WorkerHealth,
    register_backend,
)

ROOT = Path(__file__).resolve().parents[1]
RETAIL = ROOT / "examples" / "retail-sales"
NOTEBOOKS = ("complete", "partial", "wrong_outputs")


class SaysMet(Backend):
    """Every code criterion "met", every written answer scored 0."""

    def prefill(self, request):
        raise NotImplementedError

    def decode(self, handle, on_token=None):
        raise NotImplementedError

    def generate(self, request, on_token=None):
        item = {"verdict": "met", "cells": [], "issue": "", "confidence": 0.9, "quote": "",
                "suggestion": "", "score": 0.0, "strength": "the answer is written down",
                "improve": "say more about it", "next_step": "cite the numbers",
                "points_met": []}
        parsed = {cid: {k: item[k] for k in spec["properties"]}
                  for cid, spec in request.json_schema["properties"].items()}
        m = RequestMetrics(role=request.role, route=self.route.name, started_at=time.time(),
                           finished_at=time.time(), method="single")
        return GenerationResult(json.dumps(parsed), "stop", m, parsed=parsed)

    def health(self):
        return [WorkerHealth("says-met", self.route.role, self.route.name, "generate", "up",
                             model=self.route.model)]


register_backend("says-met", SaysMet)


def config(tmp: Path, model: str = "judge", can_judge: bool | None = False) -> EngineConfig:
    spec = ModelSpec(name="judge", path="/nonexistent.gguf")
    return EngineConfig(routes={r: RouteConfig(r, backend="says-met", mode="single",
                                               model=model, can_judge=can_judge)
                                for r in ("code", "feedback")},
                        models={"judge": spec}, history_db=tmp / "history.db")


@pytest.fixture
def graded(tmp_path: Path) -> Path:
    """Three retail notebooks; the instructor gave ``complete`` full marks and
    ``wrong_outputs`` none, criterion by criterion, and did not grade ``partial``; one
    row names a notebook that is not there."""
    folder = tmp_path / "graded"
    folder.mkdir()
    for name in NOTEBOOKS:
        shutil.copy(RETAIL / "submissions" / f"{name}.ipynb", folder)
    rubric = load_assignment(RETAIL).rubric
    with open(folder / "grades.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["file", "score", *(c.id for c in rubric.criteria)])
        w.writerow(["complete.ipynb", rubric.total_points, *(c.points for c in rubric.criteria)])
        w.writerow(["wrong_outputs.ipynb", 0, *(0 for _ in rubric.criteria)])
        w.writerow(["absent.ipynb", 3, *("" for _ in rubric.criteria)])
    return folder


def expected(instructor: dict[str, float | None]) -> dict[str, dict]:
    """The two routes' figures, worked out from a grade without models and the rules the
    fake's answers meet: "met" agrees from MET of the points, sends to review at
    DISAGREE["met"] and below, moves nothing; a written 0 agrees up to SCORE_BAND, lowers
    the points by at most JUDGE_BAND and sends to review past it."""
    grader = Grader(load_assignment(RETAIL), GradeOptions(execute=False))
    out = {"code": dict.fromkeys(("judged", "agreed", "moved", "reviewed", "ij", "ia"), 0),
           "written": dict.fromkeys(("judged", "agreed", "moved", "reviewed", "ij", "ia"), 0)}
    errors: dict[str, list[tuple[float, float]]] = {"code": [], "written": []}
    for name in NOTEBOOKS:
        report = grader.grade(GradeInput.from_path(RETAIL / "submissions" / f"{name}.ipynb"))
        for c in report.criteria:
            share = c.points / c.max_points
            f = out[c.kind]
            f["judged"] += 1
            mine = instructor[name]
            if c.kind == "code":
                f["agreed"] += share >= MET
                f["reviewed"] += share <= DISAGREE["met"] and not c.needs_review
                trusted = c.points
                if mine is not None:
                    f["ij"] += 1
                    f["ia"] += mine >= MET
            else:
                f["agreed"] += share <= SCORE_BAND
                f["moved"] += share > 0
                f["reviewed"] += share > JUDGE_BAND and not c.needs_review
                trusted = c.max_points * max(0.0, share - JUDGE_BAND) if share > 0 else 0.0
                if mine is not None:
                    f["ij"] += 1
                    f["ia"] += mine <= SCORE_BAND
            if mine is not None:
                errors[c.kind].append((abs(trusted - mine * c.max_points),
                                       abs(c.points - mine * c.max_points)))
    for kind, pairs in errors.items():
        out[kind]["mae"] = (sum(t for t, _ in pairs) / len(pairs),
                            sum(c for _, c in pairs) / len(pairs), len(pairs))
    return out


def test_the_figures_of_a_route_are_those_of_its_judgements(graded: Path, tmp_path: Path):
    """Agreement with the checks and the instructor, moves, reviews and the distance to
    the instructor's points, each as the rules give them; the store keeps them."""
    sets = [graded_set(load_assignment(RETAIL), graded, None, 0)]
    assert [nb.path.name for nb in sets[0].notebooks] == [f"{n}.ipynb" for n in sorted(NOTEBOOKS)]
    assert sets[0].problems == ("grades.csv: no notebook for the row of 'absent.ipynb'",)
    with Store(tmp_path / "grader.db") as store:
        result = calibrate(sets, config(tmp_path), GradeOptions(execute=False), store)
        stored = latest(store)
    want = expected({"complete": 1.0, "wrong_outputs": 0.0, "partial": None})
    code, feedback = result.routes
    assert (code.role, code.layer, feedback.role, feedback.layer) == \
        ("code", "L3", "feedback", "L4")
    for route, kind in ((code, "code"), (feedback, "written")):
        w = want[kind]
        assert route.notebooks == 3
        assert route.failed == 0
        assert (route.judged, route.agreed, route.moved, route.reviewed) == \
            (w["judged"], w["agreed"], w["moved"], w["reviewed"]), kind
        assert (route.instructor_judged, route.instructor_agreed) == (w["ij"], w["ia"]), kind
        assert route.mae_over == "criterion"
        assert (route.instructor_mae, route.checks_mae, route.mae_n) == \
            pytest.approx(w["mae"], abs=1e-4), kind
        assert route.model == "judge"
        assert route.server == "says-met (in-process)"
        assert not route.can_judge  # as configured; the calibration judged regardless
    assert code.judged == 18
    assert code.moved == 0
    assert 0 < code.agreed < code.judged  # "met" is right on the complete work only
    assert feedback.moved > 0  # trusted, the written 0s would lower scores
    assert code.verdict.startswith(f"agrees with the checks on {code.rate:.0%} of 18 criteria")
    assert code.verdict.endswith("not fit to judge; keep can_judge = false for the code role")
    assert feedback.judged == 6
    assert "too few to tell" in feedback.verdict
    assert not result.fit
    assert result.notebooks == 3
    assert result.warnings == ()
    assert "absent.ipynb" in result.problems[0]
    assert {s.route: (s.judged, s.agreed, s.instructor_mae) for s in stored} == \
        {r.route: (r.judged, r.agreed, r.instructor_mae) for r in result.routes}


def test_the_verdict_follows_the_documented_thresholds():
    base = RouteCalibration("code", "L3", "code:x/y", "s", "m", False, notebooks=10,
                            judged=MIN_CRITERIA, agreed=MIN_CRITERIA)
    assert base.fit
    assert "fit to judge; you may set can_judge = true" in base.verdict
    just = round(MIN_CRITERIA * FIT_AGREEMENT)
    assert _with(base, agreed=just).fit
    assert not _with(base, agreed=just - 1).fit
    assert "keep can_judge = false for the code role" in _with(base, agreed=just - 1).verdict
    few = _with(base, judged=MIN_CRITERIA - 1, agreed=MIN_CRITERIA - 1)
    assert not few.fit
    assert "too few to tell" in few.verdict
    assert not _with(base, failed=3).fit  # no judgement on 3 of 10 notebooks
    assert not _with(base, instructor_judged=5, instructor_agreed=3).fit
    worse = _with(base, instructor_mae=0.3, checks_mae=0.1, mae_over="notebook", mae_n=4)
    assert not worse.fit
    assert "further from the instructor's" in worse.verdict
    assert _with(base, instructor_mae=0.1, checks_mae=0.1, mae_over="notebook", mae_n=4).fit
    again = RouteCalibration.from_dict(json.loads(json.dumps(worse.to_dict())))
    assert again == worse


def _with(r: RouteCalibration, **changes) -> RouteCalibration:
    return dataclasses.replace(r, **changes)


def test_the_store_keeps_the_newest_calibration_of_each_route(tmp_path: Path):
    old = RouteCalibration("code", "L3", "code:a", "s1", "m1", False, judged=12, agreed=3)
    new = _with(old, agreed=11, server="s2")
    other = RouteCalibration("feedback", "L4", "feedback:b", "s1", "m1", True, notebooks=2)
    with Store(tmp_path / "g.db") as store:
        for when, r in ((100.0, old), (200.0, new), (150.0, other)):
            store.add_calibration(when, r.role, r.route, r.server, r.model, "ex", r.fit,
                                  r.to_dict())
        shown = latest(store)
        assert [(r.route, r.created_at, r.agreed, r.server) for r in shown] == \
            [("code:a", 200.0, 11, "s2"), ("feedback:b", 150.0, 0, "s1")]
        assert len(store.calibrations("code:a")) == 2
    rows = calibration_rows(shown, in_use=["code:a"])
    assert [(r["in use"], r["fit to judge"], r["agreement with the checks"]) for r in rows] == \
        [("yes", "yes", "92%"), ("no", "no", None)]


def test_bundled_sets_spread_their_notebooks_and_carry_the_instructors_points():
    assert pick(list("abcdefghi"), 3) == ["a", "e", "i"]
    assert pick(list("ab"), 3) == ["a", "b"]
    assert pick(list("abc"), 0) == ["a", "b", "c"]
    (levels,) = bundled_sets(2, ["py-levels"])
    assert [nb.path.name for nb in levels.notebooks] == ["alternative.ipynb",
                                                         "weak_approach.ipynb"]
    assert [nb.instructor.total for nb in levels.notebooks] == [18.8, 16]
    (retail,) = bundled_sets(0, ["retail-sales"])
    assert len(retail.notebooks) == 10
    assert all(nb.instructor is None for nb in retail.notebooks)


def test_the_command_line_prints_the_figures_and_keeps_them(graded: Path, tmp_path: Path,
                                                          monkeypatch, capsys):
    """``grader calibrate``: the judging warning of a route trusted with a bundled model,
    each route's verdict, exit 1 (not fit), the figures in the store; ``check
    --calibrate`` says both; wrong usage is exit 2."""
    toml = tmp_path / "grader.toml"
    toml.write_text(f"""[engine]
history_db = "{tmp_path / 'history.db'}"
[roles.code]
backend = "says-met"
mode = "single"
model = "smollm2-135m"
can_judge = true
[roles.feedback]
backend = "says-met"
mode = "single"
""")
    monkeypatch.setenv("GRADER_CONFIG", str(toml))
    db = tmp_path / "cli.db"
    args = [str(RETAIL), "--notebooks", str(graded), "--no-exec", "--db", str(db)]
    assert main(["calibrate", *args]) == 1
    out = capsys.readouterr()
    lines = out.out.splitlines()
    assert lines[0].startswith("Warning: The code role may move scores (can_judge = true)")
    assert "Calibrated on 3 graded notebooks: retail-sales (3 notebooks, 2 with the " \
           "instructor's points from grades.csv)." in lines
    verdicts = [ln for ln in lines if ln.startswith("  Verdict: ")]
    assert len(verdicts) == 2
    assert all("keep can_judge = false" in v for v in verdicts)
    assert "calibrating [3/3] retail-sales/" in out.err
    with Store(db) as store:
        assert {r.route for r in store.latest_calibrations()} == \
            {"code:says-met/smollm2-135m", "feedback:says-met/smollm2-135m"}

    assert main(["calibrate", *args, "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["fit"] is False
    assert len(data["routes"]) == 2
    assert len(data["warnings"]) == 1
    assert data["routes"][0]["can_judge"] is True
    assert data["routes"][1]["can_judge"] is False

    assert main(["check", str(RETAIL), "--no-exec", "--json", "--calibrate", "--limit", "2",
                 "--db", str(db)]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["solution_percent"] is not None
    assert data["calibration"]["notebooks"] == 2

    assert main(["calibrate", str(RETAIL), str(RETAIL), "--grades", "x.csv"]) == 2
    assert main(["check", str(RETAIL), "--limit", "2"]) == 2
    assert "are for --calibrate" in capsys.readouterr().err


def test_the_headline_says_which_notebooks_were_not_graded_and_not_counted():
    from grader.service.calibration import Calibration

    route = RouteCalibration("code", "L3", "code:x/y", "s", "m", False, notebooks=11,
                             judged=59, agreed=10)
    run = Calibration(0.0, "the bundled examples", 12, (route,), problems=(
        "r-joins/partial.ipynb: not graded (the kernel died)",))
    line = run.headline()
    assert line.startswith("Calibrated on 12 notebooks (1 of them not graded, so not "
                           "counted: r-joins/partial.ipynb: not graded (the kernel died)):")
    assert "the code role is not fit to judge" in line
    assert Calibration.from_dict(run.to_dict()).headline() == line
