"""An assignment's own packages (issue 20): declared in assignment.toml (or a
requirements.txt beside an imported notebook or among the uploads), named by the
self-check while missing, installed once outside the sandbox into a venv layered on ours
(an R library of its own), and used by every sandboxed run of the assignment.

Packages come from folders the tests build: a wheel written by hand (pip installs it
with ``--no-index --find-links``) and a CRAN-like repository of a tiny R source package
(``R CMD build`` + ``tools::write_PACKAGES``), so no test needs the network.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from grader.assignment import load_assignment
from grader.errors import InputError, RubricError
from grader.packages import Packages, install, run_env, status
from grader.packages.files import declare, r_names
from grader.sandbox.execution import execute_notebook, kernel_available, sandbox_available
from grader.service.selfcheck import check_assignment
from tests.test_selfcheck import PY, R, write_assignment

ROOT = Path(__file__).resolve().parents[1]
sandboxed = pytest.mark.skipif(not sandbox_available() or not kernel_available("python"),
                               reason="bubblewrap or the Python kernel is missing")


def tiny_wheel(folder: Path, name: str = "gradertiny", version: str = "1.0") -> Path:
    """A pure-Python wheel of one module (``ANSWER = 42``), written by hand."""
    folder.mkdir(parents=True, exist_ok=True)
    dist = f"{name}-{version}.dist-info"
    files = {f"{name}/__init__.py": "ANSWER = 42\n",
             f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\n"
                              "Tag: py3-none-any\n"}
    files[f"{dist}/RECORD"] = "".join(f"{p},,\n" for p in files) + f"{dist}/RECORD,,\n"
    path = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for member, text in files.items():
            z.writestr(member, text)
    return path


@pytest.fixture
def envs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GRADER_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data" / "envs"


def local(wheels: Path, *names: str) -> tuple[str, ...]:
    return ("--no-index", f"--find-links {wheels}", *names)


# -- declaring ----------------------------------------------------------------------------
X = [{"id": "x", "title": "x", "kind": "code", "points": 1,
      "checks": [{"type": "assigns", "names": ["x"], "weight": 1}]}]


def declared_in(tmp_path: Path, table: str, files: dict[str, str] | None = None):
    folder = write_assignment(tmp_path / "a", "python", [new_code_cell("x = ...")],
                              [new_code_cell("x = 1")], X)
    for name, text in (files or {}).items():
        (folder / name).write_text(text, encoding="utf-8")
    with (folder / "assignment.toml").open("a", encoding="utf-8") as f:
        f.write(table)
    return folder


def test_a_requirements_file_and_an_r_list_are_read(tmp_path):
    folder = declared_in(tmp_path, '[packages]\npython = "requirements.txt"\nr = ["janitor"]\n',
                         {"requirements.txt": "# for the plots\nseaborn>=0.13  # styles\n"
                                              "tqdm\n--find-links ./wheels\n"})
    got = load_assignment(folder).packages
    assert got.python == ("seaborn>=0.13", "tqdm", "--find-links ./wheels")
    assert got.r == ("janitor",)
    assert got.source == "requirements.txt, assignment.toml"
    assert got.describe() == "seaborn>=0.13, tqdm; R: janitor"


def test_bad_declarations_are_refused_each_naming_its_line(tmp_path):
    folder = declared_in(tmp_path, '[packages]\npython = "requirements.txt"\n'
                                   'r = ["janitor", "not a name"]\nconda = ["x"]\n',
                         {"requirements.txt": "tqdm\n-e .\n-r more.txt\nnot a req!!\n"})
    with pytest.raises(RubricError) as err:
        load_assignment(folder)
    problems = err.value.problems
    assert err.value.file.endswith("assignment.toml")
    assert any("requirements.txt, line 2: '-e' is not allowed" in p for p in problems)
    assert any("requirements.txt, line 3: '-r' is not allowed" in p for p in problems)
    assert any("requirements.txt, line 4: 'not a req!!' is not a package requirement" in p
               for p in problems)
    assert any("item 2: 'not a name' is not an R package name" in p for p in problems)
    assert any("unknown key 'conda'" in p for p in problems)


def test_a_list_file_outside_the_folder_is_refused(tmp_path):
    (tmp_path / "elsewhere.txt").write_text("tqdm\n", encoding="utf-8")
    folder = declared_in(tmp_path, '[packages]\npython = "../elsewhere.txt"\n')
    with pytest.raises(RubricError, match="leads outside the assignment folder"):
        load_assignment(folder)


def test_r_scripts_give_the_packages_they_install_or_load():
    script = ('install.packages(c("dplyr", "ggplot2"), repos = "https://x")  # "nope"\n'
              'library(tidyr)\nrequire("janitor")\n'
              "suppressPackageStartupMessages(library(lubridate))\n"
              "pacman::p_load(skimr, readr)\n")
    assert r_names(script) == ["dplyr", "ggplot2", "tidyr", "janitor", "lubridate", "skimr",
                               "readr"]


def test_package_files_are_declared_never_data(tmp_path):
    table = declare(tmp_path, {"requirements.txt": b"tqdm\n",
                               "requirements.R": b'install.packages("janitor")\n'})
    assert table == '[packages]\npython = "requirements.txt"\nr = "r-packages.txt"\n'
    assert (tmp_path / "r-packages.txt").read_text() == "janitor\n"
    assert declare(tmp_path / "none", {}) == ""


# -- what is missing, and installing it ---------------------------------------------------
def test_what_the_grader_has_is_never_missing(envs):
    numpy_here = Packages(("numpy", "nbformat>=5"), (), "requirements.txt")
    assert status(numpy_here).ready
    assert run_env(numpy_here) is None
    newer = Packages(("numpy>=999",), (), "requirements.txt")
    assert status(newer).missing_python[0].startswith("numpy>=999 (the grader has ")


def test_a_failed_install_names_the_list_and_leaves_nothing(envs, tmp_path):
    absent = Packages(local(tmp_path / "empty", "gradernowhere==1.0"), (), "requirements.txt")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError) as err:
        install(absent)
    assert err.value.file == "requirements.txt"
    assert "gradernowhere" in err.value.reason
    assert not [p for p in envs.iterdir() if not p.name.endswith(".lock")]
    assert not status(absent).ready


@sandboxed
def test_installed_once_and_used_by_the_sandbox(envs, tmp_path):
    wheels = tmp_path / "wheels"
    tiny_wheel(wheels)
    declared = Packages(local(wheels, "gradertiny==1.0", "numpy"), (), "requirements.txt")
    before = status(declared)
    assert before.missing_python == ("gradertiny==1.0",)
    assert "requirements.txt" in before.text()
    assert "gradertiny" in before.text()
    said: list[str] = []
    assert install(declared, said.append).ready
    assert any("Successfully installed gradertiny-1.0" in line for line in said)
    env = run_env(declared)
    assert env is not None
    assert env.python is not None
    assert env.python.parent.parent.parent == envs
    again: list[str] = []
    install(declared, again.append)
    assert again == ["Every declared package is installed."]
    nb = new_notebook(metadata={"kernelspec": PY}, cells=[new_code_cell(
        "import gradertiny, numpy, sys\nprint(gradertiny.ANSWER, sys.prefix == sys.base_prefix)")])
    with_env = execute_notebook(nb, "python", [], [], env=env)
    assert [o.text for o in with_env.cells[0].outputs] == ["42 False\n"]
    without = execute_notebook(nb, "python", [], [])
    assert "No module named 'gradertiny'" in without.cells[0].error


@sandboxed
def test_the_self_check_names_missing_packages_then_passes(envs, tmp_path):
    wheels = tmp_path / "wheels"
    tiny_wheel(wheels)
    folder = write_assignment(
        tmp_path / "a", "python",
        [new_markdown_cell("# Tiny"), new_code_cell("import gradertiny\nanswer = ...")],
        [new_markdown_cell("# Tiny"), new_code_cell("import gradertiny\nanswer = "
                                                    "gradertiny.ANSWER")],
        [{"id": "answer", "title": "The answer", "kind": "code", "points": 2, "checks": [
            {"type": "value", "expression": "answer", "expected": 42, "weight": 1.0}]}])
    (folder / "requirements.txt").write_text("\n".join(local(wheels, "gradertiny")) + "\n")
    with (folder / "assignment.toml").open("a", encoding="utf-8") as f:
        f.write('[packages]\npython = "requirements.txt"\n')
    assignment = load_assignment(folder)
    first = check_assignment(assignment)
    missing = [p for p in first.problems if p.kind == "missing_package"]
    assert missing[0].name == "gradertiny"
    assert "not installed here" in missing[0].text
    assert not first.sound
    cli = [sys.executable, "-m", "grader", "packages", str(folder)]
    env = {"GRADER_DATA_DIR": str(envs.parent), "PATH": "/usr/bin:/bin"}
    listed = subprocess.run(cli, capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert listed.returncode == 1
    assert "gradertiny" in listed.stdout
    done = subprocess.run([*cli, "--install"], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "Every declared package is installed" in done.stdout
    second = check_assignment(load_assignment(folder))
    assert second.sound, second.lines()
    assert second.solution_percent == 100.0, second.lines()


def test_an_imported_notebooks_requirements_become_its_packages(tmp_path):
    from grader.service.imports import import_nbgrader_folder
    src = tmp_path / "source"
    src.mkdir()
    shutil.copy(ROOT / "tests/fixtures/nbgrader_ps1/problem1.ipynb", src / "problem1.ipynb")
    (src / "requirements.txt").write_text("tqdm>=4\n", encoding="utf-8")
    (src / "numbers.csv").write_text("n\n1\n", encoding="utf-8")
    report = import_nbgrader_folder(src / "problem1.ipynb", tmp_path / "out")
    assignment = load_assignment(tmp_path / "out")
    assert assignment.packages.python == ("tqdm>=4",)
    assert [p.name for p in assignment.data] == ["numbers.csv"]
    row = report.rows[-1]
    assert row.carried
    assert "requirements.txt" in row.item
    assert "--install" in row.todo


def test_an_uploaded_requirements_file_is_declared(tmp_path, ws):
    from grader.service.workspace import Upload
    folder = write_assignment(tmp_path / "src", "python", [new_code_cell("x = ...")],
                              [new_code_cell("x = 1")], X)
    up = {n: Upload(n, (folder / n).read_bytes())
          for n in ("template.ipynb", "solution.ipynb", "rubric.json")}
    made, _ = ws.create("With packages", up["template.ipynb"], up["solution.ipynb"],
                        up["rubric.json"], [Upload("requirements.txt", b"tqdm\n"),
                                            Upload("given.csv", b"a\n1\n")])
    assert made.packages.python == ("tqdm",)
    assert [p.name for p in made.data_files()] == ["given.csv"]
    with pytest.raises(RubricError) as err:
        ws.create("Bad packages", up["template.ipynb"], up["solution.ipynb"],
                  up["rubric.json"], [Upload("requirements.txt", b"-e .\n")])
    assert err.value.file == "Bad packages"
    assert any("'-e' is not allowed" in p for p in err.value.problems)


# -- R --------------------------------------------------------------------------------------
@pytest.mark.r
@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("R") or not kernel_available("r") or not
                    sandbox_available(), reason="R, its kernel or bubblewrap is missing")
def test_an_r_library_of_its_own(envs, tmp_path, monkeypatch):
    pkg = tmp_path / "src" / "gradertinyr"
    (pkg / "R").mkdir(parents=True)
    (pkg / "DESCRIPTION").write_text(
        "Package: gradertinyr\nVersion: 1.0\nTitle: Tiny\nDescription: A tiny package.\n"
        "License: MIT\nAuthor: Tests\nMaintainer: Tests <tests@example.org>\n")
    (pkg / "NAMESPACE").write_text("export(answer)\n")
    (pkg / "R" / "a.R").write_text("answer <- function() 42\n")
    contrib = tmp_path / "repo" / "src" / "contrib"
    contrib.mkdir(parents=True)
    subprocess.run(["R", "CMD", "build", "--no-build-vignettes", "--no-manual", str(pkg)],
                   cwd=contrib, check=True, capture_output=True, timeout=300)
    subprocess.run(["Rscript", "-e", f'tools::write_PACKAGES("{contrib}", type = "source")'],
                   check=True, capture_output=True, timeout=300)
    monkeypatch.setenv("GRADER_R_REPOS", f"file://{tmp_path / 'repo'}")
    declared = Packages((), ("gradertinyr", "stats"), "r-packages.txt")
    assert status(declared).missing_r == ("gradertinyr",)  # stats comes with R
    assert install(declared).ready
    env = run_env(declared)
    assert env is not None
    assert env.r_library is not None
    assert env.python is None
    nb = new_notebook(metadata={"kernelspec": R}, cells=[
        new_code_cell("library(gradertinyr)\nprint(answer())")])
    assert [o.text for o in execute_notebook(nb, "r", [], [], env=env).cells[0].outputs] == \
        ["[1] 42\n"]
    assert "no package called" in execute_notebook(nb, "r", [], []).cells[0].error


def test_the_cli_says_when_nothing_is_declared(tmp_path):
    folder = declared_in(tmp_path, "")
    out = subprocess.run([sys.executable, "-m", "grader", "packages", str(folder)],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0
    assert "declares no packages" in out.stdout
    assert json.loads(json.dumps(out.stdout))  # plain text, printable


def test_an_otter_config_names_its_requirements_file(tmp_path):
    from nbformat.v4 import new_raw_cell

    from grader.service.imports import _otter_requirements
    (tmp_path / "env").mkdir()
    (tmp_path / "env" / "needs.txt").write_text("tqdm\n", encoding="utf-8")
    nb = new_notebook(cells=[new_raw_cell("# ASSIGNMENT CONFIG\nrequirements: env/needs.txt\n")])
    assert _otter_requirements(nb, tmp_path / "master.ipynb") == tmp_path / "env" / "needs.txt"
    nb.cells[0].source = "# ASSIGNMENT CONFIG\nrequirements: ../outside.txt\n"
    with pytest.raises(InputError, match=r"'\.\./outside\.txt', which is not in its folder"):
        _otter_requirements(nb, tmp_path / "master.ipynb")
    nb.cells[0].source = "# ASSIGNMENT CONFIG\nexport_cell: false\n"
    assert _otter_requirements(nb, tmp_path / "master.ipynb") is None
