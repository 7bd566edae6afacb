"""Each distinct text scanned once per assignment, the instructor's first.

What ``injection.scan_source`` and ``injection.scan_text`` find depends on the text and
the kind of place alone (the cell's id is only written into the hits), so a text seen
before gives the same hits again: a template cell the student left alone, the same
``df.head()`` printed by every notebook of a class, a cell's metadata that nbgrader
wrote. ``ScanMemo`` remembers the hits by what was scanned; ``instructor_text`` fills it
with the template and the solution, so a submission costs what the student changed or
added. It holds at most ``MAX_MEMO_CHARS`` characters of scanned text (then it stops
remembering, it never forgets), and under ``injection.reference_scan`` it remembers
nothing: every text is scanned again.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Hashable

from ..types import Cell
from .injection import InjectionHit, is_reference_scan, scan_source, scan_text

__all__ = ["MAX_MEMO_CHARS", "ScanMemo"]

MAX_MEMO_CHARS = 20_000_000  # ~40-80 MB of text: a class of a few hundred notebooks


class ScanMemo:
    """The hits of every text scanned so far (shared by threads)."""

    def __init__(self, max_chars: int = MAX_MEMO_CHARS) -> None:
        self._hits: dict[Hashable, tuple[InjectionHit, ...]] = {}
        self._chars = 0
        self._max = max_chars
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._hits)

    def source(self, cell: Cell, language: str) -> list[InjectionHit]:
        """``scan_source(cell, language)``."""
        return self._get(("source", language, cell.kind, cell.source), len(cell.source),
                         cell.id, lambda: scan_source(cell, language))

    def text(self, text: str, where: str, cell_id: str | None, markup: bool = False,
             ) -> list[InjectionHit]:
        """``scan_text(text, where, cell_id, markup)``."""
        return self._get(("text", where, markup, text), len(text), cell_id,
                         lambda: scan_text(text, where, cell_id, markup))

    def _get(self, key: Hashable, size: int, cell_id: str | None,
             scan: Callable[[], list[InjectionHit]]) -> list[InjectionHit]:
        if is_reference_scan():
            return scan()
        known = self._hits.get(key)
        if known is None:
            hits = scan()
            with self._lock:
                if key not in self._hits and self._chars + size <= self._max:
                    self._hits[key] = tuple(hits)
                    self._chars += size
            return hits
        return [h if h.cell_id == cell_id else dataclasses.replace(h, cell_id=cell_id)
                for h in known]
