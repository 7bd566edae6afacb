"""r-sleep-survey: an R assignment whose written answers students put wherever they
like: in the one markdown cell that asks two questions, labelled or not, or as
comments in a code cell. It also checks a reference value (a row count the
instructor states), a plot, and charges one early slip once (``depends_on``).

Synthetic and written for this project: the survey comes from a fixed seed, the
students and their answers are invented. Submissions are derived from the solution
or the template by named-cell edits (``_nbtools``).
"""

from __future__ import annotations

import csv
import random
from pathlib import Path

import _nbtools as nbt
from _nbtools import R_KERNEL, code, md, new_notebook

MISSING_SLEEP = 3  # rows without sleep_hours: survey_clean keeps the others
ROWS = 60

INTRO = """
# Sleep and screens: a student survey

*Introduction to Data Science with R: lab 4 (dplyr, ggplot2)*

Sixty students answered a short survey: their `year` of study (1 to 4), the hours
they slept last night (`sleep_hours`, left empty by some), the hours they spent on
screens that day (`screen_hours`) and the cups of coffee they drank (`coffee_cups`).
The answers are in `data/survey.csv`.

Write your code where it says `# YOUR CODE HERE`, keep the names we ask for, and
answer Questions 4 and 5 in the cell below them.
"""

SETUP = """
# Given: do not change
suppressPackageStartupMessages(library(tidyverse))
"""

Q1_MD = """
## Question 1

Read `data/survey.csv` into `survey`. Then drop the rows whose `sleep_hours` is
missing and call the result `survey_clean`.
"""

Q1_SOLUTION = """
survey <- read_csv("data/survey.csv", show_col_types = FALSE)
survey_clean <- survey %>% filter(!is.na(sleep_hours))
nrow(survey_clean)
"""

Q2_MD = """
## Question 2

Compute `sleep_by_year`: a data frame with one row per `year` and the columns `year`
and `mean_sleep` (the mean hours of sleep of that year's students), ordered by year.
"""

Q2_SOLUTION = """
sleep_by_year <- survey_clean %>%
  group_by(year) %>%
  summarise(mean_sleep = mean(sleep_hours)) %>%
  arrange(year)
sleep_by_year
"""

Q3_MD = """
## Question 3

Draw a scatter plot of `sleep_hours` (vertical axis) against `screen_hours`.
"""

Q3_SOLUTION = """
ggplot(survey_clean, aes(x = screen_hours, y = sleep_hours)) +
  geom_point() +
  labs(x = "Screen time (hours)", y = "Sleep (hours)")
"""

Q45_MD = """
## Questions 4 and 5

**Q4.** Which year sleeps the least, and by how much less than the year that sleeps
the most?

**Q5.** What does your plot suggest about screen time and sleep? Is that enough to
say that screens cause students to sleep less?
"""

PLACEHOLDER = "YOUR ANSWER HERE"
NAME_PLACEHOLDER = "Name: YOUR NAME HERE"
STUDENTS = {  # invented
    "complete": "Emery Quill",
    "comments": "Tamsin Reed",
    "relabelled": "Oren Vale",
    "slip": "Bea Thornton",
    "partial": "Cass Morrow",
    "template_only": "Ines Calder",
}
Q45_TEMPLATE = f"**Q4.** {PLACEHOLDER}\n\n**Q5.** {PLACEHOLDER}"

Q4_ANSWER = ("Fourth-year students sleep the least, about {gap} hours less on average "
             "than first-year students, who sleep the most.")
Q5_ANSWER = ("Students with more screen time tend to sleep fewer hours: the points slope "
             "downwards. This is only an association in one survey, so it does not show "
             "that screens cause less sleep; stress or workload could drive both.")


def write_data(folder: Path) -> None:
    """The survey from a fixed seed (the same file on every rebuild)."""
    rng = random.Random(4242)
    folder.mkdir(parents=True, exist_ok=True)
    missing = set(rng.sample(range(ROWS), MISSING_SLEEP))
    rows = []
    for i in range(ROWS):
        year = 1 + i % 4
        screen = round(rng.uniform(1, 9), 1)
        sleep = round(8.6 - 0.25 * year - 0.22 * screen + rng.gauss(0, 0.5), 1)
        rows.append({"id": i + 1, "year": year,
                     "sleep_hours": "" if i in missing else sleep,
                     "screen_hours": screen, "coffee_cups": rng.randrange(5)})
    with open(folder / "survey.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def gap_hours(folder: Path) -> str:
    """The answer's number, from the data: most minus least mean sleep of a year."""
    by_year: dict[str, list[float]] = {}
    with open(folder / "survey.csv", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if row["sleep_hours"]:
                by_year.setdefault(row["year"], []).append(float(row["sleep_hours"]))
    means = [sum(v) / len(v) for v in by_year.values()]
    return f"{max(means) - min(means):.1f}"


def _cells(solution: bool, gap: str) -> list:
    pick = (lambda s, t: s) if solution else (lambda s, t: t)
    answers = f"**Q4.** {Q4_ANSWER.format(gap=gap)}\n\n**Q5.** {Q5_ANSWER}"
    return [
        md("intro", INTRO),
        md("name", NAME_PLACEHOLDER),
        code("setup", SETUP),
        md("q1", Q1_MD),
        code("q1-code", pick(Q1_SOLUTION, "# YOUR CODE HERE")),
        md("q2", Q2_MD),
        code("q2-code", pick(Q2_SOLUTION, "# YOUR CODE HERE")),
        md("q3", Q3_MD),
        code("q3-code", pick(Q3_SOLUTION, "# YOUR CODE HERE")),
        md("q45", Q45_MD),
        md("q45-answer", pick(answers, Q45_TEMPLATE)),
    ]


def template(folder: Path):
    return new_notebook(_cells(False, gap_hours(folder / "data")), R_KERNEL)


def solution(folder: Path):
    return new_notebook(_cells(True, gap_hours(folder / "data")), R_KERNEL)


def submissions(folder: Path) -> dict:
    sol, tpl = solution(folder), template(folder)
    gap = gap_hours(folder / "data")
    out = {"complete": sol}

    # The answers typed as comments in a code cell under the questions; the markdown
    # cell keeps its placeholders.
    comments = solution(folder)
    nbt.set_source(comments, "q45-answer", Q45_TEMPLATE)
    nbt.insert_after(comments, "q45-answer", code("q45-comments", "\n".join(
        ["# Q4: " + Q4_ANSWER.format(gap=gap), "# Q5: " + Q5_ANSWER])))
    out["comments"] = comments

    # Both answers in one paragraph-less cell, labelled differently from the template.
    relabelled = solution(folder)
    nbt.set_source(relabelled, "q45-answer",
                   f"Q4) {Q4_ANSWER.format(gap=gap)}\nQ5) {Q5_ANSWER}")
    out["relabelled"] = relabelled

    # One early slip: the missing rows are kept, so every mean after it is NA. The
    # means are charged once, in Question 1 (sleep_by_year depends on it).
    slip = solution(folder)
    nbt.replace(slip, "q1-code", "survey %>% filter(!is.na(sleep_hours))", "survey")
    out["slip"] = slip

    # Questions 1 and 2 and Q4's answer; no plot, Q5 left as the template has it.
    partial = solution(folder)
    nbt.take_from(partial, tpl, ["q3-code"])
    nbt.set_source(partial, "q45-answer",
                   f"**Q4.** {Q4_ANSWER.format(gap=gap)}\n\n**Q5.** {PLACEHOLDER}")
    out["partial"] = partial

    out["template_only"] = tpl
    for name, nb in out.items():
        nbt.set_source(nb, "name", f"Name: {STUDENTS[name]}")
    return out
