"""Question labels: which rubric question a line of a written answer starts.

Students answer several questions in one cell, each part under a label: ``Q1.``,
``Q1:``, ``Question 2``, ``2.4``, ``1.``, ``1)``, ``a)``, ``(b)``, ``**Q3**``, a bold or
heading line. A question's own label comes from its text (the rubric's ``question``:
"Question 8.1: Data Quality Impact" is question 8.1, titled "Data Quality Impact") or,
when its text has none, from how the template writes it (the label just before the
question's text on its line: "1. How many rows? 2. Which region?").

A line starts a question's part when
- it holds the question's text (on a line of the template's, anywhere; on a line the
  student wrote, at its start, after a label, or in a heading or bold line); when a line
  names several questions, the last one named starts there;
- or it starts with a label whose number (or letter) is the question's, and whose word,
  if both have one, is the question's (``Task 2`` is not ``Question 2``). A label with a
  word (``Q2:``, ``Part 3.``; a word label needs ``.``, ``:``, ``)``, a dash, a closing
  bold mark or the end of the line after its number), in a heading (``## 2.``), or with
  a multi-level number (``2.4``) is strong. A bare label (``2.``, ``b)``, ``(b)``) is
  weak: numbered lists look the same, so a caller accepts it only where the template
  itself numbers questions that way. A number two questions share marks neither;
- or it is a heading or bold line that holds the question's title.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from .template import normalise_markdown

__all__ = ["LineLabel", "QuestionLabel", "find_text", "line_question", "parse_label"]
__all__ += ["after_text", "question_label"]

_WORDS = {"question": "question", "questions": "question", "ques": "question", "q": "question",
          "part": "part", "exercise": "exercise", "ex": "exercise", "task": "task",
          "problem": "problem", "prob": "problem"}
_LEAD = re.compile(r"\s*(?:[-+*]\s+)?(?:>\s*)*")  # a bullet, quote marks
_HEADING = re.compile(r"#{1,6}\s*")
_BOLD = re.compile(r"(?:\*\*|__)\s*")
_WORD_ID = re.compile(
    r"(?P<word>questions?|ques|q|part|exercise|ex|task|problem|prob)\s*\.?\s*(?:no\.?\s*|#\s*)?"
    r"(?P<id>\d+(?:\.\d+)*(?:\s?(?:\([a-z]\)|[a-z])(?![a-z\d]))?)", re.IGNORECASE)
_BARE_ID = re.compile(r"(?:\((?P<paren>\d+(?:\.\d+)*[a-z]?|[a-z])\)|(?P<id>\d+(?:\.\d+)*[a-z]?|"
                      r"[a-z])(?P<close>[.):]))(?![\d\w])", re.IGNORECASE)
_DOTTED = re.compile(r"(?P<id>\d+(?:\.\d+)+)(?=[\s:.)]|$)")
_AFTER = re.compile(r"(?:\s*(?:\*\*|__))?\s*[.:)\-–—]?\s*(?:\*\*|__)?")
_TAIL_LABEL = re.compile(
    r"(?:^|\s)((?:questions?|ques|q|part|exercise|ex|task|problem|prob)\s*\.?\s*\d+(?:\.\d+)*"
    r"[a-z]?|\(?\d+(?:\.\d+)*[a-z]?[.):]|\(?[a-z][.):]|\([a-z\d]+\))\s*[:.)–—]?\s*$",
    re.IGNORECASE)
_NOISE = r"[\s#>*_`~|\-]+"


@dataclass(frozen=True, slots=True)
class LineLabel:
    """A label at the start of a line."""

    id: str  # normalised: "2", "2.4", "3a", "b"
    word: str | None  # "question", "part", "exercise", "task", "problem"
    strong: bool
    rest: int  # where the text after the label starts in the line


@dataclass(frozen=True, slots=True)
class QuestionLabel:
    """How a rubric question is recognised in an answer."""

    key: str  # the question's text, normalised
    id: str | None = None
    word: str | None = None
    title: str | None = None  # normalised text after the label: "data quality impact"
    bare: bool = False  # the template numbers it with a bare label ("1.", "b)")
    label_only: bool = False  # its text is only a label ("Question 1")


def parse_label(line: str) -> LineLabel | None:
    """The label a line starts with, or None."""
    pos = _LEAD.match(line).end()  # type: ignore[union-attr]
    heading = _HEADING.match(line, pos)
    pos = heading.end() if heading else pos
    bold = _BOLD.match(line, pos)
    pos = bold.end() if bold else pos
    word = None
    if m := _WORD_ID.match(line, pos):
        after = _AFTER.match(line, m.end()).group()  # type: ignore[union-attr]
        if not (after.strip() or heading or m.end() + len(after) == len(line)):
            return None  # "Question 1 showed that ...": no label
        word, ident, end = _WORDS[m["word"].lower()], m["id"], m.end() + len(after)
    elif m := _BARE_ID.match(line, pos):
        ident, end = m["paren"] or m["id"], m.end()
        end += len(_AFTER.match(line, end).group())  # type: ignore[union-attr]
    elif m := _DOTTED.match(line, pos):
        ident, end = m["id"], m.end()
        end += len(_AFTER.match(line, end).group())  # type: ignore[union-attr]
    else:
        return None
    ident = re.sub(r"[\s()]", "", ident).lower()
    return LineLabel(ident, word, word is not None or bool(heading) or "." in ident, end)


def question_label(question: str, line: str | None = None) -> QuestionLabel:
    """A question's label, from its text or else from ``line``, the line of the
    notebook that asks it."""
    key = normalise_markdown(question)
    own = parse_label(question.strip())
    if own is not None:
        title = normalise_markdown(question.strip()[own.rest:]).strip(" :.-–—")
        return QuestionLabel(key, own.id, own.word, title or None, own.word is None, not title)
    if line is None:
        return QuestionLabel(key)
    norm = normalise_markdown(line)
    at = find_text(norm, key)
    tail = _TAIL_LABEL.search(norm[:at]) if at > 0 else None
    found = parse_label(tail.group(1)) if tail else None
    if found is None:
        return QuestionLabel(key)
    return QuestionLabel(key, found.id, found.word, None, found.word is None)


def line_question(line: str, labels: Sequence[QuestionLabel], *, students: bool,
                  weak: Collection[int] = ()) -> tuple[int, int] | None:
    """(index in ``labels``, where that question's answer starts in the line) when the
    line starts a question's part, else None. ``students``: the student wrote the line
    (the question's text then must lead it); ``weak``: the questions whose bare labels
    count here."""
    norm = normalise_markdown(line)
    if not norm:
        return None
    label = parse_label(line)
    marked = _marked(line)
    hits = [(at, j) for j, q in enumerate(labels) if q.key and (at := find_text(norm, q.key)) >= 0
            and (not students or (not q.label_only and (marked or _leads(norm, at))))]
    if hits:
        j = max(hits)[1]
        return j, _after_text(line, labels[j].key, 0)
    if label is not None:
        same = [j for j, q in enumerate(labels) if q.id == label.id
                and (q.word is None or label.word is None or q.word == label.word)]
        if len(same) == 1 and (label.strong or same[0] in weak):
            return same[0], max(label.rest, _after_text(line, labels[same[0]].key, label.rest))
    if marked:
        titled = [(at, j) for j, q in enumerate(labels) if q.title and (
            (at := find_text(norm, q.title)) >= 0 and (len(q.title.split()) > 1 or norm.strip(
                " :.") == q.title))]
        if titled:
            j = max(titled)[1]
            return j, _after_text(line, labels[j].title or "", 0)
    return None


def after_text(line: str, norm: str) -> int:
    """The offset just past ``norm`` (normalised text that starts the line) in the raw
    line, markup and a closing colon included; 0 when the line does not hold it."""
    return _after_text(line, norm, 0)


def find_text(norm: str, key: str) -> int:
    """Where ``key`` occurs in ``norm`` as whole words ("question 1" is not in
    "question 10" nor in "question 1.2"), or -1."""
    at = norm.find(key)
    while at >= 0:
        end = at + len(key)
        before_ok = at == 0 or not key[0].isalnum() or not norm[at - 1].isalnum()
        after_ok = end == len(norm) or not key[-1].isalnum() or not (
            norm[end].isalnum() or (norm[end] == "." and norm[end + 1 : end + 2].isdigit()))
        if before_ok and after_ok:
            return at
        at = norm.find(key, at + 1)
    return -1


def _marked(line: str) -> bool:
    """A heading line, or one that starts in bold."""
    pos = _LEAD.match(line).end()  # type: ignore[union-attr]
    return line.startswith(("#", "**", "__"), pos)


def _leads(norm: str, at: int) -> bool:
    """Whether the text at ``at`` leads the line, alone or after a label."""
    before = norm[:at].strip()
    label = parse_label(before + " ") if before else None
    return not before or (label is not None and label.rest >= len(before))


def _after_text(line: str, text: str, start: int) -> int:
    """The offset just past ``text`` (normalised) in the raw line from ``start``, markup
    and a closing colon included; ``start`` when the line does not hold it."""
    if not text:
        return start
    pattern = _NOISE.join(re.escape(part) for part in text.split())
    m = re.compile(pattern, re.IGNORECASE).search(line, start)
    if m is None:
        return start
    return m.end() + len(_AFTER.match(line, m.end()).group())  # type: ignore[union-attr]
