"""Written answers: find the student's answer under each question and count its words.

The question is located by its text (the rubric's ``question``), not by cell
position. The answer is what the student wrote after it: their own markdown
cells up to the template's next instruction, plus anything they added inside
the question cell itself. Template text and placeholder text never count.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..types import Evidence
from .template import CellOrigin, TemplateMatch, normalise_markdown

_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*", re.UNICODE)
# Markup that is not words: emphasis, code marks, headings, quotes, HTML tags, and
# images (their alt text is not an answer); a link counts by its text.
_MD_MARKUP = re.compile(r"(!\[[^\]]*\]\([^)]*\)|\*\*|__|[*_`#>]|\[([^\]]*)\]\([^)]*\)|<[^>]+>)")


def words(text: str) -> list[str]:
    return _WORD.findall(_MD_MARKUP.sub(lambda m: m.group(2) or " ", text))


@dataclass(frozen=True, slots=True)
class Answer:
    question: str
    located: bool  # the question's cell was found in the submission
    text: str
    word_count: int
    evidence: tuple[Evidence, ...] = ()

    @property
    def answered(self) -> bool:
        return self.word_count > 0


def _strip_placeholders(text: str, placeholders: tuple[str, ...]) -> str:
    for p in sorted(placeholders, key=len, reverse=True):
        text = re.sub(re.escape(p), " ", text, flags=re.IGNORECASE)
    return text


def find_answer(
    match: TemplateMatch, question: str, placeholders: tuple[str, ...],
    others: Sequence[str] = (),
) -> Answer:
    """``others``: the rubric's other questions. A cell of the student's that holds one of
    them (a question cell the student wrote into, a heading of their own) ends this
    answer at that question's line: what follows it answers the other question."""
    key = normalise_markdown(question)
    other_keys = [k for q in others if (k := normalise_markdown(q)) and k != key]
    origins = match.origins
    start = next(
        (i for i, o in enumerate(origins) if o.cell.kind == "markdown" and _asks(o, key)),
        None,
    )
    if start is None:
        return Answer(question, False, "", 0)
    parts: list[tuple[CellOrigin, str]] = []
    q_origin = origins[start]
    if q_origin.is_students:  # an answer typed into the question's own cell
        lines = q_origin.cell.source.splitlines()
        own = next((i for i, line in enumerate(lines, 1) if key in normalise_markdown(line)), 0)
        parts.append((q_origin, _student_lines(q_origin, own,
                                               _question_line(q_origin, other_keys, own))))
    for o in origins[start + 1 :]:
        if o.status == "template" or o.status == "modified":
            if _is_placeholder_cell(o, placeholders):
                continue
            break  # the template's next instruction: the answer region ends
        if o.cell.kind in ("markdown", "raw"):
            if _asks(o, key):
                break
            other = _question_line(o, other_keys)
            parts.append((o, _student_lines(o, 0, other)))
            if other is not None or _holds_instructions(o, placeholders):
                break  # the student wrote into the next question's or instruction's cell
    texts, evidence = [], []
    for o, text in parts:
        clean = _strip_placeholders(text, placeholders)
        if words(clean):
            texts.append(clean.strip())
            evidence.append(Evidence(o.cell.id, None, _excerpt(clean)))
    joined = "\n\n".join(texts)
    return Answer(question, True, joined, len(words(joined)), tuple(evidence))


def _question_line(o: CellOrigin, keys: Sequence[str], after: int = 0) -> int | None:
    """The first line (1-based) after line ``after`` that asks one of the questions
    ``keys`` (normalised), or None."""
    if not keys:
        return None
    return next((i for i, line in enumerate(o.cell.source.splitlines(), 1) if i > after
                 and (n := normalise_markdown(line)) and any(k in n for k in keys)), None)


def _student_lines(o: CellOrigin, after: int, before: int | None) -> str:
    """The student's own lines of a cell between two line numbers (exclusive)."""
    return "\n".join(line for i, line in enumerate(o.cell.source.splitlines(), 1)
                     if i > after and (before is None or i < before) and i in o.student_lines)


def _asks(o: CellOrigin, key: str) -> bool:
    """Whether the cell holds the (normalised) question ``key``. Normalising keeps each
    word of the text whole, so the key's longest word must be in the lower-cased source:
    a cheap test that spares normalising long answers once per question."""
    probe = max(key.split(), key=len, default="")
    return probe in o.cell.source.lower() and key in normalise_markdown(o.cell.source)


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
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
