"""What a student's letter is made of: ``Letter``, its ``Section``s, phrases and quotes.

A ``Phrase`` is a line of the letter as plain text with its code marked (a
function, a variable, a column), so that each renderer (Markdown, HTML, PDF)
can set code apart and escape the rest its own way. A ``Quote`` is a short
excerpt of the student's notebook with its place. Everything here is text a
student may read: nothing for the instructor only is ever put in.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from ..rubrics.check_fields import alternatives
from ..safe_text import scrub

QuoteKind = Literal["code", "text", "error"]


class Code(str):
    """A piece of a phrase shown as code (a name, a function, a value)."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Phrase:
    """One line of the letter: ``(text, is_code)`` pieces; ``str()`` gives the plain text."""

    parts: tuple[tuple[str, bool], ...]

    def __str__(self) -> str:
        return "".join(text for text, _ in self.parts)


def phrase(*pieces: str | Phrase) -> Phrase:
    """A phrase from strings, ``Code`` pieces and other phrases (all scrubbed of
    characters no writer takes; adjacent plain pieces are merged)."""
    parts: list[tuple[str, bool]] = []
    for piece in pieces:
        items = piece.parts if isinstance(piece, Phrase) else ((piece, isinstance(piece, Code)),)
        for text, code in items:
            if not text:
                continue
            if parts and not code and not parts[-1][1]:
                parts[-1] = (parts[-1][0] + scrub(text), False)
            else:
                parts.append((scrub(text), code))
    return Phrase(tuple(parts))


@dataclass(frozen=True, slots=True)
class Quote:
    """A short excerpt of the student's notebook: where it is and what it says."""

    where: str  # "cell 7, line 3"; "" when the place has no name to show
    text: str
    kind: QuoteKind = "code"


def cut(text: str, limit: int = 100) -> str:
    """``text`` on one line, at most ``limit`` characters, cut at a word where one is near."""
    flat = " ".join(scrub(text).split())
    if len(flat) <= limit:
        return flat
    head = flat[: limit - 1]
    space = head.rfind(" ")
    if space >= limit * 2 // 3:
        head = head[:space]
    return head.rstrip(" ,;:") + "…"


def join_and(items: Sequence[str | Phrase]) -> Phrase:
    """"a", "a and b", "a, b and c" (pieces keep their code marks)."""
    items = list(items)
    if not items:
        return phrase()
    pieces: list[str | Phrase] = []
    for i, item in enumerate(items):
        if i:
            pieces.append(" and " if i == len(items) - 1 else ", ")
        pieces.append(item)
    return phrase(*pieces)


def codes(names: Iterable[str], limit: int = 6, call: bool = False) -> Phrase:
    """Names as code, joined ("a, b and c"); past ``limit``, "... and 4 more"."""
    names = list(dict.fromkeys(n for n in names if n))
    shown: list[str | Phrase] = [_either(n, call) for n in names[:limit]]
    if len(names) > limit:
        shown.append(f"{len(names) - limit} more")
    return join_and(shown)


def _either(entry: str, call: bool) -> Phrase:
    """A name as code; an any-of group ("read_csv | read.csv") as "`read_csv()` (or
    `read.csv()`)", so a list of several still reads as a list."""
    names = [Code(cut(n, 60) + ("()" if call else "")) for n in alternatives(entry) or (entry,)]
    if len(names) == 1:
        return phrase(names[0])
    rest: list[str | Phrase] = []
    for i, name in enumerate(names[1:]):
        rest += [", "] if i else []
        rest.append(name)
    return phrase(names[0], " (or ", *rest, ")")


def plural(n: int, word: str, many: str = "") -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"


MODEL_LABEL = ("Written with the help of a language model (your instructor's checks "
               "set the points)")
REVIEW_NOTE = "Your instructor is reviewing part of this grade; the points may change."
SECTION_REVIEW = "Your instructor is reviewing this part; its points may change."
MANUAL_REVIEW = "Your instructor grades this part by hand; its points are not in yet."
CLOSING = "If anything here seems wrong to you, ask your instructor."


@dataclass(frozen=True, slots=True)
class Section:
    """One criterion of the letter."""

    criterion_id: str
    title: str
    points: float
    max_points: float
    score: str  # "8.64 / 10" (grader.points), or "graded by your instructor (4 points)"
    complete: bool
    summary: Phrase | None  # the one line of a complete criterion
    done: tuple[Phrase, ...] = ()
    missing: tuple[Phrase, ...] = ()
    next_steps: tuple[Phrase, ...] = ()
    quotes: tuple[Quote, ...] = ()
    model_text: tuple[Phrase, ...] = ()  # shown under MODEL_LABEL
    review: str = ""  # SECTION_REVIEW when the instructor is looking at this part


@dataclass(frozen=True, slots=True)
class Letter:
    assignment: str
    student: str
    status: str  # "graded" | "error"
    score: str = ""  # "52.5 / 100" (grader.points)
    percent: str = ""  # "52%"
    overview: tuple[Phrase, ...] = ()
    sections: tuple[Section, ...] = ()
    review_note: str = ""
    problem: str = ""  # an ungraded submission: why, in plain words
    what_to_do: tuple[str, ...] = ()
    closing: str = CLOSING
    graded_at: float = 0.0  # epoch seconds of the grade: the PDF's date (0: now)

    @property
    def model_label(self) -> str:
        return MODEL_LABEL
