"""py-functions: a Python assignment graded the way nbgrader and otter grade, with
instructor tests (visible and hidden), reference values, a printed result and a plot.

Everything here is synthetic and written for this project: the rental data come from
a fixed seed, the students and their answers are invented. Submissions are derived
from the solution or the template by named-cell edits (``_nbtools``), so each one
shows exactly what its name says.
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

import _nbtools as nbt
from _nbtools import PY_KERNEL, code, md, new_notebook

STATIONS = ("Harbor", "Market", "Park", "Station")

INTRO = """
# Bike rentals: functions and tests

*Programming for Data Analysis: homework 2 (functions, pandas, plots)*

The city's bike-share scheme exported two weeks of rentals to `data/rentals.csv`: one
row per rental with its `day`, the `station` it started from, its `duration` as the
app writes it ("1h 05m", "45m", "2h") and whether the rider is a `member`.

Write your code where it says `# YOUR CODE HERE` and keep the names we ask for: the
functions are graded by tests, some of which you can see and some you cannot. Answer
Question 5 in the cell that says YOUR ANSWER HERE. Restart and run all before you
submit.
"""

SETUP = """
# Given: do not change
import matplotlib.pyplot as plt
import pandas as pd
"""

Q1_MD = """
## Question 1: `parse_duration`

Write `parse_duration(text)`, which turns the app's durations into whole minutes:
`"1h 05m"` is 65, `"45m"` is 45, `"2h"` is 120. Ignore spaces around the text, and
return `None` for text it cannot read (such as `"soon"` or `""`).
"""

Q1_SOLUTION = '''
def parse_duration(text):
    import re
    match = re.fullmatch(r"(?:(\\d+)h)?\\s*(?:(\\d+)m)?", text.strip())
    if match is None or not any(match.groups()):
        return None
    hours, minutes = match.groups()
    return int(hours or 0) * 60 + int(minutes or 0)
'''

Q1_TEMPLATE = '''
def parse_duration(text):
    # YOUR CODE HERE
    raise NotImplementedError()
'''

Q1_TEST = """
# Given: a test you can run yourself (the grader runs more)
assert parse_duration("45m") == 45
"""

Q2_MD = """
## Question 2: `moving_average`

Write `moving_average(values, k)`, which returns the mean of every run of `k`
consecutive values, in order, as a list of floats: `moving_average([1, 2, 3, 4], 2)`
is `[1.5, 2.5, 3.5]`. When `k` is larger than the number of values, return an empty
list; when `k` is less than 1, raise a `ValueError`.
"""

Q2_SOLUTION = '''
def moving_average(values, k):
    if k < 1:
        raise ValueError("k must be at least 1")
    values = list(values)
    return [sum(values[i:i + k]) / k for i in range(len(values) - k + 1)]
'''

Q2_TEMPLATE = '''
def moving_average(values, k):
    # YOUR CODE HERE
    raise NotImplementedError()
'''

Q3_MD = """
## Question 3: Minutes per station

Read `data/rentals.csv` into a DataFrame named `rentals`. Add a column `minutes` with
each rental's duration in minutes (use your `parse_duration`). Then compute
`minutes_by_station`: the total minutes of each station, as a Series indexed by
station and sorted from the most minutes to the least.
"""

Q3_SOLUTION = """
rentals = pd.read_csv("data/rentals.csv")
rentals["minutes"] = rentals["duration"].apply(parse_duration)
minutes_by_station = rentals.groupby("station")["minutes"].sum().sort_values(ascending=False)
minutes_by_station
"""

Q4_MD = """
## Question 4: Daily rentals

Plot the number of rentals per day as a line chart, and print the station with the
most minutes in a sentence that starts with `Busiest station:`.
"""

Q4_SOLUTION = """
daily = rentals.groupby("day").size()
daily.plot(kind="line", title="Rentals per day")
plt.show()
print(f"Busiest station: {minutes_by_station.index[0]}")
"""

Q5_MD = """
**Question 5.** The daily counts go up and down from one day to the next. What would
a 3-day moving average of them show that the daily counts do not? Answer in two or
three sentences.
"""

Q5_ANSWER = """
A 3-day moving average smooths out the day-to-day noise in the counts, so the
underlying trend over the two weeks becomes visible: whether rentals are rising,
falling or flat. A single busy or quiet day no longer dominates the picture, which
makes it easier to compare the first week with the second.
"""

PLACEHOLDER = "YOUR ANSWER HERE"
NAME_PLACEHOLDER = "Name: YOUR NAME HERE"
STUDENTS = {  # invented
    "complete": "Sage Wendover",
    "wrong_function": "Rowan Pike",
    "slip": "Ari Lindqvist",
    "no_outputs": "Lior Fenwick",
    "partial": "Kit Marrow",
    "template_only": "Noor Alcott",
}


def write_data(folder: Path) -> None:
    """Two weeks of rentals from a fixed seed (the same file on every rebuild)."""
    rng = random.Random(20261123)
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for day in range(1, 15):
        for _ in range(6 + rng.randrange(6) + (day // 3)):
            minutes = rng.choice((5, 12, 20, 35, 45, 50, 65, 80, 95, 120, 150))
            hours, rest = divmod(minutes, 60)
            text = (f"{hours}h {rest:02d}m" if hours and rest else f"{hours}h" if hours
                    else f"{rest}m")
            rows.append({"day": f"2026-03-{day:02d}",
                         "station": rng.choices(STATIONS, weights=(5, 3, 2, 2))[0],
                         "duration": text, "member": rng.random() < 0.6})
    with open(folder / "rentals.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=["day", "station", "duration", "member"],
                                lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def _cells(solution: bool) -> list:
    pick = (lambda s, t: s) if solution else (lambda s, t: t)
    return [
        md("intro", INTRO),
        md("name", NAME_PLACEHOLDER),
        code("setup", SETUP),
        md("q1", Q1_MD),
        code("q1-code", pick(Q1_SOLUTION, Q1_TEMPLATE)),
        code("q1-test", Q1_TEST),
        md("q2", Q2_MD),
        code("q2-code", pick(Q2_SOLUTION, Q2_TEMPLATE)),
        md("q3", Q3_MD),
        code("q3-code", pick(Q3_SOLUTION, "# YOUR CODE HERE")),
        md("q4", Q4_MD),
        code("q4-code", pick(Q4_SOLUTION, "# YOUR CODE HERE")),
        md("q5", Q5_MD),
        md("q5-answer", pick(Q5_ANSWER, PLACEHOLDER)),
    ]


def template():
    return new_notebook(_cells(False), PY_KERNEL)


def solution():
    return new_notebook(_cells(True), PY_KERNEL)


def submissions() -> dict[str, tuple[object, bool]]:
    """name -> (notebook, whether it is submitted with the outputs of its run)."""
    sol, tpl = solution(), template()
    out: dict[str, tuple[object, bool]] = {"complete": (sol, True)}

    # The otter case: a wrong function that passes the visible test. The windows stop
    # one short, and k > len gives a negative range instead of [] by luck only.
    wrong = solution()
    nbt.replace(wrong, "q2-code", "range(len(values) - k + 1)", "range(len(values) - k)")
    nbt.set_source(wrong, "q5-answer", "The average is smoother than the daily counts, so "
                   "it shows the trend over the two weeks rather than single days.")
    out["wrong_function"] = (wrong, True)

    # One early slip: hours are read as minutes ("1h 05m" -> 6). The visible test still
    # passes; the hidden one does not, and the station totals built on it are off too.
    slip = solution()
    nbt.replace(slip, "q1-code", "int(hours or 0) * 60", "int(hours or 0)")
    out["slip"] = (slip, True)

    # The whole solution, submitted without running it: no stored outputs at all.
    out["no_outputs"] = (solution(), False)

    # Questions 1 and 2 only.
    partial = solution()
    nbt.take_from(partial, tpl, ["q3-code", "q4-code", "q5-answer"])
    out["partial"] = (partial, True)

    out["template_only"] = (tpl, True)
    for name, (nb, _) in out.items():
        nbt.set_source(nb, "name", f"Name: {STUDENTS[name]}")
    return out
