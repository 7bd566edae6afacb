"""Read one Jupyter notebook safely into a typed ``grader.types.Notebook``.

Students hand in whatever their laptop produced: old nbformat 3 files, notebooks
without cell ids, PDFs renamed to ``.ipynb``, half-written JSON, 200 MB of printed
loop output. This module is the one place that turns those bytes into either a
``Notebook`` (or the raw, validated ``nbformat.NotebookNode`` the execution layer
runs) or a ``NotebookError(file, reason)`` whose reason an instructor can act on.
Nothing else escapes for bad input.

What is repaired rather than refused: nbformat 3 and 4.0-4.4 (upgraded to 4.5),
missing, invalid or duplicate cell ids (replaced by ids derived from the cell's
index and a hash of its content, so they are the same on every load), missing
``metadata``/``outputs``/``execution_count`` fields, unknown extra properties,
and outputs longer than ``NotebookLimits.max_output_chars_per_cell`` (cut, with a
marker saying how much was left out).

Text is made safe here, once, where it enters: every string of the notebook (cell
sources, outputs, metadata, cell ids, the kernelspec, keys too) loses its lone
UTF-16 surrogates and C0 control characters (not TAB, LF, CR, FF, ESC) to U+FFFD,
so that no writer after this (SQLite, JSON, files, the kernel, the browser) can
fail on them; ``LoadedNotebook.repairs`` says how many were replaced and where,
and ``LoadedNotebook.flag()`` tells the instructor (see ``grader.safe_text``). The
name given for messages is shown with its unsafe characters escaped.

Outputs are normalised to plain text with ANSI escape sequences removed; see
``grader.notebooks.cells``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import nbformat.v3
import nbformat.v4
from nbformat import NotebookNode

from grader.errors import NotebookError
from grader.notebooks.cells import detect_language, strip_ansi, text_of, to_cell
from grader.notebooks.refusals import CLEAR_OUTPUTS, NOT_JSON_DAMAGED, not_json_words, with_detail
from grader.safe_text import LABEL_LIMIT, TextRepairs, clean_tree, shown_name
from grader.types import Evidence, Flag, Notebook

__all__ = [
    "DEFAULT_LIMITS",
    "LoadedNotebook",
    "NotebookLimits",
    "load_both",
    "load_checked",
    "load_notebook",
    "load_notebook_node",
    "strip_ansi",
]

log = logging.getLogger(__name__)

MB = 1_000_000


@dataclass(frozen=True)
class NotebookLimits:
    """What one notebook may weigh before it is refused (or, for outputs, cut)."""

    max_bytes: int = 20 * MB
    max_cells: int = 2000
    max_output_chars_per_cell: int = 100_000

    def __post_init__(self) -> None:
        for field_name in ("max_bytes", "max_cells", "max_output_chars_per_cell"):
            if getattr(self, field_name) <= 0:
                raise ValueError(f"NotebookLimits.{field_name} must be positive")


DEFAULT_LIMITS = NotebookLimits()

_CELL_ID_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
# A JSON text can only hold a lone surrogate or a C0 control as an escape (the parser
# refuses raw controls, the decoder refuses raw surrogates): without one of these (or
# an escaped backslash before "u00"/"b", a harmless false alarm) there is nothing to clean.
_MAYBE_UNSAFE = re.compile(r"\\u(?:[dD][89a-fA-F]|00[01])|\\b")
_MAGIC = {
    b"PK\x03\x04": "a ZIP archive",
    b"%PDF": "a PDF document",
    b"\x89PNG": "a PNG image",
    b"\xff\xd8\xff": "a JPEG image",
    b"\xd0\xcf\x11\xe0": "an old Office document",
}


@dataclass(frozen=True, slots=True)
class LoadedNotebook:
    """One read of a notebook: the typed ``Notebook``, nbformat's node (what the execution
    layer runs), and what was replaced in its text to make it safe."""

    notebook: Notebook
    node: NotebookNode
    repairs: TextRepairs

    def flag(self) -> Flag | None:
        """A ``text_replaced`` flag for the instructor when any character was replaced,
        with the cells it was in as evidence; None otherwise."""
        if not self.repairs.count:
            return None
        ids = {c.index: c.id for c in self.notebook.cells}
        evidence = tuple(
            Evidence(ids.get(i), None, "characters replaced with U+FFFD in this cell")
            for i in self.repairs.cells
        )
        return Flag("text_replaced", f"{self.repairs.describe()}.", evidence)


def load_notebook_node(
    source: Path | bytes, name: str | None = None, limits: NotebookLimits = DEFAULT_LIMITS
) -> NotebookNode:
    """The validated notebook, upgraded to nbformat 4.5, as nbformat's own node.

    Raises ``NotebookError`` naming the file and the reason for any bad input.
    """
    label = _label(source, name)
    return _parse(_read_bytes(source, label, limits), label, limits)[0]


def load_notebook(
    source: Path | bytes, name: str | None = None, limits: NotebookLimits = DEFAULT_LIMITS
) -> Notebook:
    """Read, validate and normalise one notebook; see the module docstring."""
    return load_checked(source, name, limits).notebook


def load_both(
    source: Path | bytes, name: str | None = None, limits: NotebookLimits = DEFAULT_LIMITS
) -> tuple[Notebook, NotebookNode]:
    """``load_notebook`` and ``load_notebook_node`` from one read and one parse."""
    loaded = load_checked(source, name, limits)
    return loaded.notebook, loaded.node


def load_checked(
    source: Path | bytes, name: str | None = None, limits: NotebookLimits = DEFAULT_LIMITS
) -> LoadedNotebook:
    """Like ``load_both``, with what was replaced to make the text safe."""
    label = _label(source, name)
    data = _read_bytes(source, label, limits)
    node, repairs = _parse(data, label, limits)
    budget = limits.max_output_chars_per_cell
    cells = tuple(to_cell(i, cell, budget, label) for i, cell in enumerate(node.cells))
    kernel_name = str((node.metadata.get("kernelspec") or {}).get("name") or "")
    language = detect_language(node.metadata, (c.source for c in cells if c.kind == "code"))
    log.debug("loaded %s: %d cells, language %s", label, len(cells), language)
    if repairs.count:
        log.info("%s: %s", label, repairs.describe())
    version = f"{node.nbformat}.{node.nbformat_minor}"
    sha256 = hashlib.sha256(data).hexdigest()
    nb = Notebook(label, language, cells, sha256, kernel_name=kernel_name, nbformat=version)
    return LoadedNotebook(nb, node, repairs)


# --- reading and parsing ---------------------------------------------------------------


def _label(source: Path | bytes, name: str | None) -> str:
    """The name for messages, with control and bidi characters shown as escapes."""
    raw = name or (source.name if isinstance(source, Path) else "<notebook>")
    return shown_name(raw, LABEL_LIMIT)


def _size(n: int) -> str:
    return f"{n / MB:.1f} MB" if n >= MB / 10 else f"{n:,} bytes"


def _read_bytes(source: Path | bytes, label: str, limits: NotebookLimits) -> bytes:
    try:
        if isinstance(source, Path):
            with source.open("rb") as fh:  # never more than the limit, whatever the file says
                data = fh.read(limits.max_bytes + 1)
        else:
            data = bytes(source)
    except OSError as exc:
        raise NotebookError(label, f"cannot read the file: {exc.strerror or exc}") from exc
    if len(data) > limits.max_bytes:
        size = "" if isinstance(source, Path) else f"{_size(len(data))}; "
        limit = _size(limits.max_bytes)
        raise NotebookError(label, f"the file is too large ({size}the limit is {limit}): "
                                   f"{CLEAR_OUTPUTS}")
    return data


def _decode(data: bytes, label: str) -> str:
    if not data.strip():
        raise NotebookError(label, "the file is empty")
    for magic, what in _MAGIC.items():
        if data.startswith(magic):
            raise NotebookError(label, f"binary content: this is {what}, not a notebook")
    try:
        if data.startswith((b"\xff\xfe", b"\xfe\xff")):
            return data.decode("utf-16")
        if b"\x00" in data:
            raise NotebookError(label, "binary content (NUL bytes): not a text notebook")
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise NotebookError(
            label, f"binary content: not UTF-8 text (invalid byte at offset {exc.start})"
        ) from exc


def _json_kind(value: Any) -> str:
    kinds = {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}
    return kinds.get(type(value), "a number")


def _parse_json(text: str, label: str) -> dict[str, Any]:
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        # the parser's own message ends in "at" for some errors ("Invalid control
        # character at"): said once, after the words for the instructor
        where = f"{exc.msg.removesuffix(' at')} at line {exc.lineno}, column {exc.colno}"
        raise NotebookError(label, with_detail(not_json_words(exc), where)) from exc
    except RecursionError as exc:
        raise NotebookError(label, "not a notebook: the JSON is nested too deeply") from exc
    except ValueError as exc:  # e.g. an integer literal with too many digits
        raise NotebookError(label, with_detail(NOT_JSON_DAMAGED, str(exc))) from exc
    if not isinstance(raw, dict):
        raise NotebookError(
            label, f'not a notebook: the JSON is {_json_kind(raw)}, not an object with "cells"'
        )
    return raw


def _parse(
    data: bytes, label: str, limits: NotebookLimits
) -> tuple[NotebookNode, TextRepairs]:
    text = _decode(data, label)
    raw = _parse_json(text, label)
    major = raw.get("nbformat")
    if major is None:  # tolerated: guess the version from the shape
        major = 3 if "worksheets" in raw and "cells" not in raw else 4
        log.debug("%s: no nbformat version; reading it as nbformat %d", label, major)
    if isinstance(major, bool) or not isinstance(major, int):
        raise NotebookError(label, f"not a notebook: nbformat version {major!r} is not a number")
    if major not in (3, 4):
        raise NotebookError(label, f"nbformat version {major} is not supported (only 3 and 4)")
    cells = _raw_cells(raw, major, label)
    if len(cells) > limits.max_cells:
        n, most = len(cells), limits.max_cells
        raise NotebookError(label, f"too many cells ({n:,}; the limit is {most:,})")
    for i, cell in enumerate(cells):
        if not isinstance(cell, dict):
            raise NotebookError(label, f"not a valid notebook: cell {i} is not a JSON object")
    if _MAYBE_UNSAFE.search(text):  # before anything hashes, repairs or validates the text
        raw, repairs = _clean(raw, major)
    else:
        repairs = TextRepairs()
    minor = raw.get("nbformat_minor")
    fresh_ids = major == 3 or not isinstance(minor, int) or minor < 5
    if major == 3:
        nb = _upgrade_v3(raw, label)
    else:
        raw["nbformat"] = 4
        raw["nbformat_minor"] = max(minor, 5) if isinstance(minor, int) else 5
        nb = raw
    for i, cell in enumerate(nb["cells"]):
        if cell.get("cell_type") not in ("code", "markdown", "raw"):
            kind = cell.get("cell_type")
            reason = f"cell {i} has cell type {kind!r} (expected code, markdown or raw)"
            raise NotebookError(label, f"not a valid notebook: {reason}")
    _repair(nb, fresh_ids)
    try:
        nbformat.validate(nb, relax_add_props=True)
    except nbformat.ValidationError as exc:
        raise NotebookError(label, f"not a valid notebook: {_describe(exc)}") from exc
    except RecursionError as exc:
        raise NotebookError(label, "not a valid notebook: nested too deeply") from exc
    return nbformat.v4.to_notebook_json(nb), repairs


def _clean(raw: dict[str, Any], major: int) -> tuple[dict[str, Any], TextRepairs]:
    """``raw`` with all its text made safe (``safe_text.clean_tree``), counted per cell
    ("cell 3", numbered as after an upgrade from nbformat 3) and for the rest. The
    caller has checked the shape: a "cells" list (4) or "worksheets" with cells (3)."""
    repairs = TextRepairs()
    sheets = raw["worksheets"] if major == 3 else []
    lists = [sheet.pop("cells") for sheet in sheets] if major == 3 else [raw.pop("cells")]
    cleaned: dict[str, Any] = {}
    for key, value in raw.items():  # all but the cells
        (key,), repairs = clean_tree([key], "the notebook's fields", repairs)
        place = "the notebook metadata" if key == "metadata" else "the notebook's fields"
        value, repairs = clean_tree(value, place, repairs)
        cleaned.setdefault(key, value)
    index = 0
    for cells in lists:
        for i, cell in enumerate(cells):
            cells[i], repairs = clean_tree(cell, f"cell {index}", repairs)
            index += 1
    if major == 4:
        cleaned["cells"] = lists[0]
    else:
        for sheet, cells in zip(sheets, lists, strict=True):  # cleaned in place, same objects
            sheet["cells"] = cells
    return cleaned, repairs


def _raw_cells(raw: dict[str, Any], major: int, label: str) -> list[Any]:
    if major == 4:
        cells = raw.get("cells")
        if not isinstance(cells, list):
            raise NotebookError(label, 'not a notebook: the JSON object has no "cells" list')
        return cells
    sheets = raw.get("worksheets")
    if not isinstance(sheets, list) or not all(
        isinstance(s, dict) and isinstance(s.get("cells"), list) for s in sheets
    ):
        raise NotebookError(label, 'not a notebook: nbformat 3 without a "worksheets" list')
    return [cell for sheet in sheets for cell in sheet["cells"]]


def _upgrade_v3(raw: dict[str, Any], label: str) -> NotebookNode:
    raw.setdefault("metadata", {})
    raw.setdefault("nbformat_minor", 0)
    try:
        return nbformat.convert(nbformat.v3.to_notebook_json(raw), 4)
    except (KeyError, TypeError, AttributeError, ValueError, nbformat.ValidationError) as exc:
        missing = isinstance(exc, (KeyError, AttributeError)) and exc.args
        detail = f"missing field {exc.args[0]!r}" if missing else str(exc)
        raise NotebookError(
            label, f"not a valid notebook: cannot upgrade it from nbformat 3 ({detail})"
        ) from exc


def _repair(nb: dict[str, Any], fresh_ids: bool) -> None:
    """Fix the common harmless defects in place (all cells are dicts here)."""
    nb.setdefault("metadata", {})
    seen: set[str] = set()
    for i, cell in enumerate(nb["cells"]):
        cell.setdefault("metadata", {})
        cell.setdefault("source", "")
        if cell.get("cell_type") == "code":
            cell.setdefault("outputs", [])
            cell.setdefault("execution_count", None)
            for out in cell["outputs"] if isinstance(cell["outputs"], list) else ():
                kind = out.get("output_type") if isinstance(out, dict) else None
                if kind in ("execute_result", "display_data"):
                    out.setdefault("metadata", {})
                if kind == "execute_result":
                    out.setdefault("execution_count", None)
        else:
            cell.pop("outputs", None)
            cell.pop("execution_count", None)
        cid = cell.get("id")
        if fresh_ids or not isinstance(cid, str) or not _CELL_ID_RE.match(cid) or cid in seen:
            cid = _stable_id(i, cell, seen)
            cell["id"] = cid
        seen.add(cid)


def _stable_id(index: int, cell: Mapping[str, Any], seen: set[str]) -> str:
    text = f"{cell.get('cell_type')}\0{text_of(cell.get('source'))}"
    digest = hashlib.sha1(text.encode(), usedforsecurity=False)
    base = candidate = f"cell{index}-{digest.hexdigest()[:12]}"
    n = 1
    while candidate in seen:
        n += 1
        candidate = f"{base}-{n}"
    return candidate


def _describe(exc: Exception) -> str:
    """A one-line reason from a schema error: where, and what, without the whole value."""
    message = str(getattr(exc, "message", "") or exc).splitlines()[0]
    instance = repr(getattr(exc, "instance", None))
    if len(instance) > 40 and message.startswith(instance):
        message = "the value" + message[len(instance) :]
    path = [str(p) for p in getattr(exc, "absolute_path", ()) or ()]
    if len(path) >= 2 and path[0] == "cells":
        where = f"cell {path[1]}" + (f" ({'/'.join(path[2:])})" if path[2:] else "") + ": "
    else:
        where = f"{'/'.join(path)}: " if path else ""
    text = f"{where}{message}"
    return text if len(text) <= 300 else text[:297] + "..."
