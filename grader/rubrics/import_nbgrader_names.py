"""What an imported nbgrader item is called, in nbgrader's own words.

nbgrader's notebooks (its user guide's problem sets, and the courses written like them)
open each part with a horizontal rule and a heading, "---" then "## Part A (2 points)",
and write their questions with LaTeX ("for $n=10$") and code ticks. A criterion's title
is never made of that markup: it is the nearest heading above the item, else the
question's text without markup, else the item's grade id; a heading's point count that
is not the criterion's own ("Part A (2 points)" over one of its two 1-point test cells)
is left out of the title, so a letter never reads "Part A (2 points) — 1 / 1"; criteria
that would share a title are told apart by their grade ids (``unique_titles``).

Two forms of a line are made here: ``plain`` (markup gone: the words a reader sees) and
``findable`` (the text up to the first LaTeX, link, image or HTML, which the grader's
answer and task lookups find in the template's markdown as written).
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from .schema import Criterion

__all__ = ["cell_names", "findable", "is_rule", "names_above", "own_points", "plain",
           "unique_titles"]

_RULE = re.compile(r"^\s{0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,}|=+)$"
                   r"|^\s*<hr\b[^>]*>\s*$", re.IGNORECASE)
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_HTML = re.compile(r"</?[a-zA-Z][^>]*>")
_LATEX = re.compile(r"\$\$.+?\$\$|\$[^$\n]+\$|\\\(.+?\\\)|\\\[.+?\\\]")
# where the findable text of a line stops: LaTeX, a link or image, HTML, a lone `$`
_HARD = re.compile(r"\$|\\\(|\\\[|!?\[[^\]]*\]\(|</?[a-zA-Z]")
# emphasis marks and code ticks go; an underscore inside a name (sorted_v) stays
_EMPHASIS = re.compile(r"[*`]+|(?<!\w)_+|_+(?!\w)")
_SENTENCE_END = re.compile(r"[.?!](?=\s)")
_TITLE_MAX = 100


def is_rule(line: str) -> bool:
    """A horizontal rule (``---``, ``***``, ``___``, ``<hr>``) or a setext underline."""
    return bool(_RULE.match(line))


def _words(text: str) -> str:
    text = _EMPHASIS.sub("", text.strip().lstrip("#"))
    return " ".join(text.split())


def plain(line: str) -> str:
    """A line of markdown as words: heading marks, emphasis, code ticks, images, link
    targets, HTML and LaTeX gone; "" for a rule or a line of markup only."""
    if is_rule(line):
        return ""
    text = _LATEX.sub(" ", _HTML.sub(" ", _LINK.sub(r"\1", _IMAGE.sub(" ", line))))
    text = re.sub(r"\s+([.,;:?!])", r"\1", _words(text))
    return text if any(ch.isalnum() for ch in text) else ""


def findable(line: str) -> str:
    """The line's words up to its first LaTeX, link, image or HTML (so the grader finds
    them in the template's markdown), without a closing colon; "" when none lead it."""
    if is_rule(line):
        return ""
    cut = _HARD.search(line)
    head = line[: cut.start()] if cut else line
    text = _words(head)
    if cut:  # stop at the last whole sentence before the markup, when there is one
        ends = list(_SENTENCE_END.finditer(text + " "))
        if ends:
            text = text[: ends[-1].end()]
    text = text.rstrip(" :;,-")
    if len(text) > _TITLE_MAX:
        text = text[:_TITLE_MAX].rsplit(" ", 1)[0]
    return text if sum(ch.isalpha() for ch in text) >= 2 else ""


def cell_names(markdown: str) -> tuple[str, str]:
    """(the last heading of a markdown cell, its first line of findable prose)."""
    heading = prose = ""
    for line in markdown.splitlines():
        m = _HEADING.match(line)
        if m:
            heading = findable(m.group(1)) or heading
        elif not prose:
            prose = findable(line)
    return heading, prose


def names_above(cells: Sequence[Any], index: int,
                is_answer: Callable[[Any], bool]) -> tuple[str, str]:
    """(the nearest heading above cell ``index``, the question of the nearest markdown
    cell above it: its heading, else its first line of prose). Cells the students answer
    in (``is_answer``) are no question; cells of markup only are skipped."""
    heading = near = ""
    for cell in reversed(cells[:index]):
        if cell.cell_type != "markdown" or is_answer(cell):
            continue
        head, prose = cell_names(cell.source)
        if not near:
            near = head or prose
        if head:
            heading = head
            break
    return heading, near


_POINTS = re.compile(r"\s*\((\d+(?:\.\d+)?)\s+points?\)", re.IGNORECASE)


def own_points(title: str, points: float) -> str:
    """``title`` without a point count that is not ``points`` ("Part A (2 points): tests"
    of a 1-point criterion is "Part A: tests")."""
    return _POINTS.sub(lambda m: m.group(0) if float(m.group(1)) == points else "", title)


def unique_titles(criteria: list[Criterion], grade_ids: list[str]) -> list[Criterion]:
    """The criteria, each titled with only its own point count (``own_points``), and
    each title that more than one shares suffixed with its grade id."""
    criteria = [dataclasses.replace(c, title=own_points(c.title, c.points)) for c in criteria]
    count = Counter(c.title for c in criteria)
    return [dataclasses.replace(c, title=f"{c.title} ({gid})") if count[c.title] > 1 else c
            for c, gid in zip(criteria, grade_ids, strict=True)]
