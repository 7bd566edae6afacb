"""Hiding who a student is, in the text the student wrote.

With names hidden, a pseudonym stands for the student's name in the lists; the
notebook's own text, quoted in evidence, model notes and outputs, may still say who
wrote it ("# Name: ...", an e-mail, the name in a print). ``redact`` replaces the
student's known names and ids (whole words, any case) and whatever follows a
signature at the start of a line with the pseudonym; ``redact_report`` does it to
every piece of text of a report, so that Review, the letters and every download of
an anonymised list say the same.

May import: ``types``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import Any

from .types import GradeReport

# A line where a student signs their work or says who they are: "Name: ...", "**Student:**
# ...", "Author = ...", "**Student ID:** S-00102", "Email: ...", "NetID: ..."; in code only
# as a comment ("# Name: ..."), so that `name = ...` stays code.
_SIGNATURE = (r"(?:student(?:'s)?[ \t]+|full[ \t]+)?"
              r"(?:(?:name|student|author)(?:[ \t]+(?:id|number|no\.?|#|e-?mail))?"
              r"|id|sid|net\s*id|e-?mail)[ \t*_]*[:=][ \t*_]*)(\S.*?)[ \t]*$")
_SIGNED_TEXT = re.compile(r"^([ \t>#*_-]*" + _SIGNATURE, re.IGNORECASE | re.MULTILINE)
_SIGNED_COMMENT = re.compile(r"^([ \t]*#+[ \t]*" + _SIGNATURE, re.IGNORECASE | re.MULTILINE)
MIN_NAME = 3  # shorter names and ids are left alone: they would hit ordinary words


def redact(text: str, names: Sequence[str], pseudonym: str, code: bool = False) -> str:
    """``text`` with the student's known names and ids, and whatever follows a "Name:"
    (or "Student:", "Author:") at the start of a line, replaced by the pseudonym. A
    name is replaced as a whole word: "Ann" leaves "planning" alone."""
    for name in sorted({n.strip() for n in names if len(n.strip()) >= MIN_NAME},
                       key=len, reverse=True):
        text = re.sub(rf"(?<!\w){re.escape(name)}(?!\w)", pseudonym, text,
                      flags=re.IGNORECASE)
    signed = _SIGNED_COMMENT if code else _SIGNED_TEXT
    return signed.sub(lambda m: m.group(1) + pseudonym, text)


def name_parts(display_name: str, student_id: str, file: str) -> list[str]:
    """What may name a student: the name, its parts, the id and the file's stem."""
    stem = file.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    parts = [display_name, student_id, stem, *display_name.split()]
    return [p for p in parts if p]


def redact_report(report: GradeReport, names: Sequence[str], pseudonym: str) -> GradeReport:
    """``report`` with every piece of its text redacted (``redact``); numbers, ids and
    codes unchanged."""
    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return redact(value, names, pseudonym)
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, tuple):
            return tuple(walk(v) for v in value)
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return dataclasses.replace(value, **{
                f.name: walk(getattr(value, f.name)) for f in dataclasses.fields(value)
                if f.name not in _KEPT})
        return value

    return walk(report)


# Fields that are ours, not the student's: ids, kinds, codes, the rubric's own names.
_KEPT = frozenset({"id", "kind", "code", "layer", "check", "criterion_id", "assignment",
                   "rubric_version", "sha256", "file", "student_id", "display_name",
                   "status", "title"})
