"""Small helpers to build, edit and execute notebooks deterministically.

Every edit names the cell it changes by id and fails loudly when the text it
expects is not there, so a change to a template or solution cannot silently
produce a submission that no longer shows what its name says.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbformat.v4.rwbase import rejoin_lines

PY_KERNEL = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
R_KERNEL = {"name": "ir", "display_name": "R", "language": "R"}


def md(cell_id: str, text: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_markdown_cell(text.strip("\n"))
    cell.id = cell_id
    return cell


def code(cell_id: str, src: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(src.strip("\n"))
    cell.id = cell_id
    return cell


def new_notebook(cells: list, kernel: dict) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.nbformat_minor = 5
    nb.metadata = {"kernelspec": dict(kernel), "language_info": {"name": kernel["language"]}}
    nb.cells = [copy.deepcopy(c) for c in cells]
    return nb


def load(path: Path, id_prefix: str = "cell") -> nbformat.NotebookNode:
    """Read a notebook as stored; cells without an id get a stable one (prefix-index)."""
    with open(path, encoding="utf-8") as f:
        nb = rejoin_lines(nbformat.from_dict(json.load(f)))  # list sources -> str
    nb.nbformat_minor = max(nb.nbformat_minor, 5)
    for i, cell in enumerate(nb.cells):
        if not cell.get("id"):
            cell["id"] = f"{id_prefix}-{i}"
    return nb


def cell(nb: nbformat.NotebookNode, cell_id: str) -> nbformat.NotebookNode:
    for c in nb.cells:
        if c.get("id") == cell_id:
            return c
    raise KeyError(f"no cell with id {cell_id!r}")


def index(nb: nbformat.NotebookNode, cell_id: str) -> int:
    return nb.cells.index(cell(nb, cell_id))


def set_source(nb: nbformat.NotebookNode, cell_id: str, src: str) -> None:
    cell(nb, cell_id).source = src.strip("\n")


def replace(nb: nbformat.NotebookNode, cell_id: str, old: str, new: str, count: int = 1) -> None:
    """Replace ``old`` by ``new`` in one cell; ``old`` must occur exactly ``count`` times."""
    c = cell(nb, cell_id)
    found = c.source.count(old)
    if found != count:
        raise ValueError(f"cell {cell_id}: expected {count} x {old!r}, found {found}")
    c.source = c.source.replace(old, new)


def replace_everywhere(nb: nbformat.NotebookNode, old: str, new: str) -> int:
    """Replace ``old`` in every code cell; returns how many cells changed (must be > 0)."""
    changed = 0
    for c in nb.cells:
        if c.cell_type == "code" and old in c.source:
            c.source = c.source.replace(old, new)
            changed += 1
    if not changed:
        raise ValueError(f"{old!r} occurs in no code cell")
    return changed


def insert_after(nb: nbformat.NotebookNode, cell_id: str, new_cell: nbformat.NotebookNode) -> None:
    nb.cells.insert(index(nb, cell_id) + 1, copy.deepcopy(new_cell))


def take_from(nb: nbformat.NotebookNode, other: nbformat.NotebookNode, ids: list[str]) -> None:
    """Copy the sources of the cells ``ids`` from ``other`` (e.g. template -> partial work)."""
    for cell_id in ids:
        cell(nb, cell_id).source = cell(other, cell_id).source


def clear_outputs(nb: nbformat.NotebookNode) -> None:
    for c in nb.cells:
        if c.cell_type == "code":
            c.outputs = []
            c.execution_count = None
        c.metadata.pop("execution", None)


def execute(nb: nbformat.NotebookNode, cwd: Path, kernel: str, timeout: int = 180) -> int:
    """Run every cell (errors do not stop the run); returns the number of cells that errored."""
    clear_outputs(nb)
    os.environ.setdefault("TZ", "UTC")  # R asks timedatectl otherwise, and warns
    client = NotebookClient(nb, kernel_name=kernel, timeout=timeout, allow_errors=True,
                            record_timing=False, resources={"metadata": {"path": str(cwd)}})
    client.execute(stderr=subprocess.DEVNULL)  # the kernel's own log (transport warnings)
    for c in nb.cells:
        c.metadata.pop("execution", None)
    return sum(any(o.output_type == "error" for o in c.get("outputs", []))
               for c in nb.cells if c.cell_type == "code")


def write(nb: nbformat.NotebookNode, path: Path) -> None:
    nbformat.validate(nb)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        nbformat.write(nb, f)
