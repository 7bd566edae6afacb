"""The terms the injection rules are written in (``injection_rules``, ``injection_address``).

The places text can be in; a rule (``Rule``): a regular expression over a place's
normalised, case-folded text, the places it applies to, and its *trigger*: a list of
clauses, a clause a list of needs, all met: a frozenset of whole words (one of them is
a ``\\w+`` word of the text), a tuple of strings (one of them is in the text) or a
pattern (it matches the text). A word counts as whole only where the rule has it
between ``\\b``, ``\\s`` or the end of a word class on both sides. ``top`` is what a
score at the top of its scale looks like, for the rules that catch one being asked for.
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["ALL_WHERE", "SOURCE_WHERE", "TEXT_WHERE", "WHERE", "Clause", "Need", "Rule", "rx",
           "top", "words"]

# Where text can be: a cell's source (markdown, raw, comment, string, code), a stored
# output, an output of our own run, notebook or cell metadata, an attachment.
WHERE = ("markdown", "raw", "comment", "string", "code", "output", "run_output", "metadata",
         "attachment")
TEXT_WHERE = frozenset(WHERE) - {"code"}
ALL_WHERE = frozenset(WHERE)
SOURCE_WHERE = frozenset({"markdown", "raw", "comment", "string", "attachment", "metadata"})

Need = frozenset[str] | tuple[str, ...] | re.Pattern[str]
Clause = tuple[Need, ...]


class Rule(NamedTuple):
    name: str
    pattern: re.Pattern[str]
    where: frozenset[str]  # the places it applies to
    trigger: tuple[Clause, ...]  # met wherever ``pattern`` matches (and more)


def rx(*parts: str) -> re.Pattern[str]:
    """One pattern whose top-level alternatives are ``parts`` (``^``: a line's start)."""
    return re.compile("|".join(f"(?:{p})" for p in parts), re.MULTILINE)


def words(text: str) -> frozenset[str]:
    """The words, each ``[xy]`` class spelled every way: ``"r[úu]brica"``: two words."""
    out: set[str] = set()
    for word in text.split():
        forms = [""]
        for cls, ch in re.findall(r"\[([^\]]+)\]|(.)", word):
            forms = [f + c for f in forms for c in (cls or ch)]
        out.update(forms)
    return frozenset(out)


def top(g: str) -> str:
    """A top score: "1.0", "0.95", "100%", "10/10", "full marks" (its group named ``g``)."""
    return (r"(?:1\.0+|0?\.9\d*|100\s*%|100\s+percent"
            rf"|(?P<{g}>[1-9]\d*(?:\.\d+)?)\s*/\s*(?P={g})"
            r"|(?:full|maximum|max|perfect|top|highest)\s+(?:marks?|credit|points?|scores?|grades?)"
            r")(?!\w|\.\d)")
