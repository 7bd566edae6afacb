"""The rubric's questions in one submission, and the lines each cell gives to answers.

``Questions`` holds, for the rubric's questions: the cell that asks each (the first
markdown or raw cell where its label or text leads a line, else the first that holds its
text as whole words; when none does, the first code cell whose prose holds it: a code
cell of prose, a comment, a string), its label (``grader.analysis.answer_labels``) and
where it is asked, so that answers can be split between questions; and each cell's
lines and their labels, read once for all the questions of a submission:
- a markdown or raw cell, or a code cell that holds only prose
  (``grader.analysis.prose_cells``), gives every line, marked as the student's when the
  template does not hold it; a student's line that starts with a line of the template
  ("**YOUR OBSERVATIONS:** The data shows ...") is the student's from where that ends;
- a code cell gives the lines that hold prose (``grader.analysis.code_prose``), marked
  as the student's when the prose is: a comment whose text (placeholders removed) is
  not one of the template's comments; a string whose first line is a line of code the
  student wrote. Lines of the template's prose stay, unmarked, for their labels. The
  template match compares code without comments, so a given cell the student only
  commented still reads as the template's: its comments are read all the same.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..types import Notebook
from . import rlang
from .answer_labels import QuestionLabel, after_text, find_text, line_question, question_label
from .code_prose import comment_bodies, prose_lines
from .template import CellOrigin, TemplateMatch, normalise_code, normalise_markdown
from .visible import visible_text

__all__ = ["Line", "Questions", "asks", "questions_of", "strip_placeholders"]

_LETTER = re.compile(r"[^\W\d_]", re.UNICODE)
_R_SPECIAL = re.compile(r"%[^%\s]+%")  # %>%, %in%: R's own operators


@dataclass(frozen=True, slots=True)
class Line:
    """One line of a cell as an answer sees it."""

    number: int  # 1-based line in the cell
    source: str  # the line as written
    text: str  # what it says: the markdown line, or the prose of a code line
    students: bool  # the student wrote it
    own_from: int = 0  # where the student's own text starts in ``text``: past the template's


class Questions:
    """The rubric's questions, as asked in one submission (``questions_of`` builds it
    once for all of them)."""

    def __init__(self, match: TemplateMatch, texts: Sequence[str],
                 placeholders: tuple[str, ...], template: Notebook | None) -> None:
        self.origins = match.origins
        self.placeholders = placeholders
        self._template_starts: dict[str, list[str]] = {}  # by first word, longest first
        for t in sorted((t for t in match.template_text if _prefix_worthy(t)), key=len,
                        reverse=True):
            self._template_starts.setdefault(t.split(" ", 1)[0], []).append(t)
        sources = tuple(o.cell.source for o in self.origins if o.holds_code)
        self.language = template.language if template is not None else _guess_language(sources)
        if template is not None:
            given = tuple(c.source for c in template.cells if c.kind == "code")
        else:  # the template cells the match paired
            given = tuple(dict.fromkeys(o.template_cell.source for o in self.origins
                                        if o.template_cell is not None
                                        and o.template_cell.kind == "code"))
        self.template_comments = _comment_keys(given, self.language, placeholders)
        self._lines: dict[int, tuple[Line, ...]] = {}
        self._labels: dict[tuple[Line, frozenset[int], bool], tuple[int, int] | None] = {}
        keys = [normalise_markdown(t) for t in texts]
        mentioned = [self._cell_of(k) for k in keys]
        labels = [question_label(t, self._line_of(k, c))
                  for t, k, c in zip(texts, keys, mentioned, strict=True)]
        self.cells = [self._asked_at(q, c) for q, c in zip(labels, mentioned, strict=True)]
        self.labels = tuple(q if c == m else question_label(t, self._line_of(q.key, c))
                            for t, q, c, m in zip(texts, labels, self.cells, mentioned,
                                                  strict=True))
        self.order: list[tuple[int, int] | None] = [
            None if c is None else (c, find_text(self._normalised(c), k))
            for c, k in zip(self.cells, keys, strict=True)]

    def weak(self, start: int) -> frozenset[int]:
        """The questions whose bare labels count in the region of the cell ``start``:
        those it asks together, when the template numbers them with bare labels."""
        shared = [j for j, c in enumerate(self.cells) if c == start]
        return frozenset(j for j in shared if self.labels[j].bare) if len(shared) > 1 \
            else frozenset()

    def label(self, line: Line, weak: frozenset[int], *, leading: bool = False
              ) -> tuple[int, int] | None:
        """(question, where its answer starts in ``line.text``) when the line starts one.
        ``leading``: a question's text must lead the line even on a template line."""
        key = (line, weak, leading)
        if key not in self._labels:
            self._labels[key] = line_question(line.text, self.labels, weak=weak,
                                              students=line.students or leading)
        return self._labels[key]

    def asked_last_before(self, me: int, first: int, labelled: set[int]) -> bool:
        """Whether question ``me`` is the last question asked before ``first`` among those
        not labelled in a cell: the text before the cell's first label answers it."""
        if self.order[me] is None:
            return False
        limit = self.order[first]
        before = [(at, j) for j, at in enumerate(self.order) if at is not None
                  and j not in labelled and (limit is None or at < limit)]
        return bool(before) and max(before)[1] == me

    def lines(self, idx: int) -> tuple[Line, ...]:
        if idx not in self._lines:
            o = self.origins[idx]
            self._lines[idx] = self._code_lines(o) if o.holds_code else tuple(
                Line(i, line, line, mine, self._past_template(line) if mine else 0)
                for i, line in enumerate(o.cell.source.splitlines(), 1)
                for mine in (i in o.student_lines,))
        return self._lines[idx]

    def has_code(self, idx: int) -> bool:
        """Whether a code cell holds code, not only comments or prose."""
        o = self.origins[idx]
        return o.holds_code and bool(normalise_code(o.cell.source, self.language))

    def _past_template(self, line: str) -> int:
        """Where a student's line goes on past a line of the template it starts with."""
        norm = normalise_markdown(line)
        known = next((t for t in self._template_starts.get(norm.split(" ", 1)[0], ())
                      if find_text(norm, t) == 0), None)
        return after_text(line, known) if known else 0

    def _code_lines(self, o: CellOrigin) -> tuple[Line, ...]:
        source = o.cell.source.splitlines()
        by_line: dict[int, list[tuple[str, bool]]] = {}
        for p in prose_lines(o.cell.source, self.language):
            if p.kind == "comment":
                key = _comment_key(p.text, self.placeholders)
                owned = bool(key) and key not in self.template_comments
            else:
                owned = p.start in o.student_lines
            by_line.setdefault(p.line, []).append((p.text, owned))
        out = []
        for n, pieces in sorted(by_line.items()):
            owned = [text for text, mine in pieces if mine]
            text = " ".join(owned or [text for text, _ in pieces])
            out.append(Line(n, source[n - 1] if n <= len(source) else text, text, bool(owned)))
        return tuple(out)

    def _normalised(self, idx: int) -> str:
        return normalise_markdown(self.origins[idx].cell.source)

    def _asked_at(self, label: QuestionLabel, mentioned: int | None) -> int | None:
        """The first cell that asks the question (its label or text leads a line), else
        the first that mentions it: an intro that names "Question 1 and Question 2"
        does not ask them."""
        if mentioned is None:
            return None
        return next((i for i, o in enumerate(self.origins) if i >= mentioned
                     and o.cell.kind != "code" and asks(o, label.key)
                     and any(line_question(line, (label,), students=True)
                             for line in o.cell.source.splitlines())), mentioned)

    def _cell_of(self, key: str) -> int | None:
        """The cell that asks the question: one whose line the question's text leads
        (a markdown or raw cell first, then a code cell's prose: "**YOUR OBSERVATIONS:**"
        typed into an R cell), else the first markdown or raw cell that holds the text
        (a heading "Part 3: Your observations"), else the first code cell whose prose does."""
        if not key:
            return None

        def prose(i: int) -> list[str]:
            return [normalise_markdown(line.text) for line in self.lines(i)]

        def text_cells() -> list[int]:
            return [i for i, o in enumerate(self.origins)
                    if o.cell.kind != "code" and asks(o, key)]

        def code_cells() -> list[int]:
            return [i for i, o in enumerate(self.origins) if o.cell.kind == "code"
                    and asks(o, key)]

        def leads(lines: list[str]) -> bool:
            return any(find_text(line, key) == 0 for line in lines)

        texts, codes = text_cells(), code_cells()
        for i in texts:
            if leads([normalise_markdown(x) for x in self.origins[i].cell.source.splitlines()]):
                return i
        for i in codes:
            if leads(prose(i)):
                return i
        if texts:
            return texts[0]
        return next((i for i in codes if find_text(" ".join(prose(i)), key) >= 0), None)

    def _line_of(self, key: str, cell: int | None) -> str | None:
        if cell is None:
            return None
        return next((line for line in self.origins[cell].cell.source.splitlines()
                     if find_text(normalise_markdown(line), key) >= 0), None)


class _Same:
    """A cache key that is its object itself (hashed and compared by identity); the
    cache holding it keeps the object alive, so its id is never reused meanwhile."""

    __slots__ = ("obj",)

    def __init__(self, obj: object) -> None:
        self.obj = obj

    def __hash__(self) -> int:
        return id(self.obj)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.obj is self.obj


def questions_of(match: TemplateMatch, question: str, others: Sequence[str],
                 placeholders: tuple[str, ...], template: Notebook | None
                 ) -> tuple[Questions, int]:
    """The questions of a submission, read once for all of a rubric's questions, and the
    index of ``question`` among them."""
    by_key = {normalise_markdown(q): q for q in (*others, question)}
    texts = tuple(sorted(by_key.values()))
    group = _questions(_Same(match), texts, placeholders, _Same(template))
    return group, texts.index(by_key[normalise_markdown(question)])


@functools.lru_cache(maxsize=4)
def _questions(match: _Same, texts: tuple[str, ...], placeholders: tuple[str, ...],
               template: _Same) -> Questions:
    return Questions(match.obj, texts, placeholders, template.obj)  # type: ignore[arg-type]


def asks(o: CellOrigin, key: str) -> bool:
    """Whether a cell holds the (normalised) question ``key`` as whole words. The key's
    longest word must be in the lower-cased source: a cheap test that spares normalising
    long answers once per question."""
    probe = max(key.split(), key=len, default="")
    return probe in o.cell.source.lower() and find_text(normalise_markdown(o.cell.source),
                                                        key) >= 0


def strip_placeholders(text: str, placeholders: tuple[str, ...]) -> str:
    """``text`` as a reader sees it (``visible_text``), without the placeholders."""
    text = visible_text(text)
    for p in sorted(placeholders, key=len, reverse=True):
        text = re.sub(re.escape(p), " ", text, flags=re.IGNORECASE)
    return text


def _prefix_worthy(norm: str) -> bool:
    """A template line that a student's line may start with and go on after: a label
    ("your observations:"), a question, or words enough not to be a sentence's start."""
    return bool(_LETTER.search(norm)) and (norm.endswith((":", "?")) or len(norm.split()) > 2)


@functools.lru_cache(maxsize=1 << 14)
def _comment_key(text: str, placeholders: tuple[str, ...]) -> str:
    """A comment's text for comparing with the template's: "" when nothing but
    placeholders and marks is left."""
    key = normalise_markdown(strip_placeholders(text, placeholders))
    return key if _LETTER.search(key) else ""


@functools.lru_cache(maxsize=32)
def _comment_keys(sources: tuple[str, ...], language: str,
                  placeholders: tuple[str, ...]) -> frozenset[str]:
    return frozenset(k for s in sources for body in comment_bodies(s, language)
                     if (k := _comment_key(body, placeholders)))


@functools.lru_cache(maxsize=256)
def _guess_language(sources: tuple[str, ...]) -> str:
    """R when a code cell uses R's own syntax (``<-``, ``|>``, ``%>%``, ``function(``),
    else Python: for a caller that does not pass the template."""
    for source in sources:
        toks, _ = rlang.tokenize(source)
        for i, t in enumerate(toks):
            if t.kind == "op" and (t.text in ("<-", "<<-", "|>") or _R_SPECIAL.fullmatch(t.text)):
                return "r"
            if t.kind == "kw" and t.text == "function" and toks[i + 1 : i + 2] and \
                    toks[i + 1].text == "(":
                return "r"
    return "python"
