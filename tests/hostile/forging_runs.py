"""Forging around our run: names that once stopped it, stored outputs, code that never runs.

Each attack beside its honest twin (the same notebook without the attack), graded
against the bundled assignments (``py-functions``, ``r-sleep-survey``), from their
``partial`` submissions so that a twin is never full marks and an attack has points to
take:
- a comment naming a 300-character ``os.chdir``/``setwd`` target (the layout once
  called the file system with it, the run was abandoned and every run-based check
  lost);
- stored outputs a cell's code never gives (a printed line, a drawn plot), with and
  without such a run-stopping name beside them: the stored line must earn nothing and
  the grade is flagged ``stale_outputs``;
- ``read_csv`` inside ``if False:`` / ``if (FALSE) {}``: a call that can never run is
  no call.
Each attack must score at most its twin; an attack that reaches the checks' paths is
not among these.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from tests.hostile import forging

LONG = "a" * 300  # one name longer than any file system takes (255 bytes)
_PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJ"
        "RU5ErkJggg==")


def _base(language: str, name: str) -> dict[str, Any]:
    folder = forging.ASSIGNMENTS[language]
    return json.loads((folder / "submissions" / f"{name}.ipynb").read_text("utf-8"))


def _stored(nb: dict[str, Any], cell_id: str, outputs: list[dict[str, Any]],
            count: int = 9) -> dict[str, Any]:
    """``nb`` with ``outputs`` stored under the cell ``cell_id``, as if the student ran it."""
    nb = copy.deepcopy(nb)
    cell = next(c for c in nb["cells"] if c.get("id") == cell_id)
    cell["outputs"], cell["execution_count"] = outputs, count
    return nb


def _printed(text: str) -> dict[str, Any]:
    return {"output_type": "stream", "name": "stdout", "text": text}


def _plot(caption: str) -> dict[str, Any]:
    return {"output_type": "display_data", "metadata": {},
            "data": {"image/png": _PNG, "text/plain": caption}}


def _pair(what: str, base: dict[str, Any], attack: dict[str, str], twin: dict[str, str],
          flag: str = "", stored: tuple[str, list[dict[str, Any]]] | None = None,
          language: str = "python") -> forging.Variant:
    """The variant: ``attack`` and ``twin`` edit the same cells of ``base``; ``stored``:
    (cell, outputs) forged into the attack only."""
    forged = forging.edited(base, attack)
    if stored is not None:
        forged = _stored(forged, *stored)
    return forging.Variant(what, forged, forging.edited(base, twin), flag,
                           forging.ASSIGNMENTS[language])


def _python() -> list[forging.Variant]:
    partial, template = _base("python", "partial"), _base("python", "template_only")
    read = 'rentals = pd.read_csv("data/rentals.csv")\n'
    busiest = [_printed("Busiest station: Harbor\n"), _plot("<Figure size 640x480 with 1 Axes>")]
    return [
        _pair("a comment naming a 300-character chdir target", partial,
              {"q3-code": f'# os.chdir("{LONG}")\n{read}'}, {"q3-code": read}),
        _pair("stored outputs never printed, beside a run-stopping name", partial,
              {"q4-code": f'# os.chdir("{LONG}")\ndaily = None\n'},
              {"q4-code": "daily = None\n"}, "stale_outputs", ("q4-code", busiest)),
        _pair("a stored line and plot the code never prints or draws", partial,
              {"q4-code": "daily = None\n"}, {"q4-code": "daily = None\n"},
              "stale_outputs", ("q4-code", busiest)),
        _pair("read_csv inside if False", template,
              {"q3-code": "if False:\n    " + read},
              {"q3-code": "if False:\n    rentals = None\n"}),
        _pair("read_csv after a raise in the same cell", template,
              {"q3-code": "raise SystemExit\n" + read}, {"q3-code": "raise SystemExit\n"}),
    ]


def _r() -> list[forging.Variant]:
    partial, template = _base("r", "partial"), _base("r", "template_only")
    read = 'survey <- read_csv("data/survey.csv", show_col_types = FALSE)\n'
    drawn = [_plot("plot without title")]
    return [
        _pair("a comment naming a 300-character setwd target", partial,
              {"q3-code": f'# setwd("{LONG}")\nx <- 1\n'}, {"q3-code": "x <- 1\n"},
              language="r"),
        _pair("a stored plot never drawn, beside a run-stopping name", partial,
              {"q3-code": f'# setwd("{LONG}")\np <- NULL\n'}, {"q3-code": "p <- NULL\n"},
              "stale_outputs", ("q3-code", drawn), "r"),
        _pair("a stored plot the code never draws", partial,
              {"q3-code": "p <- NULL\n"}, {"q3-code": "p <- NULL\n"},
              "stale_outputs", ("q3-code", drawn), "r"),
        _pair("read_csv inside if (FALSE)", template,
              {"q1-code": "if (FALSE) {\n  " + read + "}\n"},
              {"q1-code": "if (FALSE) {\n  survey <- NULL\n}\n"}, language="r"),
        _pair("read_csv after stop() in the same cell", template,
              {"q1-code": 'stop("not yet")\n' + read}, {"q1-code": 'stop("not yet")\n'},
              language="r"),
    ]


def variants(language: str) -> list[forging.Variant]:
    """The attacks of ``language`` with their twins."""
    return _python() if language == "python" else _r()
