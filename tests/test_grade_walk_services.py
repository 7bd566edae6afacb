"""Issue 22, the walk of a new instructor, below the pages: the live board says what runs
now and how long is left (measured), archiving and deleting keep every grade, the import
report in plain words, the results show the grades in force."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from grader.errors import InputError
from grader.events import GradeEvent
from grader.layers.base import GradeOptions
from grader.pipeline import GradeInput, Grader
from grader.rubrics.import_items import ImportReport, ImportRow
from grader.rubrics.schema import loads
from grader.service.batch import grade_batch
from grader.service.import_words import advice_lines, pluralised, worded_rows
from grader.service.jobs import _replies
from grader.service.results import results_in_force
from grader.service.shelf import ARCHIVE_FILE, archive, delete, grade_count, restore
from grader.service.workspace import Upload, Workspace, made_from
from grader.store.database import Store
from grader.types import LayerResult
from grader.views.progress import ProgressBoard
from inference import RequestMetrics
from inference.metrics import MetricsHistory

ROOT = Path(__file__).resolve().parents[1]
RETAIL = ROOT / "examples" / "retail-sales"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _to_l2(board: ProgressBoard, clock: Clock, name: str) -> None:
    board.apply(GradeEvent(name, "start"))
    clock.now += 2
    board.apply(GradeEvent(name, "layer", "L1", "8 of 8", 0.2))
    board.apply(GradeEvent(name, "layer", "L2", "8 of 8", 1.5))


def _to_model_layers(board: ProgressBoard, clock: Clock, name: str) -> None:
    """A notebook graded, its grade stored, its model part begun: both requests sent."""
    _to_l2(board, clock, name)
    board.apply(GradeEvent(name, "done", report=_pending()))
    board.apply(GradeEvent(name, "models"))
    board.apply(GradeEvent(name, "sent", "L3"))
    board.apply(GradeEvent(name, "sent", "L4"))


def _pending():
    """A real report whose model layers are queued behind it (grades first)."""
    report = _report()
    layers = {**report.layers, **{n: LayerResult(n, details={"pending": True})
                                  for n in ("L3", "L4")}}
    return dataclasses.replace(report, layers=layers)


def test_a_model_done_writing_is_said_replied_not_writing():
    """The feedback reply ends at 20 s, the code model writes on to 290 s: the board said
    "the feedback model is writing (210 tokens)" all along; now it says it replied."""
    clock, ended = Clock(), []
    board = ProgressBoard(replies=lambda: ended, clock=clock)
    board.set_total(6)
    _to_model_layers(board, clock, "a.ipynb")
    for _ in range(210):
        board.apply(GradeEvent("a.ipynb", "tokens", "L4", "x"))
    clock.now += 1
    ended.append(("L4", clock.now))  # the feedback request ended
    for _ in range(50):
        clock.now += 5
        board.apply(GradeEvent("a.ipynb", "tokens", "L3", "y"))
    snap = board.snapshot()
    row = snap.rows()[0]
    assert row["Written feedback (L4)"] == "replied (210 tokens)"
    assert row["Code analysis (L3)"] == "writing (50 tokens)"
    headline = snap.headline()
    assert "the feedback model has replied (210 tokens)" in headline
    assert "the feedback model is writing" not in headline
    assert "the code model is writing (50 tokens)" in headline
    assert headline.startswith("a.ipynb (4 min 13 s): ")  # how long this notebook has run
    # a second request of the same layer: writing again
    board.apply(GradeEvent("a.ipynb", "tokens", "L4", "z"))
    assert board.snapshot().rows()[0]["Written feedback (L4)"] == "writing (211 tokens)"


def test_a_silent_model_says_for_how_long():
    clock = Clock()
    board = ProgressBoard(clock=clock)  # no reply history: nothing is guessed
    _to_model_layers(board, clock, "a.ipynb")
    board.apply(GradeEvent("a.ipynb", "tokens", "L3", "y"))
    clock.now += 35
    assert board.snapshot().rows()[0]["Code analysis (L3)"] == "writing (1 token; none for 35 s)"


def test_the_estimate_is_measured_and_none_is_made_up():
    clock = Clock()
    board = ProgressBoard(models=False, clock=clock)
    board.set_total(6)
    assert board.snapshot().estimate() == "No estimate yet: no notebook has started."
    _to_l2(board, clock, "a.ipynb")
    clock.now += 298  # five minutes on the first notebook
    assert board.snapshot().estimate() == (
        "No estimate yet: none of the 6 notebooks has finished; the first has run for "
        "5 min (Structure (L1), Run in the sandbox (L2) done).")
    done = _report()
    board.apply(GradeEvent("a.ipynb", "done", report=done))
    board.apply(GradeEvent("b.ipynb", "start"))
    estimate = board.snapshot().estimate()
    assert estimate == ("About 25 min left for 5 notebooks: 5 min per notebook, measured "
                        "on the 1 notebook graded so far.")
    clock.now += 60
    board.apply(GradeEvent("b.ipynb", "done", report=done))
    assert board.snapshot().estimate().startswith("About 12 min left for 4 notebooks: 3 min ")
    assert ProgressBoard().snapshot().estimate() == ""  # no batch yet: nothing to say


def _report():
    """A real report, for the board's done events."""
    with Store(":memory:") as store:
        a = Workspace(store).load("retail-sales")
    item = GradeInput("partial.ipynb", (RETAIL / "submissions" / "partial.ipynb").read_bytes())
    return Grader(a, GradeOptions(execute=False, use_llm=False)).grade(item)


def test_the_job_learns_when_model_replies_end_from_the_client_history():
    class Client:  # the one part of DisaggregatedClient the job reads
        history = MetricsHistory()

    Client.history.record(RequestMetrics(role="feedback", finished_at=50.0))
    Client.history.record(RequestMetrics(role="feedback", finished_at=10.0))  # before the job
    Client.history.record(RequestMetrics(role="other", finished_at=60.0))
    ended = _replies(Client(), since=20.0)  # type: ignore[arg-type]
    assert ended is not None
    assert ended() == [("L4", 50.0)]
    assert _replies(None, 0.0) is None


# -- archive and delete -----------------------------------------------------------------
@pytest.fixture
def ws(tmp_path: Path):
    store = Store(tmp_path / "grader.db")
    yield Workspace(store, tmp_path / "assignments")
    store.close()


def _create(ws: Workspace, title: str = "Homework 9"):
    files = (RETAIL / "template.ipynb", RETAIL / "solution.ipynb",
             ROOT / "rubrics" / "retail-sales.json")
    ups = [Upload(p.name, p.read_bytes()) for p in files]
    made, _ = ws.create(title, *ups)
    return made


def _grade(ws: Workspace, name: str, rubric=None) -> int:
    a = ws.load(name)
    if rubric is not None:
        a = dataclasses.replace(a, rubric=rubric)
    item = GradeInput("student042.ipynb", (RETAIL / "submissions" / "partial.ipynb").read_bytes(),
                      "student042", "student042")
    grade_batch(Grader(a, GradeOptions(execute=False, use_llm=False)), [item], ws.store)
    row = ws.store.find_grade(ws.assignment_id(name), item.sha256, a.rubric.version,
                              "student042")
    assert row is not None
    return row.id


def test_archiving_hides_and_keeps_everything_and_restores(ws: Workspace):
    made = _create(ws)
    _grade(ws, made.name)
    archive(ws, made.name)
    assert made.name not in [e.name for e in ws.entries()]
    assert [e.name for e in ws.entries(archived=True)] == [made.name]
    assert grade_count(ws, made.name) == 1  # the grades stay
    archive(ws, "retail-sales")  # a bundled example can be archived too
    assert "retail-sales" not in [e.name for e in ws.entries()]
    restore(ws, made.name)
    assert made.name in [e.name for e in ws.entries()]
    with pytest.raises(InputError, match="is not archived"):
        restore(ws, made.name)
    with pytest.raises(InputError, match="no such assignment"):
        archive(ws, "nothing-here")


def test_a_broken_archive_list_is_named(ws: Workspace):
    ws.user_dir.mkdir(parents=True)
    (ws.user_dir / ARCHIVE_FILE).write_text('{"not": "a list"}')
    with pytest.raises(InputError) as err:
        ws.entries()
    assert err.value.file.endswith(ARCHIVE_FILE)
    assert "not a JSON list" in str(err.value)


def test_deleting_keeps_the_grades_and_the_name(ws: Workspace):
    made = _create(ws)
    _grade(ws, made.name)
    where = delete(ws, made.name)
    assert (where / "assignment.toml").is_file()  # moved aside, not destroyed
    assert made.name not in [e.name for e in ws.entries() + ws.entries(archived=True)]
    assert grade_count(ws, made.name) == 1  # the grades stay in the store
    again = _create(ws)  # the same title: a new name, so it inherits no old grade
    assert again.name == f"{made.name}-2"
    assert grade_count(ws, again.name) == 0
    with pytest.raises(InputError, match="bundled example"):
        delete(ws, "retail-sales")


def test_the_files_an_assignment_is_made_from_are_named():
    t, s, r = Upload("t.ipynb", b""), Upload("s.ipynb", b""), Upload("r.json", b"")
    assert made_from(t, s, r, [Upload("sales.csv", b"")]) == \
        "template t.ipynb, solution s.ipynb, rubric r.json, data: sales.csv"
    assert made_from(t, None, None) == \
        "the source notebook t.ipynb (template, solution and rubric), no data files"


# -- the import report --------------------------------------------------------------------
def test_the_import_report_is_in_words_with_every_advice_in_full():
    rubric = loads((ROOT / "rubrics" / "retail-sales.json").read_text(), "retail-sales.json")
    report = ImportReport(rubric, (
        ImportRow("part 1", "a.b", True, imported_as="criterion c1 (1 points): output check"),
        ImportRow("penalty: each unexecuted cell = 2 points", "p", False,
                  todo="add a check on df$total * 2 instead " + "and so on " * 20),
        ImportRow("a note", "n", False)))
    rows = worded_rows(report)
    assert [r["status"] for r in rows] == ["imported", "not carried over", "not carried over"]
    assert rows[0]["imported as"] == "criterion c1 (1 point): output check"
    assert not any("✅" in v or "⚠" in v for r in rows for v in r.values())
    lines = advice_lines(report)
    assert len(lines) == 2  # every item not carried over, none cut short
    assert lines[0].startswith("**penalty: each unexecuted cell = 2 points** (not carried over)")
    assert "df\\$total \\* 2" in lines[0]  # no formula, no emphasis in Markdown
    assert lines[0].endswith("and so on ")
    assert "gave no reason" in lines[1]
    assert pluralised("1 points, 11 points, 2.1 points, 1 criteria") == \
        "1 point, 11 points, 2.1 points, 1 criterion"


# -- results in force ---------------------------------------------------------------------
def test_results_show_the_grade_in_force_after_a_rubric_edit(ws: Workspace):
    old = _grade(ws, "retail-sales")
    rubric = ws.load("retail-sales").rubric
    edited = dataclasses.replace(rubric, title=rubric.title + " (edited)")
    ws.save_rubric("retail-sales", edited, "test edit")
    shown = results_in_force(ws.store, [old])
    assert [gid for gid, _ in shown.graded] == [old]  # no grade under the new rubric yet
    assert (shown.version, shown.newer, shown.older) == (edited.version, 0, 1)
    assert shown.rows()[0]["rubric"].startswith("version 1 (")  # counted, dated: no hash
    assert "have no grade under rubric" in shown.note()
    new = _grade(ws, "retail-sales", edited)  # regraded after the edit
    shown = results_in_force(ws.store, [old])
    assert [gid for gid, _ in shown.graded] == [new]
    assert shown.rows()[0]["rubric"].startswith("version 2 (")
    assert list(shown.rows()[0])[:7] == ["grade", "student", "file", "score", "max", "%",
                                         "rubric"]
    assert (shown.newer, shown.older) == (1, 0)
    assert "graded again since this batch" in shown.note()
    assert results_in_force(ws.store, []).graded == []
    assert json.loads(json.dumps(shown.rows(), default=str))  # plain values for a table
