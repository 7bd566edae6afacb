"""py-levels: a Python assignment graded the way instructors write rubrics: credit by
approach (criterion ``levels``: full marks for ``groupby``, 85% for ``pivot_table``,
half for filtering each group by hand), a written answer typed as plain text into the
code cell that asks it and scored by its ``key_points`` and answer ``levels``, the
student's own comments (``documented``) and own run (``ran``), and a ``printed`` check
whose ``evidence`` is both runs, so that a cell that failed in the student's run earns
nothing even where ours works.

Everything here is synthetic and written for this project: the greenhouse data come
from a fixed seed, the students and their answers are invented. Submissions are
derived from the solution or the template by named-cell edits (``_nbtools``).
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

import _nbtools as nbt
from _nbtools import PY_KERNEL, code, md, new_notebook

FERTILIZERS = ("compost", "pellets", "none")
BASE_CM = {"compost": 30.5, "pellets": 27.5, "none": 22.0}
ROWS = 48
ANSWER_CELL = "p3-answer"  # the code cell that asks the question; its prose never runs

INTRO = """
# Greenhouse trial: which fertilizer?

*Data Analysis with Python: lab 3 (pandas: grouping and summaries)*

A school greenhouse grew 48 tomato seedlings in four beds. Each got one of three
treatments: `compost`, `pellets` or `none` (the control group). After six weeks each
plant's height was measured. The measurements are in `data/plants.csv`: one row per
plant with its `plant` id, its `bed` (1 to 4), its `fertilizer` and its `height_cm`.

Write your code where it says `# YOUR CODE HERE`. Say in a short comment what each
piece of your code does. Answer Part 3 in its cell, as plain text under the label.
Restart and run all before you submit, so that your results show in the notebook.
"""

NAME_PLACEHOLDER = "Name: YOUR NAME HERE"

SETUP = """
# Given: do not change
import pandas as pd
"""

P1_MD = """
## Part 1: Read the data

Read `data/plants.csv` into a DataFrame named `plants`, then print how many rows it
has in a line that starts with `Rows read:`.
"""

P1_SOLUTION = """
# Read the trial's measurements and say how many plants there are
plants = pd.read_csv("data/plants.csv")
print(f"Rows read: {len(plants)}")
"""

P2_MD = """
## Part 2: Mean height by fertilizer

Compute `mean_height`: the mean `height_cm` of each fertilizer, as a Series indexed by
fertilizer. Show it rounded to one decimal. Use the grouping tools of this week's
lecture: the code should not need to change if the trial adds a fourth fertilizer.
"""

P2_SOLUTION = """
# Average height of each fertilizer group: one value per group
mean_height = plants.groupby("fertilizer")["height_cm"].mean()
mean_height.round(1)
"""

P2_ALTERNATIVE = """
# A pivot table of the mean height per fertilizer, then its one column as a Series
table = plants.pivot_table(index="fertilizer", values="height_cm", aggfunc="mean")
mean_height = table["height_cm"]
mean_height.round(1)
"""

P2_WEAK = """
# Filter each fertilizer group by hand and take the mean of its heights
compost = plants[plants["fertilizer"] == "compost"]["height_cm"].mean()
pellets = plants[plants["fertilizer"] == "pellets"]["height_cm"].mean()
no_fertilizer = plants[plants["fertilizer"] == "none"]["height_cm"].mean()
mean_height = pd.Series({"compost": compost, "none": no_fertilizer, "pellets": pellets})
mean_height.round(1)
"""

P3_MD = """
## Part 3: Your observations

Look at the table of Part 2. Type your answer as plain text in the cell below, under
the label (it is a code cell: it does not need to run).
"""

QUESTION = ("**YOUR OBSERVATIONS:** What does the table show? Which fertilizer gave the "
            "tallest plants, how do they compare with the plants that got none, and how far "
            "would you trust the difference?")

# Every key point, developed (over the 40 words asked).
ANSWER_COMPLETE = """
Compost gave the tallest plants: 30.4 cm on average, against 22.1 cm for the control
plants that got no fertilizer, so about 8 cm more. Pellets came second at 28.7 cm.
Each group has only 16 plants and the heights vary a lot within a group, so part of
the gap between compost and pellets could be chance.
"""

# Every key point, in 30 words.
ANSWER_BRIEF = """
Compost grew the tallest plants, 30.4 cm on average, well above the control group.
With 16 plants per group and a wide spread, some of that gap may be chance.
"""

# Two of the four key points (the best fertilizer, a number the code printed), at length.
ANSWER_SOME = """
Compost is the best fertilizer in this trial. Its plants reached 30.4 cm on average,
the highest mean height in the table, and the pellets reached 28.7 cm. I would
recommend compost to the gardeners for next season, because it clearly gave the
tallest plants of all the options we tested.
"""

STUDENTS = {  # invented
    "complete": "Wren Caddick",
    "alternative": "Oren Talvace",
    "weak_approach": "Perrin Mosse",
    "brief_answer": "Ilse Brannock",
    "some_points": "Soren Quillan",
    "never_ran": "Mara Elstow",
    "undocumented": "Dov Ashgrove",
    "failed_own_run": "Tove Harrowby",
    "template_only": "Bram Ostley",
}
NEVER_RUN = {"never_ran"}  # submitted without outputs or execution counts
OWN_RUN_FAILS = {"failed_own_run"}  # the student's run stores errors in code cells


def write_data(folder: Path) -> None:
    """48 plants from a fixed seed (the same file on every rebuild)."""
    rng = random.Random(20260412)
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for i in range(ROWS):
        fertilizer = FERTILIZERS[i % 3]
        bed = i % 4 + 1
        height = BASE_CM[fertilizer] + (bed - 2.5) * 0.8 + rng.gauss(0, 3.2)
        rows.append({"plant": f"P{i + 1:02d}", "bed": bed, "fertilizer": fertilizer,
                     "height_cm": f"{height:.1f}"})
    with open(folder / "plants.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=["plant", "bed", "fertilizer", "height_cm"],
                                lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def _answer(text: str) -> str:
    return f"{QUESTION}\n\n{text.strip()}"


def _cells(solution: bool) -> list:
    pick = (lambda s, t: s) if solution else (lambda s, t: t)
    return [
        md("intro", INTRO),
        md("name", NAME_PLACEHOLDER),
        code("setup", SETUP),
        md("p1", P1_MD),
        code("p1-code", pick(P1_SOLUTION, "# YOUR CODE HERE")),
        md("p2", P2_MD),
        code("p2-code", pick(P2_SOLUTION, "# YOUR CODE HERE")),
        md("p3", P3_MD),
        code(ANSWER_CELL, pick(_answer(ANSWER_COMPLETE), QUESTION)),
    ]


def template():
    return new_notebook(_cells(False), PY_KERNEL)


def solution():
    return new_notebook(_cells(True), PY_KERNEL)


def code_errors(nb) -> list[str]:
    """Ids of the code cells whose stored outputs show an error, the answer cell left
    out (its prose is no Python: running it always stores a SyntaxError)."""
    return [c.id for c in nb.cells if c.cell_type == "code" and c.id != ANSWER_CELL
            and any(o.output_type == "error" for o in c.get("outputs", []))]


def _without_comments(nb, cell_id: str) -> None:
    c = nbt.cell(nb, cell_id)
    c.source = "\n".join(line for line in c.source.splitlines()
                         if not line.lstrip().startswith("#"))


def submissions() -> dict[str, object]:
    """name -> notebook (the ones in ``NEVER_RUN`` are submitted without running)."""
    out: dict[str, object] = {"complete": solution()}

    # The accepted alternative: pivot_table() instead of groupby(), right numbers.
    alt = out["alternative"] = solution()
    nbt.set_source(alt, "p2-code", P2_ALTERNATIVE)

    # The weaker approach: one boolean filter per group, right numbers.
    weak = out["weak_approach"] = solution()
    nbt.set_source(weak, "p2-code", P2_WEAK)

    # Every key point, under the 40 words asked: "brief but complete".
    brief = out["brief_answer"] = solution()
    nbt.set_source(brief, ANSWER_CELL, _answer(ANSWER_BRIEF))

    # Half of the key points (no control group, no caution), at length.
    some = out["some_points"] = solution()
    nbt.set_source(some, ANSWER_CELL, _answer(ANSWER_SOME))

    # The whole solution, never run: no outputs, no execution counts.
    out["never_ran"] = solution()

    # The solution's code without a comment of the student's.
    bare = out["undocumented"] = solution()
    for cell_id in ("p1-code", "p2-code"):
        _without_comments(bare, cell_id)

    # Read from the student's own machine: the path fails in the student's run (so
    # does everything after it), and works in ours, where the data is mapped there.
    failed = out["failed_own_run"] = solution()
    nbt.replace(failed, "p1-code", 'read_csv("data/',
                'read_csv("/workspaces/greenhouse-student07/data/')

    out["template_only"] = template()
    for name, nb in out.items():
        nbt.set_source(nb, "name", f"Name: {STUDENTS[name]}")
    return out
