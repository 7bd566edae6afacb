"""Where things are in a student's notebook, named as the student sees them.

"cell 7" (its position, counting every cell from the top) when the notebook is at
hand, else a readable cell id ("cell import_data", or "cell 4" for the ids the
loader gives cells that had none), never a random id (uuid, hex, generated ids).
The cells of a part are those under the template heading the rubric names
(``task``), up to the next heading of its level.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..analysis.template import normalise_markdown
from ..safe_text import scrub
from ..types import Cell, Evidence, Notebook
from .numbers import cell_name
from .text import join_and

_STABLE_ID = re.compile(r"cell(\d+)-[0-9a-f]{12}(?:-\d+)?")
_HEX_RUN = re.compile(r"[0-9a-fA-F]{8,}")
_WORD_ID = re.compile(r"[A-Za-z]+\d{0,3}|\d{1,3}")


def readable_id(cell_id: str) -> str:
    """A cell id as a student could recognise it, or "" for a random one (uuid, hex)."""
    m = _STABLE_ID.fullmatch(cell_id)
    if m:  # ids the loader gave cells that had none: "cell<index>-<hash>"
        return cell_name(int(m.group(1)))
    tokens = [t for t in re.split(r"[-_]", cell_id) if t]
    if not tokens or len(cell_id) > 40 or _HEX_RUN.search(cell_id):
        return ""
    if not all(_WORD_ID.fullmatch(t) for t in tokens):
        return ""  # digits inside a word: a generated id (Colab, VS Code)
    if any(len(re.findall(r"[a-z][A-Z]|[A-Z][a-z](?=[A-Z])", t)) > 2 for t in tokens):
        return ""  # case changes all over: random letters
    return f"cell {cell_id}"


@dataclass(frozen=True, slots=True)
class Places:
    """Names the places of one student's notebook for the letter."""

    notebook: Notebook | None = None

    def cell(self, cell_id: str | None) -> str:
        if not cell_id:
            return ""
        if self.notebook is not None:
            found = self.notebook.cell(cell_id)
            if found is not None:
                return cell_name(found.index)
        return readable_id(scrub(cell_id))

    def at(self, ev: Evidence) -> str:
        """"cell 7, line 3" (or "" when the cell has no name to show)."""
        where = self.cell(ev.cell_id)
        return f"{where}, line {ev.line}" if where and ev.line else where

    def span(self, evidence: Iterable[Evidence]) -> str:
        """Where a set of evidence lies: "cell 4, lines 1 and 3", "cells 3 and 5"."""
        cells: dict[str, list[int]] = {}
        for ev in evidence:
            name = self.cell(ev.cell_id)
            if name:
                lines = cells.setdefault(name, [])
                if ev.line and ev.line not in lines:
                    lines.append(ev.line)
        if not cells:
            return ""
        if len(cells) == 1:
            name, lines = next(iter(cells.items()))
            if not lines:
                return name
            word = "line" if len(lines) == 1 else "lines"
            return f"{name}, {word} {join_and(_runs(sorted(lines)))}"
        names = list(cells)
        if all(re.fullmatch(r"cell \d+", n) for n in names):
            numbers = sorted(int(n.removeprefix("cell ")) for n in names)
            return "cells " + str(join_and([str(n) for n in numbers]))
        return str(join_and(names))

    def assigned(self, variable: str, evidence: Iterable[Evidence] = (), task: str = "") -> str:
        """The cell where ``variable`` is last assigned (comment lines aside): with the
        notebook, preferably among the cells of the part headed ``task``; without it,
        from ``evidence`` (the criterion's own) quoting an assignment to it."""
        pattern = re.compile(
            rf"(?<![\w.$]){re.escape(variable)}\s*(?:\[[^\]\n]*\]\s*)?(?:<<-|<-|=(?!=))"
            rf"|->\s*{re.escape(variable)}\b")
        if self.notebook is None:
            hits = [ev for ev in evidence if pattern.search(ev.text)]
            return self.cell(hits[-1].cell_id) if hits else ""
        def assigns(cell: Cell) -> bool:
            code = "\n".join(line for line in cell.source.splitlines()
                             if not line.lstrip().startswith("#"))
            return cell.kind == "code" and bool(pattern.search(code))
        for cells in (self._part(task), self.notebook.cells):
            found = [c for c in cells if assigns(c)]
            if found:
                return cell_name(found[-1].index)
        return ""

    def _heading_cell(self, task: str) -> Cell | None:
        if self.notebook is None or not task.strip():
            return None
        key = normalise_markdown(task)
        return next((c for c in self.notebook.markdown_cells
                     if key and key in normalise_markdown(c.source)), None)

    def _part(self, task: str) -> tuple[Cell, ...]:
        """The cells after the heading ``task`` up to the next heading of its level."""
        head = self._heading_cell(task)
        if head is None or self.notebook is None:
            return ()
        level = min((len(m.group(1)) for m in re.finditer(r"^(#{1,6})\s", head.source, re.M)),
                    default=6)
        stop = re.compile(rf"^#{{1,{level}}}\s", re.M)
        cells = self.notebook.cells[head.index + 1:]
        end = next((i for i, c in enumerate(cells)
                    if c.kind == "markdown" and stop.search(c.source)), len(cells))
        return cells[:end]

    def heading(self, task: str) -> str:
        """The cell holding the template heading ``task`` ("" when not found or not known)."""
        found = self._heading_cell(task)
        return cell_name(found.index) if found is not None else ""


def _runs(numbers: list[int]) -> list[str]:
    """[4, 5, 7, 8, 9] -> ["4–5", "7–9"]."""
    out: list[list[int]] = []
    for n in numbers:
        if out and n == out[-1][-1] + 1:
            out[-1].append(n)
        else:
            out.append([n])
    return [f"{r[0]}–{r[-1]}" if len(r) > 1 else str(r[0]) for r in out]
