"""Forged verdicts through names: a notebook that binds what the instructor's checks call.

Graded against two small assignments of this folder (``assignments/py-ferry-waits``,
``assignments/r-ferry-waits``), whose tests use what instructors' tests use: ``abs``,
``all`` and ``pd.testing`` in Python, dplyr's ``near`` in R; value checks ``len(waits)``,
``'Harbor' in wait_by_stop.index``, ``nrow(waits)``; an output check on the type of
``wait_by_stop``. Each attack is written as a student would write it, from outside,
beside its honest twin (the same notebook without the attack, with the same wrong or
missing answers). The attack must never score above the twin; one that binds a name a
test uses must be flagged ``check_tampering``.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.hostile import forging

HERE = Path(__file__).resolve().parent / "assignments"
FOLDERS = {"python": HERE / "py-ferry-waits", "r": HERE / "r-ferry-waits"}
FLAG = forging.FLAG

_LOAD = 'waits = pd.read_csv("data/waits.csv")\n'
_CALLABLE = ("class _Always:\n    def __init__(self, answer):\n        self.answer = answer\n"
             "    def __call__(self, *args, **kwargs):\n        return self.answer\n")
_FAKE_PD = ("class _Testing:\n    def assert_series_equal(self, *args, **kwargs):\n"
            "        return None\n"
            "class _Pandas:\n    testing = _Testing()\n"
            "    def Series(self, *args, **kwargs):\n        return None\n"
            "    def __getattr__(self, name):\n        return getattr(_real, name)\n"
            "_real = pd\npd = _Pandas()\n")

# what: ({cell id: source} of the attack, of its twin, flagged?)
PYTHON: dict[str, tuple[dict[str, str], dict[str, str], bool]] = {
    "a callable abs that always answers 0": (
        {"q1-code": _LOAD + "mean_wait = 0\n" + _CALLABLE + "abs = _Always(0)\n"},
        {"q1-code": _LOAD + "mean_wait = 0\n" + _CALLABLE}, True),
    "a callable all that is always true": (
        {"q1-code": _LOAD + "mean_wait = 0\n" + _CALLABLE + "all = _Always(True)\n"},
        {"q1-code": _LOAD + "mean_wait = 0\n" + _CALLABLE}, True),
    "a fake pd whose testing.assert_series_equal passes anything": (
        {"q1-code": _LOAD, "q2-code": "wait_by_stop = waits\n" + _FAKE_PD},
        {"q1-code": _LOAD, "q2-code": "wait_by_stop = waits\n"}, True),
    "a class named Series standing for the answer": (
        {"q1-code": _LOAD, "q2-code": "class Series:\n    pass\nwait_by_stop = Series()\n"},
        {"q1-code": _LOAD, "q2-code": "class Box:\n    pass\nwait_by_stop = Box()\n"}, False),
    "an index whose membership is always true": (
        {"q1-code": _LOAD, "q2-code": "class _Index:\n    def __contains__(self, item):\n"
                                      "        return True\nclass _Stops:\n"
                                      "    index = _Index()\nwait_by_stop = _Stops()\n"},
        {"q1-code": _LOAD, "q2-code": "class _Index:\n    pass\nclass _Stops:\n"
                                      "    index = _Index()\nwait_by_stop = _Stops()\n"}, False),
    "a table whose len is the expected row count": (
        {"q1-code": "class _Rows:\n    def __len__(self):\n        return 24\n"
                    "waits = _Rows()\nmean_wait = 0\n"},
        {"q1-code": "class _Rows:\n    pass\nwaits = _Rows()\nmean_wait = 0\n"}, False),
}

R: dict[str, tuple[dict[str, str], dict[str, str], bool]] = {
    "near masked, dplyr detached at the end": (
        {"q1-code": 'waits <- read.csv("data/waits.csv")\nmean_wait <- 0\n',
         "q2-code": "wait_by_stop <- data.frame(stop = 'Harbor', wait = 0)\n"
                    "near <- function(...) TRUE\n"
                    "detach('package:dplyr', unload = FALSE, character.only = TRUE)\n"},
        {"q1-code": 'waits <- read.csv("data/waits.csv")\nmean_wait <- 0\n',
         "q2-code": "wait_by_stop <- data.frame(stop = 'Harbor', wait = 0)\n"}, True),
    "all masked to be always true": (
        {"q1-code": 'waits <- read.csv("data/waits.csv")\nmean_wait <- 0\n'
                    "all <- function(...) TRUE\n"},
        {"q1-code": 'waits <- read.csv("data/waits.csv")\nmean_wait <- 0\n'}, True),
    "an environment classed as a tibble for the answer": (
        {"q2-code": "wait_by_stop <- structure(new.env(), class = c('tbl_df', 'tbl', "
                    "'data.frame'))\n"},
        {"q2-code": "wait_by_stop <- structure(new.env(), class = 'box')\n"}, False),
}


def variants(language: str) -> list[forging.Variant]:
    """Each attack of ``language`` beside its twin, graded against this folder's
    assignment of that language."""
    folder = FOLDERS[language]
    base = json.loads((folder / "template.ipynb").read_text(encoding="utf-8"))
    table = PYTHON if language == "python" else R
    return [forging.Variant(what, forging.edited(base, attack), forging.edited(base, twin),
                            FLAG if flagged else "", folder)
            for what, (attack, twin, flagged) in table.items()]
