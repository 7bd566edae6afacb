"""What the student wrote: a submission's cells matched against the template.

Students add, delete and reorder cells, so cells are matched by content, never
by position. A line of code counts as the student's only when it is not a line
of the template (compared after removing comments and collapsing whitespace)
and not a placeholder: template code, comments and placeholders earn nothing.
Markdown and raw cells equal to a template cell are the template's; the rest are the
student's (their written answers), line by line: a line of the template's text (its
markdown, or a line of one of its code cells, as a question the student turned into
markdown) is never the student's. A code cell that holds only prose
(``grader.analysis.prose_cells``: text typed into a code cell, which does not parse) is
read the same way, as the student's text, and is none of the student's code
(``CellOrigin.prose``; ``TemplateMatch.student_code_cells`` leaves it out).

Given template code that the student removed or changed is reported, so an
instructor sees edited test cells (``assert`` lines) and tampered set-up code.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from dataclasses import dataclass, field

from ..types import Cell, Evidence, Flag, Notebook
from .facts import normalise_code as _normalise_code
from .prose_cells import given_prose_lines, prose_cell


@functools.lru_cache(maxsize=1 << 16)
def normalise_code(code: str, language: str) -> str:
    """codeanalysis.normalise_code, cached: a class's notebooks repeat the same lines."""
    return _normalise_code(code, language)


_WS = re.compile(r"\s+")
_MD_NOISE = re.compile(r"[#>*_`~|\-]+")
_PUNCT_GAP = re.compile(r" ([.,;:!?])(?=\s|$)")


def normalise_markdown(text: str) -> str:
    """Lower-cased words without markdown's marks; no space before punctuation, so
    "in `n`." and "in n." read the same."""
    return _PUNCT_GAP.sub(r"\1", _WS.sub(" ", _MD_NOISE.sub(" ", text))).strip().lower()


def _is_placeholder_line(norm: str, placeholders: tuple[str, ...]) -> bool:
    if not norm:
        return True
    low = norm.lower()
    if low in {
        "pass",
        "...",
        "raise notimplementederror()",
        "raise notimplementederror",
        'stop("not implemented")',
        "na",
        "null",
    }:
        return True
    return (
        any(p.lower() in low for p in placeholders)
        and len(low) <= 2 * max(len(p) for p in placeholders) + 20
    )


@dataclass(frozen=True, slots=True)
class CellOrigin:
    cell: Cell
    status: str  # "template" (unchanged), "modified" (template cell with student edits), "student"
    # 1-based lines written by the student (code, or markdown lines not in the template)
    student_lines: frozenset[int] = frozenset()
    template_cell: Cell | None = None
    prose: bool = False  # a code cell that holds only prose: read as markdown, never code

    @property
    def is_students(self) -> bool:
        return self.status != "template"

    @property
    def holds_code(self) -> bool:
        """A code cell that holds code (not only prose)."""
        return self.cell.kind == "code" and not self.prose


@dataclass(slots=True)
class TemplateMatch:
    origins: list[CellOrigin]
    flags: list[Flag] = field(default_factory=list)
    # the template's lines as markdown reads them (normalise_markdown): its text
    template_text: frozenset[str] = frozenset()

    def origin(self, cell_id: str) -> CellOrigin | None:
        return next((o for o in self.origins if o.cell.id == cell_id), None)

    @property
    def student_code_cells(self) -> list[CellOrigin]:
        return [o for o in self.origins if o.holds_code and o.student_lines]

    @property
    def student_code_lines(self) -> int:
        return sum(len(o.student_lines) for o in self.origins if o.holds_code)

    @property
    def student_markdown_cells(self) -> list[CellOrigin]:
        return [o for o in self.origins if o.cell.kind == "markdown" and o.is_students]

    def student_text(self, origin: CellOrigin) -> str:
        """The student's own lines of a cell (template lines dropped)."""
        lines = origin.cell.source.splitlines()
        return "\n".join(line for i, line in enumerate(lines, 1) if i in origin.student_lines)



def _code_lines(source: str, language: str) -> list[str]:
    """Normalised form of each source line ("" for blank/comment-only lines)."""
    return [normalise_code(line, language) for line in source.splitlines()]


def match_template(
    template: Notebook,
    submission: Notebook,
    placeholders: tuple[str, ...],
    solution: Notebook | None = None,
) -> TemplateMatch:
    """Match ``submission``'s cells to ``template``'s.

    With ``solution``, template lines that the instructor's own solution does
    not keep (fill-in stubs like ``customers <-``, stray markup) are not
    "given code", so changing them is no tampering.
    """
    lang = submission.language
    tmpl_code = [c for c in template.cells if c.kind == "code"]
    tmpl_lines: Counter[str] = Counter()
    tmpl_cell_lines: dict[str, list[str]] = {}
    for c in tmpl_code:
        norm = [n for n in _code_lines(c.source, lang) if n]
        tmpl_cell_lines[c.id] = norm
        tmpl_lines.update(norm)
    # a template cell of either kind the student turned into markdown stays the template's
    tmpl_md = {normalise_markdown(c.source): c for c in reversed(template.cells)
               if c.kind != "code" or c.source.strip()}
    tmpl_md_lines = frozenset(
        normalise_markdown(line) for c in template.cells for line in c.source.splitlines()
    )
    tmpl_code_exact = {normalise_code(c.source, lang): c for c in tmpl_code}
    given = given_prose_lines(tuple(c.source for c in tmpl_code), lang)

    def text_lines(source: str) -> frozenset[int]:
        return frozenset(i for i, line in enumerate(source.splitlines(), 1)
                         if (n := normalise_markdown(line)) and n not in tmpl_md_lines)

    origins: list[CellOrigin] = []
    for cell in submission.cells:
        if cell.kind != "code":
            tmpl = tmpl_md.get(normalise_markdown(cell.source))
            if tmpl is not None:
                origins.append(CellOrigin(cell, "template", template_cell=tmpl))
            else:
                origins.append(CellOrigin(cell, "student", text_lines(cell.source)))
            continue
        prose = prose_cell(cell.source, lang, given)
        if prose:  # text in a code cell, compared as text: comments typed under it count
            tmpl = tmpl_md.get(normalise_markdown(cell.source))
            if tmpl is not None:
                origins.append(CellOrigin(cell, "template", template_cell=tmpl, prose=True))
            else:  # the student's lines, as in markdown
                origins.append(CellOrigin(cell, "student", text_lines(cell.source), prose=True))
            continue
        exact = tmpl_code_exact.get(normalise_code(cell.source, lang))
        if exact is not None:
            origins.append(CellOrigin(cell, "template", template_cell=exact))
            continue
        norms = _code_lines(cell.source, lang)
        own = frozenset(
            i
            for i, n in enumerate(norms, 1)
            if n and n not in tmpl_lines and not _is_placeholder_line(n, placeholders)
        )
        paired = _best_template_cell(norms, tmpl_code, tmpl_cell_lines)
        status = "modified" if paired is not None else "student"
        origins.append(CellOrigin(cell, status, own, paired))
    return TemplateMatch(
        origins,
        _tamper_flags(tmpl_code, tmpl_cell_lines, submission, lang, placeholders, solution)
        + _locked_flags(template, submission),
        tmpl_md_lines,
    )


def _plain(source: str) -> str:
    return "\n".join(line.rstrip() for line in source.strip().splitlines())


def _locked_flags(template: Notebook, submission: Notebook) -> list[Flag]:
    """nbgrader's locked (read-only) cells the student changed, as nbgrader's checksums
    catch them: a cell whose grade id the template locks, with other text (or type)."""
    given = {c.locked: c for c in template.cells if c.locked}
    changed = [c for c in submission.cells if c.locked in given and (
        _plain(c.source) != _plain(given[c.locked].source) or c.kind != given[c.locked].kind)]
    if not changed:
        return []
    return [Flag("locked_cell_modified", f"{len(changed)} locked (read-only) cell"
                 f"{'s' if len(changed) > 1 else ''} of the template changed, as nbgrader's "
                 "checksums would report", tuple(Evidence(c.id, None, f"locked cell {c.locked!r} "
                                                          "changed") for c in changed[:5]))]


def _best_template_cell(
    norms: list[str], tmpl_code: list[Cell], tmpl_cell_lines: dict[str, list[str]]
) -> Cell | None:
    present = Counter(n for n in norms if n)
    best, best_share = None, 0.0
    for c in tmpl_code:
        lines = tmpl_cell_lines[c.id]
        if not lines:
            continue
        share = sum(1 for n in lines if present[n] > 0) / len(lines)
        if share > best_share:
            best, best_share = c, share
    return best if best_share >= 0.5 else None


def _line_counts(nb: Notebook, lang: str) -> Counter[str]:
    have: Counter[str] = Counter()
    for c in nb.code_cells:
        have.update(n for n in _code_lines(c.source, lang) if n)
    return have


def _tamper_flags(
    tmpl_code: list[Cell],
    tmpl_cell_lines: dict[str, list[str]],
    submission: Notebook,
    lang: str,
    placeholders: tuple[str, ...],
    solution: Notebook | None,
) -> list[Flag]:
    """Given template code (not placeholders, not a cell of prose) that no longer appears
    in the submission."""
    have = _line_counts(submission, lang)
    kept = _line_counts(solution, lang) if solution is not None else None
    flags = []
    for c in tmpl_code:
        if prose_cell(c.source, lang):
            continue  # a question's text in a code cell: prose, no given code
        original = {normalise_code(line, lang): line.strip() for line in c.source.splitlines()}
        given = [
            n
            for n in tmpl_cell_lines[c.id]
            if not _is_placeholder_line(n, placeholders) and (kept is None or kept[n] > 0)
        ]
        if not given:
            continue
        missing = [n for n in given if have[n] == 0]
        if not missing:
            continue
        tests = any(n.startswith(("assert", "stopifnot", "testthat", "expect_")) for n in given)
        if len(missing) == len(given) and not tests:
            continue  # a whole given cell deleted: worth a note, not a tampering flag
        code = "tests_modified" if tests else "template_modified"
        what = "an instructor test cell" if tests else "given template code"
        flags.append(
            Flag(
                code,
                f"{what} was changed: {len(missing)} of {len(given)} given lines are missing",
                tuple(
                    Evidence(c.id, None, f"template line missing: {original.get(m, m)}")
                    for m in missing[:5]
                ),
            )
        )
    return flags
