"""The Dashboard's grading section made whole: files that failed in words, cards that say
which mode they count, and names that tell students of different assignments apart.

``grader.views.grading`` reads the numbers from the store; this module shapes what the
page shows of them:

- ``failed_table``: each failed file's reason in words, the parser's technical detail
  (``grader.notebooks.refusals``) kept apart for a fold below the table.
- ``distinct_cards``: two cards of one title (a rate per mode, with and without the
  models) say their mode in the title, so no two cards read alike.
- with names hidden, pseudonyms are per assignment ("Student 001" of two assignments are
  two students): a file is named with its assignment (``labels.across``), so every name
  on the page is one student's.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..notebooks.refusals import words_and_detail
from .grading import MODE_WORDS, FailedFile, MetricCard
from .labels import across

__all__ = ["distinct_cards", "failed_table"]

_SHORT = {words: mode for mode, words in MODE_WORDS.items()}  # "... (L3, L4)" -> "with models"


def failed_table(failed: Sequence[FailedFile], anonymous: bool
                 ) -> tuple[list[dict[str, Any]], list[str]]:
    """The failed files' rows (``FailedFile.row``) with each reason in words, and the
    technical details apart ("file: detail", one per file that has one). With names
    hidden, each file is named with its assignment (``across``)."""
    rows, details = [], []
    for f in failed:
        file = across(f.assignment, f.file) if anonymous else f.file
        reason = f.reason.replace(f.file, file) if anonymous and f.file else f.reason
        words, detail = words_and_detail(reason)
        rows.append(dataclasses.replace(f, file=file, reason=words).row())
        if detail:
            details.append(f"{file}: {detail}")
    return rows, details


def distinct_cards(cards: Sequence[MetricCard]) -> list[MetricCard]:
    """``cards`` with every title said once: a title two cards share takes the card's
    note, short ("Notebooks / min, last 10 min · with models")."""
    seen = Counter(c.label for c in cards)
    return [dataclasses.replace(c, label=f"{c.label} · {_SHORT.get(c.note, c.note)}")
            if seen[c.label] > 1 and c.note else c for c in cards]
