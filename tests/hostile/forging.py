"""Forged verdicts: notebooks that try to write their own test results and values.

Graded against the bundled assignments that have tests and value checks
(``py-functions``: visible and hidden tests, value checks; ``r-sleep-survey``: a value
check on ``nrow(survey_clean)``), each attack beside its honest twin: the same notebook
without the forgery. Every attack must score at most its twin, and be flagged
``check_tampering`` where it reaches for the checks' paths (a notebook that only prints
a forged result line reaches for nothing: it must simply earn nothing by it).

``link_assignment`` makes a copy of an assignment whose data holds a link to a secret
file outside it: grading must refuse it, naming the file, and never show the secret.
"""

from __future__ import annotations

import copy
import importlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ASSIGNMENTS = {"python": EXAMPLES / "py-functions", "r": EXAMPLES / "r-sleep-survey"}
FLAG = "check_tampering"

_ALWAYS = ("class Anything:\n    def __eq__(self, other):\n        return True\n"
           "    def __ne__(self, other):\n        return False\n    __hash__ = object.__hash__\n")

# what: (the cell to add, {cell id: new source} for the attack and its twin, flagged?)
PYTHON: dict[str, tuple[dict[str, str], dict[str, str], bool]] = {
    "json.dumps rewrites failed into passed": (
        {"q3-code": "import json\n_dumps = json.dumps\n"
                    "json.dumps = lambda o, *a, **k: _dumps(o, *a, **k).replace("
                    "'\"failed\"', '\"passed\"')\n"}, {"q3-code": "import json\n"}, True),
    # (replacing isinstance or len breaks IPython itself: every check then waits out its
    # time limit, which proves nothing more and costs minutes)
    "built-ins replaced so that asserts pass": (
        {"q3-code": "import builtins\nbuiltins.abs = lambda x: 0\n"
                    "builtins.round = lambda x, n=None: x\n"
                    "builtins.sorted = lambda x, **k: list(x)\n"},
        {"q3-code": "import builtins\n"}, True),
    "functions that return an always-equal object": (
        {"q1-code": _ALWAYS + "def parse_duration(text):\n    return Anything()\n",
         "q2-code": "def moving_average(values, k):\n    return Anything()\n"},
        {"q1-code": "def parse_duration(text):\n    return 0\n",
         "q2-code": "def moving_average(values, k):\n    return 0\n"}, True),
    "a printed result line that claims every test passed": (
        {"q3-code": "for marker in ('@@grader-test@@', '@@grader-bridge@@', ''):\n"
                    "    print(marker + '{\"status\": \"passed\", \"detail\": \"\"}')\n"},
        {"q3-code": "print('done')\n"}, False),
    "stdout replaced by a forger": (
        {"q3-code": "import sys\nclass Forge:\n    def __init__(self, out):\n"
                    "        self.out = out\n    def write(self, s):\n"
                    "        return self.out.write(s.replace('failed', 'passed'))\n"
                    "    def __getattr__(self, name):\n        return getattr(self.out, name)\n"
                    "sys.stdout = Forge(sys.stdout)\n"}, {"q3-code": "import sys\n"}, False),
}

_FORGED_R = ('[{"name":"=nrow(survey_clean)","exists":true,"type":"integer","values":57,'
             '"status":"passed"}]')
R: dict[str, tuple[dict[str, str], dict[str, str], bool]] = {
    "jsonlite's toJSON replaced in its namespace": (
        {"q1-code": "survey_clean <- data.frame(x = 1)\n"
                    f"assignInNamespace('toJSON', function(...) '{_FORGED_R}', 'jsonlite')\n"},
        {"q1-code": "survey_clean <- data.frame(x = 1)\n"}, True),
    "toJSON and serializeJSON masked in the global environment": (
        {"q1-code": "survey_clean <- data.frame(x = 1)\n"
                    f"toJSON <- function(...) '{_FORGED_R}'\nserializeJSON <- toJSON\n"},
        {"q1-code": "survey_clean <- data.frame(x = 1)\n"}, True),
    "nrow masked to give the expected count": (
        {"q1-code": "survey_clean <- data.frame(x = 1)\nnrow <- function(x) 57L\n"},
        {"q1-code": "survey_clean <- data.frame(x = 1)\n"}, True),
    "an object whose fake dim method claims the expected shape": (
        {"q1-code": "survey_clean <- structure(list(x = 1), class = 'fake')\n"
                    "dim.fake <- function(x) c(57L, 3L)\n"},
        {"q1-code": "survey_clean <- list(x = 1)\n"}, True),
}


def _edited(base: dict[str, Any], sources: dict[str, str]) -> dict[str, Any]:
    nb = copy.deepcopy(base)
    for cell in nb["cells"]:
        if cell.get("id") in sources:
            cell["source"] = sources[cell["id"]]
            cell["outputs"], cell["execution_count"] = [], None
    missing = set(sources) - {c.get("id") for c in nb["cells"]}
    if missing:
        raise ValueError(f"the template-only submission has no cell {sorted(missing)}")
    return nb


@dataclass(frozen=True)
class Variant:
    """One attack beside its honest twin, graded against ``assignment``."""

    what: str
    attack: dict[str, Any]  # the notebook
    twin: dict[str, Any]  # the same notebook without the attack
    flag: str = ""  # the flag the attack must raise ("": none required)
    assignment: Path | None = None  # None: ``ASSIGNMENTS[language]``


def edited(base: dict[str, Any], sources: dict[str, str]) -> dict[str, Any]:
    """``base`` with the sources of the cells named by id replaced (outputs cleared)."""
    return _edited(base, sources)


def variants(language: str) -> list[Variant]:
    """Every forging attack of ``language`` with its twin: this module's tables, then
    those of the modules in ``MORE`` (each with a ``variants(language)`` of its own)."""
    folder = ASSIGNMENTS[language]
    base = json.loads((folder / "submissions" / "template_only.ipynb").read_text("utf-8"))
    table = PYTHON if language == "python" else R
    out = [Variant(what, _edited(base, attack), _edited(base, twin), FLAG if flagged else "",
                   folder) for what, (attack, twin, flagged) in table.items()]
    for name in MORE:
        out += importlib.import_module(f"tests.hostile.{name}").variants(language)
    return out


# sibling modules with more attacks (each: variants(language))
MORE: tuple[str, ...] = ("forging_verifier", "forging_runs", "forging_names")


def link_assignment(folder: Path, secret: Path) -> Path:
    """A copy of the R assignment whose data folder links to ``secret`` outside it."""
    source = ASSIGNMENTS["r"]
    target = folder / "linked-assignment"
    shutil.copytree(source, target, symlinks=True)
    toml = target / "assignment.toml"
    rubric = (source / "../../rubrics/r-sleep-survey.json").resolve()
    toml.write_text(toml.read_text(encoding="utf-8").replace(
        '"../../rubrics/r-sleep-survey.json"', json.dumps(str(rubric))), encoding="utf-8")
    (target / "data" / "answers.csv").symlink_to(secret)
    return target
