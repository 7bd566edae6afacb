"""Assignment data never leads out of its folder (issue 24, item 2).

A ``data/`` entry linking to ``/etc/shadow`` was copied into a run and its first line
reached the student's letter. Here a real link to a secret file outside the folder is
refused when the assignment is loaded, checked (``python -m grader check``), imported,
graded (``python -m grader grade``) and, as the last line, when a run copies its data;
the secret never appears in any output. A link that stays inside the folder works.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from grader.assignment import load_assignment
from grader.errors import RubricError
from grader.sandbox.execution import ExecLimits, execute_notebook, sandbox_available
from grader.service.imports import import_nbgrader_folder

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "py-functions"
SECRET = "root:$6$SECRET-HASH-4711:19000:0:99999:7:::"
needs_sandbox = pytest.mark.skipif(not sandbox_available(), reason="bubblewrap cannot run here")


def assignment(tmp_path: Path) -> Path:
    """A copy of the bundled py-functions assignment, its rubric inside the folder."""
    folder = tmp_path / "hw"
    folder.mkdir()
    for name in ("template.ipynb", "solution.ipynb"):
        shutil.copy(EXAMPLE / name, folder / name)
    shutil.copytree(EXAMPLE / "data", folder / "data")
    shutil.copy(ROOT / "rubrics" / "py-functions.json", folder / "rubric.json")
    (folder / "assignment.toml").write_text(
        'title = "hw"\nrubric = "rubric.json"\ntemplate = "template.ipynb"\n'
        'solution = "solution.ipynb"\ndata = ["data"]\n', encoding="utf-8")
    return folder


@pytest.fixture
def shadow(tmp_path: Path) -> Path:
    """A file outside every assignment, standing for the host's /etc/shadow."""
    path = tmp_path / "host" / "shadow"
    path.parent.mkdir()
    path.write_text(SECRET + "\n", encoding="utf-8")
    return path


def leaky(tmp_path: Path, shadow: Path) -> Path:
    folder = assignment(tmp_path)
    (folder / "data" / "regions.csv").symlink_to(shadow)
    return folder


def grader_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, check=False)


def test_loading_refuses_a_link_out_of_the_folder_naming_it_and_its_target(tmp_path, shadow):
    folder = leaky(tmp_path, shadow)
    with pytest.raises(RubricError) as caught:
        load_assignment(folder)
    text = str(caught.value)
    assert "data/regions.csv" in text
    assert str(shadow) in text
    assert "outside" in text
    assert SECRET not in text


def test_a_dangling_link_a_fifo_and_a_data_entry_that_is_itself_a_link_are_refused(
        tmp_path, shadow):
    folder = assignment(tmp_path)
    (folder / "data" / "gone.csv").symlink_to("missing.csv")  # inside, but nothing there
    os.mkfifo(folder / "data" / "pipe.csv")
    (folder / "hostdata").symlink_to(shadow.parent)
    (folder / "assignment.toml").write_text(
        (folder / "assignment.toml").read_text().replace('data = ["data"]',
                                                         'data = ["data", "hostdata"]'))
    with pytest.raises(RubricError) as caught:
        load_assignment(folder)
    problems = caught.value.problems
    assert any("data/gone.csv" in p and "does not exist" in p for p in problems)
    assert any("data/pipe.csv" in p and "not a file or a folder" in p for p in problems)
    assert any("hostdata" in p and "outside the assignment folder" in p for p in problems)


def test_a_link_inside_the_folder_is_kept_under_its_own_name(tmp_path):
    folder = assignment(tmp_path)
    (folder / "raw").mkdir()
    (folder / "raw" / "stations-2026.csv").write_text("station\nMarket\n")
    (folder / "data" / "stations.csv").symlink_to(Path("..", "raw", "stations-2026.csv"))
    (folder / "data" / "more").symlink_to(folder / "raw")  # a folder inside, linked
    files = load_assignment(folder).data_files()
    assert folder / "data" / "stations.csv" in files
    assert (folder / "raw" / "stations-2026.csv") in files  # through data/more
    assert all(f.resolve().is_relative_to(folder) for f in files)


def test_a_link_made_after_loading_is_refused_when_the_files_are_listed(tmp_path, shadow):
    folder = assignment(tmp_path)
    loaded = load_assignment(folder)
    (folder / "data" / "regions.csv").symlink_to(shadow)
    with pytest.raises(RubricError, match=r"regions\.csv"):
        loaded.data_files()


def test_check_refuses_naming_the_file_and_never_shows_the_secret(tmp_path, shadow):
    folder = leaky(tmp_path, shadow)
    done = grader_cli("check", str(folder), "--no-exec")
    assert done.returncode == 2, done.stderr
    assert "data/regions.csv" in done.stderr
    assert str(shadow) in done.stderr
    assert SECRET not in done.stdout + done.stderr


def test_importing_an_assignment_with_a_link_beside_its_source_refuses(tmp_path, shadow):
    source = tmp_path / "course"
    source.mkdir()
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1", metadata={"nbgrader": {
        "grade": True, "grade_id": "q1", "points": 1, "solution": True, "locked": False}})]
    nbformat.write(nb, source / "source.ipynb")
    (source / "regions.csv").symlink_to(shadow)
    with pytest.raises(RubricError) as caught:
        import_nbgrader_folder(source / "source.ipynb", tmp_path / "out")
    assert "regions.csv" in str(caught.value)
    assert str(shadow) in str(caught.value)
    assert not (tmp_path / "out" / "regions.csv").exists()


@pytest.mark.slow
def test_grading_refuses_with_a_clear_error_and_the_secret_never_appears(tmp_path, shadow):
    folder = leaky(tmp_path, shadow)
    done = grader_cli("grade", str(folder), str(EXAMPLE / "submissions" / "complete.ipynb"),
                      "--no-llm", "--json", "--out", str(tmp_path / "out"))
    assert done.returncode == 2, done.stderr
    assert "data/regions.csv" in done.stderr
    assert "outside the assignment folder" in done.stderr
    written = "".join(p.read_text(errors="replace") for p in (tmp_path / "out").rglob("*")
                      if p.is_file())
    assert SECRET not in done.stdout + done.stderr + written


STEAL = ("import glob\n"
         "for p in sorted(glob.glob('**/*.csv', recursive=True)):\n"
         "    print(p, open(p).read())\n")


@pytest.mark.slow
@needs_sandbox
def test_a_run_never_copies_a_link_out_of_its_assignment_folder(tmp_path, shadow):
    """The last line: a link made after loading (or data given without loading) stops
    the run with an error naming the file; the student's code never runs on it."""
    folder = assignment(tmp_path)
    (folder / "data" / "regions.csv").symlink_to(shadow)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(STEAL)]
    result = execute_notebook(nb, "python", sorted((folder / "data").iterdir()), [],
                              ExecLimits(cell_timeout_s=60, total_timeout_s=120))
    assert "regions.csv" in result.error
    assert "outside its assignment folder" in result.error
    shown = json.dumps([[o.text for o in c.outputs] for c in result.cells]) + result.error
    assert SECRET not in shown + "".join(result.notes)
    assert result.cells == []  # the student's code never ran


@pytest.mark.slow
@needs_sandbox
def test_a_link_inside_the_assignment_folder_reaches_the_run(tmp_path):
    folder = assignment(tmp_path)
    (folder / "raw").mkdir()
    (folder / "raw" / "stations-2026.csv").write_text("station\nMarket-inside\n")
    (folder / "data" / "stations.csv").symlink_to(Path("..", "raw", "stations-2026.csv"))
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("print(open('data/stations.csv').read())")]
    result = execute_notebook(nb, "python", load_assignment(folder).data_files(), [],
                              ExecLimits(cell_timeout_s=60, total_timeout_s=120))
    assert not result.error, result.error
    assert "Market-inside" in "".join(o.text for o in result.cells[0].outputs)
