"""The letter a student receives, written from the grader's evidence in plain words.

``build_letter`` turns a ``GradeReport`` into a ``Letter`` (typed, for any
renderer); ``letter_markdown`` and ``letter_html`` write it (``grader.letters.pdf``
makes the PDF). Rules:

- Criteria come in rubric order, each with its points, what was done, what is
  missing and where (cell, line, expected vs found), and the next step, read from
  that criterion's own checks only (``grader.letters.check_reading``), without repeats. A
  criterion with full points gets one line.
- Points are the gradebook's, as every page and export writes them ("8.64 / 20",
  ``grader.points``): the criteria shown add up to the total shown. The percentage is
  a whole number of the points shown, rounded half up, never 100 short of full.
- A model's text appears only when its layer was trusted to judge
  (``details["advisory"] is False``), the notebook held no text aimed at the
  grader, the text is made of sentences, and, for the code model, its verdict
  agrees with the checks and it cites cells that survived the evidence checks
  (``dropped_claims``). It is labelled as written with a language model's help.
- Nothing for the instructor only: no flags, review reasons, hidden checks,
  model metrics or timings. Criteria under review get one neutral line. Text of a
  hidden check that the student's run carried into what the letter quotes (a cell's
  error, a printed line) is replaced by "a hidden test's code" (``hidden``).
- A report that could not be graded becomes a short letter saying why in plain
  words and what to do.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..errors import NotebookError
from ..notebooks.load import load_notebook
from ..points import as_points, gradebook, percent_text, points_text
from ..rubrics.model_notes import sentence
from ..rubrics.schema import Rubric
from ..safe_text import scrub, shown_name
from ..scoring import DISAGREE, GATES, MANUAL
from ..types import CriterionResult, GradeReport, LayerResult, Notebook
from .check_reading import read_check
from .hidden import HiddenText, redact_section
from .places import Places
from .reading import Context, Reading
from .render import letter_html, letter_markdown
from .text import (
    CLOSING,
    MANUAL_REVIEW,
    MODEL_LABEL,
    REVIEW_NOTE,
    SECTION_REVIEW,
    Code,
    Letter,
    Phrase,
    Quote,
    Section,
    cut,
    join_and,
    phrase,
    plural,
)

log = logging.getLogger(__name__)
LIMITS = {"done": 4, "missing": 6, "steps": 3, "quotes": 3}


def student_name(r: GradeReport) -> str:
    """Who a report is of, as shown: display name, else student id, else the file's stem."""
    return r.display_name or r.student_id or Path(r.file).stem


# --- model text -----------------------------------------------------------------------------

# Whether a note's text reads as a sentence is one rule for the pages and the letter
# (``grader.rubrics.model_notes.sentence``).


def _trusted(report: GradeReport, name: str) -> LayerResult | None:
    lr = report.layers.get(name)
    if lr is None or lr.error or lr.details.get("advisory") is not False:
        return None
    if any(f.code == "prompt_injection" for f in report.flags):
        return None  # the notebook talks to the grader: its model's text may be the student's
    return lr


def _model_text(report: GradeReport, crit: CriterionResult, places: Places) -> tuple[Phrase, ...]:
    lr = _trusted(report, "L3" if crit.kind == "code" else "L4")
    notes = crit.model_notes
    if lr is None or not notes:
        return ()
    if crit.kind != "code":
        answers = [ch.score for ch in crit.checks if ch.check == "answer"]
        if answers and not any(answers):
            return ()  # nothing was answered: there is nothing of the student's to comment on
        return tuple(phrase(label, s) for label, key in (
            ("What works: ", "strength"), ("To improve: ", "improve"),
            ("Next step: ", "next_step")) if (s := sentence(notes.get(key, ""))))
    share = crit.points / crit.max_points if crit.max_points else 0.0
    verdict = notes.get("verdict", "")
    limit = DISAGREE.get(verdict)
    if limit is not None and (share >= limit if verdict == "not met" else share <= limit):
        return ()  # the model contradicts the checks: the instructor decides, not the letter
    item = (lr.details.get("output") or {}).get(crit.id)
    cells = item.get("cells", []) if isinstance(item, dict) else \
        [c.strip() for c in notes.get("cells", "").split(",")]
    named = [n for n in dict.fromkeys(places.cell(c) for c in cells if c) if n]
    if not [c for c in cells if c]:
        return ()  # no cited cell survived the evidence checks: no claim to show
    out = []
    if issue := sentence(notes.get("issue", "")):
        out.append(phrase(issue, f" (see {' and '.join(named)})" if named else ""))
    if suggestion := sentence(notes.get("suggestion", "")):
        out.append(phrase("Suggestion: ", suggestion))
    if out and (quote := notes.get("quote", "").strip()):
        out.append(phrase("The line it refers to: ", Code(cut(quote, 80))))
    return tuple(out)


# --- building ---------------------------------------------------------------------------------

def _unique(items: Iterable[Phrase], limit: int) -> tuple[Phrase, ...]:
    seen: dict[str, Phrase] = {}
    for p in items:
        seen.setdefault(str(p), p)
    return tuple(seen.values())[:limit]


def _summary(crit: CriterionResult) -> Phrase:
    answer = next((ch for ch in crit.checks if ch.facts.has("words") and ch.evidence
                   and not getattr(ch, "hidden", False)), None)
    if answer is None:
        return phrase("Complete: every check of this part passed.")
    words = int(answer.facts.count("words"))
    return phrase(f"Complete: you answered with {plural(words, 'word')}: “",
                  cut(answer.evidence[0].text, 70), "”.")


def _section(report: GradeReport, crit: CriterionResult, rubric: Rubric | None,
             places: Places, hidden: HiddenText) -> Section:
    spec_crit = next((c for c in rubric.criteria if c.id == crit.id), None) if rubric else None
    specs = {(c.type, c.target): c for c in spec_crit.checks} if spec_crit else {}
    task = spec_crit.task if spec_crit else ""
    checks = [hidden.result(ch) for ch in crit.checks]  # before any reader quotes or cuts
    evidence = tuple(e for ch in checks if not getattr(ch, "hidden", False)
                     for e in ch.evidence)
    unassigned = frozenset(n for ch in checks if ch.check == "assigns"
                           and not getattr(ch, "hidden", False) for n in ch.facts.missing)
    readings: list[Reading] = [
        read_check(ch, Context(places, specs.get((ch.check, ch.target)), task, evidence,
                               unassigned, spec_crit.levels if spec_crit else ()))
        for ch in checks]
    complete = crit.points >= crit.max_points and not any(r.unchecked for r in readings)
    score = points_text(crit.points, crit.max_points)
    review = SECTION_REVIEW if crit.needs_review or any(r.unchecked for r in readings) else ""
    if crit.needs_review and crit.review_reasons and crit.review_reasons[0].startswith(MANUAL):
        # graded by hand and not yet graded: no points to show, nothing found missing
        return Section(crit.id, scrub(crit.title), 0.0, crit.max_points,
                       f"graded by your instructor ({plural_points(crit.max_points)})",
                       False, None, review=MANUAL_REVIEW)
    base = Section(crit.id, scrub(crit.title), crit.points, crit.max_points, score, complete,
                   None, review=review)
    if complete:
        return dataclasses.replace(base, summary=_summary(crit))
    quotes = list(dict.fromkeys(q for r in readings for q in r.quotes))
    return dataclasses.replace(
        base,
        done=_unique((p for r in readings for p in r.done), LIMITS["done"]),
        missing=_unique((p for r in readings for p in r.missing), LIMITS["missing"]),
        next_steps=_unique((p for r in readings for p in r.steps), LIMITS["steps"]),
        quotes=tuple(quotes[:LIMITS["quotes"]]),
        model_text=_model_text(report, crit, places))


def _ordered(report: GradeReport, rubric: Rubric | None) -> list[CriterionResult]:
    if rubric is None:
        return list(report.criteria)
    rank = {c.id: i for i, c in enumerate(rubric.criteria)}
    return sorted(report.criteria, key=lambda c: rank.get(c.id, len(rank)))


def plural_points(x: float) -> str:
    """"4 points", "1 point", "2.16 points" (``grader.points``)."""
    return f"{as_points(x)} point" + ("" if as_points(x) == "1" else "s")


def _open_points(s: Section) -> str:
    """The points still open, as the shown score implies them ("2.16 points")."""
    return plural_points(max(0.0, gradebook(s.max_points) - gradebook(s.points, s.max_points)))


def _overview(sections: Sequence[Section]) -> tuple[Phrase, ...]:
    sections = [s for s in sections if s.review != MANUAL_REVIEW]  # not graded yet
    if not sections:
        return ()
    n_full = sum(s.complete for s in sections)
    lines = [phrase(f"You completed {n_full} of {plural(len(sections), 'part')} in full.")]
    open_ = sorted((s for s in sections if s.max_points - s.points > 1e-9),
                   key=lambda s: s.points - s.max_points)[:2]
    if open_ and n_full < len(sections):
        items = [phrase(f"“{cut(s.title, 60)}” (", _open_points(s), ")")
                 for s in open_]
        lines.append(phrase("Most points are still open in ", join_and(items), "."))
    return tuple(lines)


def build_letter(report: GradeReport, rubric: Rubric | None = None,
                 notebook: Notebook | None = None, title: str = "") -> Letter:
    """The student's letter for ``report``. ``rubric`` (the one graded with) gives the
    order, the parts' headings and the answers' lengths; ``notebook`` (the submission)
    names cells by position. ``title``: the assignment's title as the class knows it."""
    letter = _letter(report, rubric, notebook, title)
    return dataclasses.replace(letter, graded_at=report.created_at or 0.0)


def _letter(report: GradeReport, rubric: Rubric | None, notebook: Notebook | None,
            title: str) -> Letter:
    assignment = scrub(title or (rubric.title if rubric else "") or report.assignment)
    student = scrub(shown_name(student_name(report)))
    if report.status == "error" or report.score is None:
        return _error_letter(report, assignment, student)
    if any(f.code in GATES for f in report.flags) and not report.score:
        return _unlike_letter(assignment, student)
    places = Places(notebook)
    criteria = _ordered(report, rubric)
    hidden = HiddenText.from_rubric(rubric)  # what the student's run may carry of them
    sections = tuple(redact_section(_section(report, c, rubric, places, hidden), hidden)
                     for c in criteria)
    full = report.max_score
    return Letter(
        assignment=assignment, student=student, status="graded",
        score=points_text(report.score, full),
        percent=percent_text(report.score, full),
        overview=_overview(sections), sections=sections,
        review_note=REVIEW_NOTE if any(s.review for s in sections) else "")


def letter_for(report: GradeReport, rubric: Rubric | None = None,
               notebook: Notebook | bytes | None = None, title: str = "") -> Letter:
    """``build_letter`` for a page that holds the submission's bytes: a notebook that no
    longer reads is left out (cells are then named by id), never an error."""
    if isinstance(notebook, bytes):
        try:
            notebook = load_notebook(notebook, report.file)
        except NotebookError as exc:
            log.info("letter for %s without cell positions: %s", report.file, exc)
            notebook = None
    return build_letter(report, rubric, notebook, title)


# --- ungraded submissions ---------------------------------------------------------------------

_PLAIN_PROBLEMS = (  # the first whose key the error holds (lower case) says it
    ("no notebook (.ipynb) in this archive", "the ZIP file you submitted holds no notebook "
                                             "(.ipynb)"),
    ("a folder", "a folder was submitted instead of a notebook file"),
    ("the file is empty", "the file you submitted is empty"),
    ("too large", "the file is larger than the grader accepts"),
    ("larger than", "the file is larger than the grader accepts"),
    ("binary content", "the file is not a notebook but another kind of file (for example a "
                       "PDF, an image or a Word document)"),
    ("nbformat", "the notebook was saved in a format version the grader cannot read"),
    ("too many cells", "the notebook has more cells than the grader accepts"),
    ("not json", "the file could not be read as a Jupyter notebook: it may be damaged or "
                 "saved in another format"),
    ("not a notebook (.ipynb)", "the file is not a Jupyter notebook (.ipynb)"),
    ("not a valid notebook", "the file is not a valid Jupyter notebook: it may be damaged"),
    ("not a notebook", "the file is not a valid Jupyter notebook"),
    ("cannot read", "the file could not be read"),
    ("not kept", "the file was not kept after upload"),
)
WHAT_TO_DO = (
    "Open your notebook in Jupyter (or the editor you used) and check that it opens and shows "
    "your work.",
    "Save it as a notebook file (.ipynb), for example with File > Download > Notebook (.ipynb); "
    "a PDF, HTML page, screenshot or ZIP cannot be graded.",
    "Submit the .ipynb file again. If it still cannot be graded, write to your instructor.",
)


def plain_problem(error: str) -> str:
    low = error.lower()
    return next((plain for key, plain in _PLAIN_PROBLEMS if key in low),
                "the grader could not read your notebook")


def _error_letter(report: GradeReport, assignment: str, student: str) -> Letter:
    return Letter(assignment=assignment, student=student, status="error",
                  problem=f"Your submission could not be graded: {plain_problem(report.error)}. "
                          "This says nothing about your work itself.",
                  what_to_do=WHAT_TO_DO)


UNLIKE_TO_DO = (
    "Check that the notebook you submitted is this assignment's, with your work in it "
    "(not the lecture's notebook or another assignment's).",
    "If you submitted the wrong file, submit the right notebook (.ipynb) again.",
    "If it is the right notebook, write to your instructor: they will look at it.",
)


def _unlike_letter(assignment: str, student: str) -> Letter:
    """A notebook with little in common with the assignment's template: not graded until
    the instructor has looked at it (scoring's wrong-notebook gate)."""
    return Letter(assignment=assignment, student=student, status="error",
                  problem="The notebook you submitted has little in common with this "
                          "assignment's notebook, so it was not graded: it may be the "
                          "notebook of another assignment or of a lecture. Your instructor "
                          "will look at it.",
                  what_to_do=UNLIKE_TO_DO)


__all__ = [
    "CLOSING",
    "MODEL_LABEL",
    "REVIEW_NOTE",
    "SECTION_REVIEW",
    "Letter",
    "Phrase",
    "Quote",
    "Section",
    "build_letter",
    "letter_for",
    "letter_html",
    "letter_markdown",
    "plain_problem",
    "sentence",
    "student_name",
]
