"""No text of a hidden check reaches a student's letter, whatever carried it there.

A letter quotes what the student's notebook gave: a cell's error, what it printed, the
value it computed, a visible test's failure. A notebook that got hold of the hidden
tests (their code, the values they expect, or the tests' file, where the code is
written JSON-escaped) could raise or print them and have its letter read them back.
``HiddenText`` holds every hidden check's text as the rubric gives it, in the forms a
run shows it (as written, JSON-escaped, as Python's ``repr`` writes it), and ``redact``
replaces any stretch of a letter's text that is part of one by ``HIDDEN``.

Only stretches of at least ``SHORTEST`` characters are replaced (a whole line of a
hidden test may be shorter, down to ``SHORTEST_LINE``). A shorter one, an expected
``57`` say, is left as the student wrote it: replacing it would tell a student who
printed a guess that the guess is what a hidden check asks for, which is worse than
quoting their own text back to them.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable

from ..rubrics.check_fields import Check, show_value, thaw
from ..rubrics.schema import Rubric
from ..types import CheckResult, Facts
from .text import Phrase, Section

__all__ = ["HIDDEN", "SHORTEST", "HiddenText", "redact_section"]

HIDDEN = "a hidden test's code"
SHORTEST = 16  # characters a quoted stretch shares with a hidden text to be replaced
SHORTEST_LINE = 8  # a whole line of a hidden test, when shorter than SHORTEST


def _flat(text: str) -> str:
    return " ".join(text.split())


def _escaped(text: str) -> list[str]:
    return [json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1], repr(text)[1:-1]]


def _forms(text: str) -> list[str]:
    """``text`` as a run may show it: each line as written, and the whole and each line
    JSON-escaped (a file of the tests, R's or Python's JSON) or as ``repr`` writes it (a
    list of lines printed). Whole lines, never two joined: a stretch across two lines
    may be the start of a line a visible check shows too."""
    lines = [line for line in text.splitlines() if line.strip()]
    found = [t for line in lines for t in (line, *_escaped(line))]
    found += _escaped(text) if len(lines) > 1 else []
    return list(dict.fromkeys(_flat(t) for t in found if t.strip()))


def _texts(check: Check) -> list[str]:
    """What a hidden check holds that the student must not read."""
    texts = [check.code, check.expression, check.pattern]
    if check.number is not None:
        texts.append(f"{check.number:g}")
    for value in check.expected:
        texts += [show_value(value, limit=10_000), json.dumps(thaw(value), default=str)]
    return [t for t in texts if t and t.strip()]


def _pieces(texts: Iterable[str]) -> tuple[frozenset[str], frozenset[str]]:
    """(every SHORTEST-character stretch of the texts' forms, their shorter lines)."""
    grams: set[str] = set()
    lines: set[str] = set()
    for text in texts:
        lines.update(line for line in (_flat(x) for x in text.splitlines())
                     if SHORTEST_LINE <= len(line) < SHORTEST)
        for form in _forms(text):
            grams.update(form[i:i + SHORTEST] for i in range(len(form) - SHORTEST + 1))
    return frozenset(grams), frozenset(lines)


@dataclasses.dataclass(frozen=True)
class HiddenText:
    """The hidden checks' texts, ready to find in a letter's text."""

    grams: frozenset[str]  # every SHORTEST-character stretch of a hidden text's forms
    lines: frozenset[str]  # whole lines shorter than SHORTEST (at least SHORTEST_LINE)

    @classmethod
    def from_rubric(cls, rubric: Rubric | None) -> HiddenText:
        """The texts of ``rubric``'s hidden checks, less what its visible checks show."""
        checks = [ch for c in rubric.criteria for ch in c.checks] if rubric else []
        hidden = _pieces(t for ch in checks if ch.hidden for t in _texts(ch))
        shown = _pieces(t for ch in checks if not ch.hidden for t in _texts(ch))
        return cls(hidden[0] - shown[0], hidden[1] - shown[1])

    def __bool__(self) -> bool:
        return bool(self.grams or self.lines)

    def redact(self, text: str) -> str:
        """``text`` with every stretch it shares with a hidden text replaced by HIDDEN
        (its whitespace flattened where anything was replaced). What follows the last
        such stretch is dropped when it is short or was cut ("…"): a text cut in the
        middle of a hidden one leaves a stretch too short to be found."""
        if not self or not text:
            return text
        flat = _flat(text)
        marked = [False] * len(flat)
        for i in range(len(flat) - SHORTEST + 1):
            if flat[i:i + SHORTEST] in self.grams:
                marked[i:i + SHORTEST] = [True] * SHORTEST
        for line in self.lines:
            start = flat.find(line)
            while start >= 0:
                marked[start:start + len(line)] = [True] * len(line)
                start = flat.find(line, start + 1)
        if not any(marked):
            return text
        end = len(flat) - marked[::-1].index(True)  # just past the last hidden stretch
        tail = flat[end:]
        if tail.endswith("…") or len(tail) < SHORTEST:  # a cut may hide a short stretch
            flat, marked = flat[:end] + ("…" if tail.strip() else ""), [*marked[:end], False]
        out, i = [], 0
        while i < len(flat):
            if marked[i]:
                while i < len(flat) and marked[i]:
                    i += 1
                out.append(HIDDEN)
            else:
                out.append(flat[i])
                i += 1
        return "".join(out)

    def result(self, ch: CheckResult) -> CheckResult:
        """``ch`` with its message and evidence redacted, before a reader quotes (and
        cuts) them: a cut never leaves a long stretch of a hidden text behind."""
        if not self:
            return ch
        return dataclasses.replace(ch, message=self.redact(ch.message), evidence=tuple(
            dataclasses.replace(e, text=self.redact(e.text)) for e in ch.evidence),
            facts=self.facts(ch.facts))

    def facts(self, facts: Facts) -> Facts:
        """``facts`` with every text they hold redacted (the letters read them)."""
        def texts(items: tuple[str, ...]) -> tuple[str, ...]:
            return tuple(self.redact(t) for t in items)
        return dataclasses.replace(
            facts, expected=texts(facts.expected), found=texts(facts.found),
            missing=texts(facts.missing), quoted=self.redact(facts.quoted),
            parts=tuple(dataclasses.replace(
                part, got=self.redact(part.got), want=self.redact(part.want),
                missing=texts(part.missing), extra=texts(part.extra),
                column=self.redact(part.column)) for part in facts.parts))

    def phrase(self, p: Phrase) -> Phrase:
        return Phrase(tuple((self.redact(text), code) for text, code in p.parts))

    def phrases(self, items: Iterable[Phrase]) -> tuple[Phrase, ...]:
        return tuple(self.phrase(p) for p in items)


def redact_section(section: Section, hidden: HiddenText) -> Section:
    """``section`` with the hidden checks' texts replaced in everything it quotes or says."""
    if not hidden:
        return section
    return dataclasses.replace(
        section,
        summary=hidden.phrase(section.summary) if section.summary is not None else None,
        done=hidden.phrases(section.done), missing=hidden.phrases(section.missing),
        next_steps=hidden.phrases(section.next_steps),
        quotes=tuple(dataclasses.replace(q, text=hidden.redact(q.text))
                     for q in section.quotes),
        model_text=hidden.phrases(section.model_text))
