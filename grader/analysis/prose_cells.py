"""Code cells that hold only prose: text typed into a code cell as if it were markdown.

Templates put a question's text in a code cell ("**YOUR OBSERVATIONS:**" alone in an R
cell) and students type their answer there as plain text. Such a cell is no code: its
text is read as markdown is (``grader.analysis.template``, ``answer_parts``), it is not
the student's code, and its failure to run is nobody's error.

A code cell is prose when
- it does not parse in the notebook's language (Python's ``ast``; ``rlang``'s parser), and
- each of its non-blank lines is a comment, a line of the template that holds prose (a
  question written as a printed or bare string: ``given``), or a line that is not code:
  with markdown's marks removed (``**``, ``__``, backticks, a leading bullet or quote,
  trailing punctuation), ``code_prose.looks_like_code`` does not call it code; and
- at least one line is a sentence or a label: three words in a row outside quotes
  (``code_prose.reads_as_prose``), or words ending in a colon ("YOUR OBSERVATIONS:"),
  on a line that holds no call (``name(``), arrow or pipe (``<-``, ``|>``, ``%>%``).
So code with a slip (``ggplot(df aes(x))``, ``x = 5 y = 6``) stays code and is charged
when it fails, and so does a cell that mixes prose with a line of code.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from ..pyast import parse
from . import rlang
from .code_prose import looks_like_code, prose_lines, reads_as_prose
from .facts import normalise_code

__all__ = ["given_prose_lines", "prose_cell"]

_MARKS = re.compile(r"\*\*|\*(?=\w)|(?<=\w)\*|(?<!\w)__|__(?!\w)|`")
_LEAD = re.compile(r"^\s*(?:(?:[-*+>])\s+)+")
_LABEL = re.compile(r"[^\W\d_][\w'’ ]*:", re.UNICODE)
_QUOTED = re.compile(r"\"[^\"\n]*\"|(?<!\w)'[^'\n]*'(?!\w)")
_CODE_MARK = re.compile(r"(?<![\w.])[^\W\d][\w.]*\(|<<?-|\|>|%[^%\s]*%")


@functools.lru_cache(maxsize=1 << 12)
def prose_cell(source: str, language: str, given: frozenset[str] = frozenset()) -> bool:
    """Whether a code cell holds only prose (see the module). ``given``: the normalised
    template lines that hold prose as strings (``given_prose_lines``)."""
    lang = language.strip().lower()
    sentence = False
    for line in source.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        if given and normalise_code(text, lang) in given:
            continue
        verdict = _line_verdict(text, lang)
        if verdict == "code":
            return False
        sentence = sentence or verdict == "sentence"
    return sentence and not _parses(source, lang)


def given_prose_lines(sources: Iterable[str], language: str) -> frozenset[str]:
    """The normalised lines of the template's code cells (``sources``) that start a prose
    string: a question the template prints or states as a string."""
    lang = language.strip().lower()
    out = set()
    for source in sources:
        lines = source.split("\n")
        for row in {p.start for p in prose_lines(source, lang) if p.kind == "string"}:
            if row <= len(lines) and (norm := normalise_code(lines[row - 1], lang)):
                out.add(norm)
    return frozenset(out)


def _parses(source: str, lang: str) -> bool:
    if lang == "r":
        return not rlang.scan(source).errors
    try:
        parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _line_verdict(text: str, lang: str) -> str:
    """"sentence", "prose" (not code, but no sentence by itself) or "code"."""
    bare = _LEAD.sub("", _MARKS.sub(" ", text)).strip()
    if _LABEL.fullmatch(bare) and looks_like_code(bare[:-1], lang) != "code":
        return "sentence"
    if looks_like_code(bare.rstrip(".,;!?") or bare, lang) == "code":
        return "code"
    if not _CODE_MARK.search(bare) and reads_as_prose(_QUOTED.sub(" ", bare)):
        return "sentence"
    return "prose"
