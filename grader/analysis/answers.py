"""Written answers: find the student's answer under each question and count its words.

The question is located by its text (the rubric's ``question``), not by cell position,
wherever the template put it and whatever the student did to the cell's type: the first
markdown or raw cell where its label or text leads a line, else the first that holds
its text; when none does, the first code cell whose prose holds it (a code cell of plain
text, a comment, a string: ``grader.analysis.answer_parts``). The answer is what the
student wrote in the question's *region*: from the question's line in its cell, through
the cells after it, up to the template's next instruction (a template cell that is not
a placeholder). A student cell that keeps template text or that a later question's
label opens is the last one read; so is a given code cell right under the question (only
placeholders between) that the student commented: the question is about it. In that
region count
- the student's own lines of markdown and raw cells, and of code cells that hold only
  prose (``grader.analysis.prose_cells``: an answer typed as plain text into a code
  cell); template and placeholder text never count, nor the template's line a student's
  line starts with ("**YOUR OBSERVATIONS:** The data shows ...");
- the prose of code cells: comments that are not code and strings written for a reader
  (``grader.analysis.code_prose`` states the rules). A comment counts when its text is
  not one of the template's comments; a string when its line is the student's.

A cell holding several questions' answers is split at their labels
(``grader.analysis.answer_labels``): each question takes the parts its labels open, and
text before the first label goes to the question asked last before that label. A cell
without labels stays whole. Outside its region a question also takes the parts of the
student's cells that a strong label of it opens (answers gathered in one cell after all
the questions, or written under an earlier question), so a question whose cell was
deleted is still found by its label. Bare labels (``1.``, ``b)``) count only under a
question cell that asks several questions numbered that way: elsewhere they are the
student's numbered lists.

``Answer.text`` keeps whole source lines as a reader sees them (``grader.analysis.visible``:
invisible characters and hidden HTML removed); ``word_count`` counts only the answer's
words in them, with ``visible.words``, the grader's one word count: labels, the question's
own text, comment marks and the code around a printed string are left out, and a
sentence the answer repeats word for word counts once. Lines the
caller ``excluded`` (the blocks the injection detector flagged) are neither: text aimed
at the grader is never an answer, and ``set_aside`` says how many lines were left out.
``Answer.evidence`` names each cell the text came from, with the first line used when
only part of the cell was (a split cell, a code cell, the question's own cell).
"""

from __future__ import annotations

import re
from collections.abc import Sequence, Set
from dataclasses import dataclass

from ..types import Evidence, Notebook
from .answer_parts import Line, Questions, questions_of
from .answer_parts import strip_placeholders as _strip_placeholders
from .template import CellOrigin, TemplateMatch
from .visible import visible_text, words

__all__ = ["Answer", "find_answer", "words"]

@dataclass(frozen=True, slots=True)
class Answer:
    question: str
    located: bool  # the question's cell (or a part labelled with it) was found
    text: str
    word_count: int
    evidence: tuple[Evidence, ...] = ()
    set_aside: int = 0  # lines of the region left out: text aimed at the grader

    @property
    def answered(self) -> bool:
        return self.word_count > 0


@dataclass(frozen=True, slots=True)
class _Part:
    """What one cell gives to an answer: its lines, each from where the answer starts."""

    origin: CellOrigin
    lines: tuple[tuple[Line, int], ...]
    whole: bool  # the cell's student lines, unsplit


def find_answer(
    match: TemplateMatch, question: str, placeholders: tuple[str, ...],
    others: Sequence[str] = (), *, template: Notebook | None = None,
    excluded: Set[tuple[str, int]] = frozenset(),
) -> Answer:
    """``others``: the rubric's other questions, whose lines and labels end this answer
    and whose parts of a shared cell are not this answer's. ``template``: the
    assignment's template, whose comments are never the student's prose (without it,
    the template cells the match paired stand in) and whose language reads the code.
    ``excluded``: (cell id, line) of text that is not an answer (the blocks the
    injection detector flagged): it is neither counted nor part of ``text``."""
    group, me = questions_of(match, question, others, placeholders, template)
    start = group.cells[me]
    found: list[_Part] = []
    visited: set[int] = set()
    if start is not None:
        found, visited = _region(group, me, start, placeholders)
    found += _labelled_elsewhere(group, me, visited)
    if start is None and not found:
        return Answer(question, False, "", 0)
    return _assemble(question, found, placeholders, excluded)


def _region(group: Questions, me: int, start: int, placeholders: tuple[str, ...]
            ) -> tuple[list[_Part], set[int]]:
    origins = group.origins
    weak = group.weak(start)
    found: list[_Part] = []
    q_origin = origins[start]
    if q_origin.is_students:  # an answer typed into the question's own cell
        lines = group.lines(start)
        labels = [group.label(line, weak) for line in lines]
        owner = None if any(lab and lab[0] == me for lab in labels) else me
        taken = []
        for line, lab in zip(lines, labels, strict=True):
            owner = lab[0] if lab else owner
            if owner == me and line.students:
                taken.append((line, lab[1] if lab else 0))
        found.append(_Part(q_origin, tuple(taken), False))
    visited = {start}
    for idx in range(start + 1, len(origins)):
        o = origins[idx]
        code = o.holds_code  # a code cell of prose reads as markdown
        owned = code and any(line.students for line in group.lines(idx))
        given = code and o.status != "student" and group.has_code(idx)
        if o.status != "student" and (not owned or (given and len(visited) > 1)):
            if _is_placeholder_cell(o, placeholders):
                continue
            break  # the template's next instruction: the region ends
        visited.add(idx)
        taken, labelled = _split(group, me, group.lines(idx), weak)
        found.append(_Part(o, tuple(taken), not labelled and not code))
        later = any(group.cells[j] is not None and group.cells[j] > start  # type: ignore[operator]
                    for j in labelled if j != me)
        if later or given or (not code and _holds_instructions(o, placeholders)):
            break  # the student wrote into the next question's, instruction's or given cell
    return found, visited


def _split(group: Questions, me: int, lines: Sequence[Line], weak: frozenset[int]
           ) -> tuple[list[tuple[Line, int]], set[int]]:
    """This question's lines of a cell in its region, and the questions labelled there."""
    labels = [group.label(line, weak) for line in lines]
    labelled = {lab[0] for lab in labels if lab}
    if not labelled:
        return [(line, 0) for line in lines if line.students], labelled
    owner: int | None = None
    mine: list[tuple[Line, int]] = []
    preamble: list[tuple[Line, int]] = []
    for line, lab in zip(lines, labels, strict=True):
        owner = lab[0] if lab else owner
        if line.students and owner is None:
            preamble.append((line, 0))
        elif line.students and owner == me:
            mine.append((line, lab[1] if lab else 0))
    if me in labelled:
        return mine, labelled
    first = next(lab[0] for lab in labels if lab)
    return (preamble if group.asked_last_before(me, first, labelled) else []), labelled


def _labelled_elsewhere(group: Questions, me: int, visited: set[int]) -> list[_Part]:
    """The parts of the student's cells outside the region that a strong label of this
    question opens; its text opens one only where it leads a line (template lines that
    merely mention a question, in an intro the student edited, open nothing)."""
    found = []
    for idx, o in enumerate(group.origins):
        if idx in visited or not any(line.students for line in group.lines(idx)):
            continue
        owner = None
        taken: list[tuple[Line, int]] = []
        for line in group.lines(idx):
            lab = group.label(line, frozenset(), leading=True)
            owner = lab[0] if lab else owner
            if owner == me and line.students:
                taken.append((line, lab[1] if lab else 0))
        if taken:
            found.append(_Part(o, tuple(taken), False))
    return found


def _assemble(question: str, found: list[_Part], placeholders: tuple[str, ...],
              excluded: Set[tuple[str, int]]) -> Answer:
    texts, counted, evidence = [], [], []
    set_aside = 0
    for part in found:
        cell_id = part.origin.cell.id
        lines = [(line, at) for line, at in part.lines if (cell_id, line.number) not in excluded]
        set_aside += len(part.lines) - len(lines)
        if not lines:
            continue
        source = _strip_placeholders("\n".join(line.source for line, _ in lines), placeholders)
        own = _strip_placeholders("\n".join(line.text[max(at, line.own_from):]
                                            for line, at in lines), placeholders)
        if words(own):
            texts.append(source.strip())
            counted.append(own.strip())
            whole = part.whole and len(lines) == len(part.lines)
            evidence.append(Evidence(cell_id, None if whole else lines[0][0].number,
                                     _excerpt(own)))
    return Answer(question, True, "\n\n".join(texts), _count("\n\n".join(counted)),
                  tuple(evidence), set_aside)


_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n")


def _count(text: str) -> int:
    """The answer's words, each sentence counted once: a sentence said again (the same
    words, case aside) adds nothing to the answer, however often it is pasted."""
    seen: set[tuple[str, ...]] = set()
    total = 0
    for sentence in _SENTENCE_END.split(text):
        said = tuple(w.casefold() for w in words(sentence))
        if said and said not in seen:
            seen.add(said)
            total += len(said)
    return total


def _holds_instructions(o: CellOrigin, placeholders: tuple[str, ...]) -> bool:
    """A student cell that keeps template text other than placeholders."""
    lines = o.cell.source.splitlines()
    return any(
        i not in o.student_lines and words(_strip_placeholders(line, placeholders))
        for i, line in enumerate(lines, 1)
    )


def _is_placeholder_cell(o: CellOrigin, placeholders: tuple[str, ...]) -> bool:
    return not words(_strip_placeholders(o.cell.source, placeholders))


def _excerpt(text: str, limit: int = 160) -> str:
    flat = " ".join(visible_text(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
