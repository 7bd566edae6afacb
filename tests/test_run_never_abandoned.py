"""A run is never abandoned by a name, and a run we could not make lets nothing stand.

Written as a student would attack it, from outside: names in the notebook's text
(comments included) that the file system cannot take or make, beside honest names
that must still map; stored outputs the code never gives, beside a run-stopping name.
- ``Layout.prepare`` (the real file system, no mocks): hostile names of every kind
  (too long, too many components, NUL, characters no file name holds, a path through a
  file, a link loop, many folders) never raise; each unmappable one is noted, and the
  honest names beside them still reach the data; a fuzz of names says the same.
- Real sandboxed runs: a comment naming a 300-character ``os.chdir`` target runs
  like its twin; the same call really made fails in the student's cell, not the run.
- Real grading of the bundled assignments (``tests.hostile.forging_runs``): every
  attack scores at most its twin, the comment changes nothing, stored outputs the
  code never gives earn nothing and are held for review (``stale_outputs``).
- A run we could not make (the assignment's data gone mid-batch: a setup failure,
  never the student's): flagged ``not_executed``, every check that needs the run held
  for review with nothing earned from the stored outputs; an instructor who turned
  execution off still grades from them.
"""

from __future__ import annotations

import json
import shutil
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader.assignment import load_assignment
from grader.layers.base import GradeOptions
from grader.pipeline import GradeInput, Grader
from grader.sandbox.execution import (
    ExecLimits,
    execute_notebook,
    kernel_available,
    sandbox_available,
)
from grader.sandbox.layout import Layout, unusable
from grader.sandbox.view import View
from grader.types import GradeReport
from tests.hostile import forging, forging_runs
from tests.hostile.forging_runs import LONG

needs_run = pytest.mark.skipif(not sandbox_available() or not kernel_available("python"),
                               reason="bubblewrap or the Python kernel is missing")
needs_r = pytest.mark.skipif(not sandbox_available() or not kernel_available("r"),
                             reason="bubblewrap or the R kernel is missing")


@pytest.fixture
def data(tmp_path: Path) -> Path:
    folder = tmp_path / "assignment" / "data"
    folder.mkdir(parents=True)
    (folder / "rentals.csv").write_text("station,duration\nHarbor,1h 05m\n")
    return folder


def prepared(work: Path, data: Path, code: str) -> Layout:
    nb = {"cells": [{"cell_type": "code", "source": code}]}
    return Layout.prepare(work, nb, [data], True, View(()))


# --- the layout: every name the text can hold ------------------------------------------

HOSTILE = {
    "a 300-character chdir target in a comment": f'# os.chdir("{LONG}")',
    "a 300-character setwd target": f'setwd("{LONG}")',
    "a 300-character folder before the data's name": f'pd.read_csv("{LONG}/rentals.csv")',
    "an absolute path with a 300-character top folder": f'read_csv("/{LONG}/x/rentals.csv")',
    "a path of 2,100 folders": 'pd.read_csv("' + "a/" * 2100 + 'rentals.csv")',
    "a NUL in a chdir target": 'os.chdir("x\x00y")',
    "a NUL in an absolute data path": 'read_csv("/workspaces/x\x00/rentals.csv")',
    "a lone surrogate in a folder name": 'os.chdir("\ud800dir")',
    "a path through a file": 'pd.read_csv("rentals.csv/inner/rentals.csv")',
    "a path through a link loop": 'pd.read_csv("loop/rentals.csv")',
    "a %cd magic to a 300-character folder": f"%cd {LONG}",
    "a home path with a 300-character name": f'read_csv("~/{LONG}/rentals.csv")',
}


@pytest.mark.parametrize("what", HOSTILE)
def test_a_hostile_name_is_noted_and_the_honest_ones_still_map(what: str, tmp_path: Path,
                                                               data: Path) -> None:
    work = tmp_path / "work"
    (work / "a" / "b" / "nb").mkdir(parents=True)
    (work / "a" / "b" / "nb" / "loop").symlink_to("loop")  # a loop where a name leads
    honest = 'pd.read_csv("data/rentals.csv")\nos.chdir("analysis")\n'
    layout = prepared(work, data, HOSTILE[what] + "\n" + honest)
    assert (layout.cwd / "data" / "rentals.csv").read_text().startswith("station")
    assert (layout.cwd / "analysis" / "rentals.csv").is_file()  # the honest chdir
    assert any("not mapped" in n or "could not" in n for n in layout.notes), layout.notes
    assert all(len(n) < 400 for n in layout.notes), layout.notes  # long names cut
    for top in layout.tops:
        assert (work / "mnt" / top).is_dir()  # bubblewrap binds each: it must exist


def test_the_honest_twin_of_each_name_maps_silently(tmp_path: Path, data: Path) -> None:
    layout = prepared(tmp_path / "work", data, '# os.chdir("aaaa")\n'
                      'read_csv("/workspaces/repo/data/rentals.csv")\n')
    assert (tmp_path / "work" / "mnt" / "workspaces" / "repo" / "data" / "rentals.csv").is_file()
    assert layout.tops == {"workspaces"}
    assert not [n for n in layout.notes if "not mapped" in n or "could not" in n]


def test_unusable_names_are_said_in_words() -> None:
    assert "300 bytes" in unusable("x/" + "a" * 300)
    assert "NUL" in unusable("a\x00b")
    assert "characters" in unusable("\ud800")
    assert "4200 bytes" in unusable("a/" * 2100)
    assert unusable("/workspaces/repo/data/rentals.csv") == ""
    assert unusable("é" * 127) == ""
    assert "bytes" in unusable("é" * 128)


PIECES = st.sampled_from(["a", "é", ".", "..", "/", "~", "\x00", "\ud800", "\udc80", " ",
                          "\\", "rentals.csv", "data", "a" * 255, "a" * 256, "é" * 128,
                          "/workspaces", "/tmp", "/etc", "/proc", "loop"])
NAME = st.lists(PIECES, max_size=14).map("".join) | st.text(
    string.ascii_letters + "/.~", max_size=300)


@settings(max_examples=60, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.lists(NAME, min_size=1, max_size=4),
       forms=st.lists(st.sampled_from(['os.chdir("{}")', 'setwd("{}")', '# read_csv("{}")',
                                       'pd.read_csv("{}/rentals.csv")', "%cd {}"]),
                      min_size=1, max_size=4))
def test_any_name_never_stops_the_layout(tmp_path_factory: pytest.TempPathFactory,
                                         data: Path, names: list[str],
                                         forms: list[str]) -> None:
    work = tmp_path_factory.mktemp("fuzz")
    (work / "a" / "b" / "nb").mkdir(parents=True)
    (work / "a" / "b" / "nb" / "loop").symlink_to("loop")
    code = "\n".join(f.format(n.replace('"', "").replace("\n", ""))
                     for f in forms for n in names) + '\npd.read_csv("data/rentals.csv")'
    layout = prepared(work, data, code)
    assert (layout.cwd / "data" / "rentals.csv").is_file()
    assert (work / "notebook.ipynb").is_file()
    for top in layout.tops:
        assert (work / "mnt" / top).is_dir(), top
    assert all(isinstance(n, str) and len(n) < 400 for n in layout.notes)


# --- real runs -------------------------------------------------------------------------------

def _run(tmp_path: Path, data: Path, *cells: str):
    import nbformat
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    return execute_notebook(nb, "python", [data], [], ExecLimits(cell_timeout_s=30,
                                                                  total_timeout_s=90),
                            workdir=tmp_path / "run")


@pytest.mark.slow
@needs_run
def test_a_comment_naming_a_long_folder_runs_like_its_twin(tmp_path: Path, data: Path) -> None:
    read = "import pandas as pd\nprint(len(pd.read_csv('data/rentals.csv')))"
    attack = _run(tmp_path / "attack", data, f'# os.chdir("{LONG}")\n' + read)
    twin = _run(tmp_path / "twin", data, read)
    for run in (attack, twin):
        assert run.error == "", run.error
        assert [c.ok for c in run.cells] == [True]
        assert "1" in "".join(o.text for o in run.cells[0].outputs)
    assert any("not mapped" in n for n in attack.notes), attack.notes


@pytest.mark.slow
@needs_run
def test_a_long_chdir_really_made_fails_in_the_students_cell_not_the_run(
        tmp_path: Path, data: Path) -> None:
    run = _run(tmp_path, data, f'import os\nos.chdir("{LONG}")', "print('after')")
    assert run.error == ""
    assert not run.cells[0].ok
    assert "too long" in run.cells[0].error.lower()
    assert run.cells[1].ok


@pytest.mark.slow
@needs_run
def test_a_flood_of_named_folders_in_comments_still_runs(tmp_path: Path, data: Path) -> None:
    flood = "\n".join(f'# read_csv("/top{n}{"x" * 200}/d/rentals.csv"); os.chdir("d{n}")'
                      for n in range(3000))
    run = _run(tmp_path, data, flood + "\nimport pandas as pd\n"
               "print(len(pd.read_csv('data/rentals.csv')))")
    assert run.error == "", run.error
    assert [c.ok for c in run.cells] == [True]


# --- real grading: the hostile corpus's attacks beside their twins ---------------------------

def _graded(language: str) -> list[tuple[forging.Variant, GradeReport, GradeReport]]:
    variants = forging_runs.variants(language)
    grader = Grader(load_assignment(variants[0].assignment), GradeOptions(execute=True))
    items = []
    for n, v in enumerate(variants):
        items += [GradeInput(f"attack-{n}.ipynb", json.dumps(v.attack).encode()),
                  GradeInput(f"twin-{n}.ipynb", json.dumps(v.twin).encode())]
    reports = {r.file: r for r in grader.grade_many(items, workers=2)}
    return [(v, reports[f"attack-{n}.ipynb"], reports[f"twin-{n}.ipynb"])
            for n, v in enumerate(variants)]


def _judge(graded: list[tuple[forging.Variant, GradeReport, GradeReport]]) -> None:
    for v, attack, twin in graded:
        assert attack.status == twin.status == "graded", (v.what, attack.error, twin.error)
        assert attack.score is not None
        assert twin.score is not None
        assert attack.score <= twin.score, (v.what, attack.score, twin.score)
        assert twin.score < twin.max_score, v.what  # the attack had points to take
        flags = {f.code for f in attack.flags}
        assert "not_executed" not in flags | {f.code for f in twin.flags}, v.what
        if v.flag:
            assert v.flag in flags, (v.what, flags)
        if "comment" in v.what:  # an honest comment's twin: nothing moves
            assert attack.score == twin.score, v.what
            assert attack.needs_review == twin.needs_review, v.what
        if v.flag == "stale_outputs":
            held = [c for crit in attack.criteria for c in crit.checks
                    if c.check in ("printed", "plot") and c.message.startswith("held")]
            assert held, v.what
            assert all(c.score == 0 and c.status == "skipped" for c in held), v.what
            assert {c.criterion_id for c in held} <= set(attack.needs_review), v.what


@pytest.mark.slow
@needs_run
def test_python_attacks_on_our_run_never_beat_their_twins() -> None:
    _judge(_graded("python"))


@pytest.mark.slow
@pytest.mark.r
@needs_r
def test_r_attacks_on_our_run_never_beat_their_twins() -> None:
    _judge(_graded("r"))


# --- a run we could not make -----------------------------------------------------------------

def _without_data(tmp_path: Path) -> Path:
    """A copy of py-functions, to have its data folder removed once it is loaded (as a
    batch would meet a disk cleaned under it): the runs cannot be set up."""
    source = forging.ASSIGNMENTS["python"]
    target = tmp_path / "py-functions"
    shutil.copytree(source, target, symlinks=True)
    toml = target / "assignment.toml"
    rubric = (source / "../../rubrics/py-functions.json").resolve()
    toml.write_text(toml.read_text(encoding="utf-8").replace(
        '"../../rubrics/py-functions.json"', json.dumps(str(rubric))), encoding="utf-8")
    return target


@pytest.mark.slow
@needs_run
def test_a_run_we_could_not_make_is_flagged_and_stored_outputs_earn_nothing(
        tmp_path: Path) -> None:
    folder = _without_data(tmp_path)
    assignment = load_assignment(folder)
    shutil.rmtree(folder / "data")
    forged = next(v for v in forging_runs.variants("python") if "never prints" in v.what)
    item = GradeInput("forged.ipynb", json.dumps(forged.attack).encode())
    report = Grader(assignment, GradeOptions(execute=True)).grade(item)
    flag = next(f for f in report.flags if f.code == "not_executed")
    assert "data not found" in flag.message
    from_outputs = [c for crit in report.criteria for c in crit.checks
                    if c.check in ("printed", "plot", "runs")]
    assert from_outputs
    assert all(c.score == 0 and c.status == "skipped" for c in from_outputs)
    printed = next(c for c in from_outputs if c.check == "printed")
    assert "could not be verified" in printed.message
    assert "would give 1" in printed.message  # the reviewer sees what the outputs claim
    assert "daily-plot" in report.needs_review
    # the instructor's choice: no execution, the stored outputs are read as they are
    off = Grader(assignment, GradeOptions(execute=False)).grade(item)
    assert "not_executed" not in {f.code for f in off.flags}
    assert any(c.check == "printed" and c.score == 1 for crit in off.criteria
               for c in crit.checks)


def test_a_flood_of_names_is_capped_not_a_command_line_too_long(tmp_path: Path,
                                                                data: Path) -> None:
    code = "\n".join(f'read_csv("/top{n}{"x" * 200}/d/rentals.csv")\nsetwd("dir{n}")'
                     for n in range(3000))
    layout = prepared(tmp_path / "work", data, code + '\nread_csv("/workspaces/rentals.csv")')
    assert len(layout.tops) <= 20
    assert sum(1 for d in (layout.cwd).iterdir() if d.name.startswith("dir")) <= 20
    assert "paths under top-level folders past the first 20 named are not mapped" in layout.notes
    assert "working directories (setwd/chdir) past the first 20 named are not mapped" in \
        layout.notes
    assert len(layout.notes) <= 51  # a flood of names is not a flood of notes
