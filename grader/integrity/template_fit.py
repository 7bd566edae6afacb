"""How much of the assignment's template a notebook holds: is it the right assignment?

Students work in the template: they fill code cells in and answer under the
questions, but the template's instructions, questions and given code stay. A
notebook that holds few of the template's cells was most likely made for another
assignment (a strings-and-dates notebook uploaded under the joins assignment), and
its grade means nothing. ``template_fit`` counts the template's cells (distinct,
non-empty) that the notebook holds, from ``grader.analysis.template.match_template``'s
pairing of cells (unchanged or edited template cells), and, for a template cell a
student answered inside, when at least half of its lines are still in the notebook.

Measured on the bundled examples: notebooks of the right assignment hold 42-100%
of its template's cells (the instructor's own solution of r-joins: 27%), notebooks
of another assignment 0-7%. ``UNLIKE_BELOW`` sits between.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..analysis.template import TemplateMatch, normalise_code, normalise_markdown
from ..types import Cell, Flag, Notebook

__all__ = ["MIN_TEMPLATE_CELLS", "UNLIKE_BELOW", "TemplateFit", "template_fit",
           "unlike_template_flag"]

UNLIKE_BELOW = 0.2  # share of the template's cells under which a notebook is "unlike" it
MIN_TEMPLATE_CELLS = 4  # a template this small says too little to judge by


@dataclass(frozen=True, slots=True)
class TemplateFit:
    found: int  # the template's cells the notebook holds
    total: int  # the template's distinct non-empty cells

    @property
    def share(self) -> float:
        return self.found / self.total if self.total else 1.0

    @property
    def unlike(self) -> bool:
        """Little in common with the template: probably another assignment's notebook."""
        return self.total >= MIN_TEMPLATE_CELLS and self.share < UNLIKE_BELOW

    def describe(self, assignment: str) -> str:
        return (f"holds {self.found} of the {self.total} cells of {assignment}'s template "
                f"({100 * self.share:.0f}%): is it a notebook of another assignment?")


def _key(cell: Cell, language: str) -> tuple[str, str]:
    if cell.kind == "code":
        return "code", normalise_code(cell.source, language) or " ".join(cell.source.split())
    return "markdown", normalise_markdown(cell.source)


def _lines(cell: Cell, language: str) -> set[str]:
    out = set()
    for line in cell.source.splitlines():
        norm = normalise_code(line, language) if cell.kind == "code" else \
            normalise_markdown(line)
        norm = norm or " ".join(line.split()).lower()  # comment-only lines count as text
        if norm:
            out.add(norm)
    return out


def _all_lines(cells: Iterable[Cell], language: str) -> set[str]:
    out: set[str] = set()
    for c in cells:
        out |= _lines(c, language)
    return out


def template_fit(template: Notebook, submission: Notebook, match: TemplateMatch) -> TemplateFit:
    """How many of ``template``'s cells ``submission`` holds; ``match`` is
    ``match_template(template, submission, ...)``."""
    lang = submission.language
    paired = {_key(o.template_cell, lang) for o in match.origins if o.template_cell is not None}
    have = _all_lines(submission.cells, lang)
    distinct = {_key(c, lang): c for c in template.cells if c.source.strip()}
    found = 0
    for key, cell in distinct.items():
        lines = _lines(cell, lang)
        if key in paired or (lines and 2 * len(lines & have) >= len(lines)):
            found += 1
    return TemplateFit(found, len(distinct))


def unlike_template_flag(fit: TemplateFit, assignment: str) -> Flag | None:
    """The flag a notebook gets when it has little in common with the template."""
    if not fit.unlike:
        return None
    return Flag("unlike_template", f"the notebook {fit.describe(assignment)}")
