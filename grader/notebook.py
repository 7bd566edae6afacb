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

Outputs are normalised to plain text with ANSI escape sequences (CSI colours,
OSC hyperlinks and titles, other escapes) removed; see ``strip_ansi``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import nbformat.v3
import nbformat.v4
from nbformat import NotebookNode

from grader.errors import NotebookError
from grader.types import Cell, CellKind, Language, Notebook, Output

__all__ = ["DEFAULT_LIMITS", "NotebookLimits", "load_notebook", "load_notebook_node", "strip_ansi"]

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

# ANSI escapes: CSI (ESC [ or 8-bit 0x9B), OSC (ESC ] ... BEL/ST), DCS/SOS/PM/APC strings
# (ESC P/X/^/_ ... ST), any other two- or three-byte escape, then any stray ESC.
_ANSI_RE = re.compile(
    r"(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"  # OSC, terminated
    r"|(?:\x1b[PX^_]|[\x90\x98\x9e\x9f])[^\x1b\x9c]*(?:\x1b\\|\x9c)"  # DCS/SOS/PM/APC
    r"|(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"  # CSI: params, intermediates, final byte
    r"|\x1b[ -/]*[0-~]"  # nF / Fp / Fe / Fs escapes, e.g. ESC ( B, ESC 7, ESC M
    r"|\x1b"  # a stray ESC left by a truncated sequence
)
_CELL_ID_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_MAGIC = {
    b"PK\x03\x04": "a ZIP archive",
    b"%PDF": "a PDF document",
    b"\x89PNG": "a PNG image",
    b"\xff\xd8\xff": "a JPEG image",
    b"\xd0\xcf\x11\xe0": "an old Office document",
}
# Content hints, counted when the metadata does not name the language.
_R_HINTS = re.compile(r"[\w.)\]]\s*<-\s*\S|\b(?:library|require)\(|%>%|\|>|(?<![\w.])c\(")
_PY_HINTS = re.compile(r"(?m)^\s*(?:import\s+\w|from\s+[\w.]+\s+import\s|def\s+\w+\s*\()|\bprint\(")


def strip_ansi(text: str) -> str:
    """``text`` without terminal escape sequences (colours, cursor moves, hyperlinks)."""
    return _ANSI_RE.sub("", text)


def load_notebook_node(
    source: Path | bytes, name: str | None = None, limits: NotebookLimits = DEFAULT_LIMITS
) -> NotebookNode:
    """The validated notebook, upgraded to nbformat 4.5, as nbformat's own node.

    Raises ``NotebookError`` naming the file and the reason for any bad input.
    """
    label = _label(source, name)
    return _parse(_read_bytes(source, label, limits), label, limits)


def load_notebook(
    source: Path | bytes, name: str | None = None, limits: NotebookLimits = DEFAULT_LIMITS
) -> Notebook:
    """Read, validate and normalise one notebook; see the module docstring."""
    return load_both(source, name, limits)[0]


def load_both(
    source: Path | bytes, name: str | None = None, limits: NotebookLimits = DEFAULT_LIMITS
) -> tuple[Notebook, NotebookNode]:
    """``load_notebook`` and ``load_notebook_node`` from one read and one parse."""
    label = _label(source, name)
    data = _read_bytes(source, label, limits)
    node = _parse(data, label, limits)
    budget = limits.max_output_chars_per_cell
    cells = tuple(_cell(i, cell, budget, label) for i, cell in enumerate(node.cells))
    kernel_name = str((node.metadata.get("kernelspec") or {}).get("name") or "")
    language = _detect_language(node.metadata, (c.source for c in cells if c.kind == "code"))
    log.debug("loaded %s: %d cells, language %s", label, len(cells), language)
    version = f"{node.nbformat}.{node.nbformat_minor}"
    sha256 = hashlib.sha256(data).hexdigest()
    nb = Notebook(label, language, cells, sha256, kernel_name=kernel_name, nbformat=version)
    return nb, node


# --- reading and parsing ---------------------------------------------------------------


def _label(source: Path | bytes, name: str | None) -> str:
    return name or (source.name if isinstance(source, Path) else "<notebook>")


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
        raise NotebookError(label, f"the file is too large ({size}the limit is {limit})")
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
        raise NotebookError(
            label, f"not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        ) from exc
    except RecursionError as exc:
        raise NotebookError(label, "not a notebook: the JSON is nested too deeply") from exc
    except ValueError as exc:  # e.g. an integer literal with too many digits
        raise NotebookError(label, f"not JSON: {exc}") from exc
    if not isinstance(raw, dict):
        raise NotebookError(
            label, f'not a notebook: the JSON is {_json_kind(raw)}, not an object with "cells"'
        )
    return raw


def _parse(data: bytes, label: str, limits: NotebookLimits) -> NotebookNode:
    raw = _parse_json(_decode(data, label), label)
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
    return nbformat.v4.to_notebook_json(nb)


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
    text = f"{cell.get('cell_type')}\0{_text(cell.get('source'))}"
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


# --- normalising -----------------------------------------------------------------------


def _text(value: Any) -> str:
    return "".join(map(str, value)) if isinstance(value, list) else str(value or "")


def _overstrike(text: str) -> str:
    """Apply carriage returns as a terminal would (progress bars keep their last state)."""
    if "\r" not in text:
        return text
    lines = []
    for line in text.replace("\r\n", "\n").split("\n"):
        shown: list[str] = []
        for part in line.split("\r"):
            shown[: len(part)] = part
        lines.append("".join(shown))
    return "\n".join(lines)


def _output(out: Mapping[str, Any]) -> Output:
    kind = str(out.get("output_type", ""))
    if kind == "stream":
        text = _overstrike(strip_ansi(_text(out.get("text"))))
        return Output(kind, text, (), str(out.get("name", "")))
    if kind in ("execute_result", "display_data"):
        data = out.get("data") or {}
        mime = tuple(k for k in data if k != "text/plain")
        return Output(kind, strip_ansi(_text(data.get("text/plain"))), mime)
    if kind == "error":
        ename, evalue = str(out.get("ename", "")), str(out.get("evalue", ""))
        traceback = "\n".join(map(str, out.get("traceback") or ()))
        text = f"{ename}: {evalue}" + (f"\n{traceback}" if traceback else "")
        return Output(kind, strip_ansi(text), (), ename)
    return Output(kind, "")


def _truncate(outputs: list[Output], budget: int, label: str, index: int) -> list[Output]:
    total = sum(len(o.text) for o in outputs)
    if total <= budget:
        return outputs
    log.info("%s: cell %d output cut from %d to %d characters", label, index, total, budget)
    kept: list[Output] = []
    for out in outputs:
        if len(out.text) <= budget:
            kept.append(out)
            budget -= len(out.text)
            continue
        omitted = len(out.text) - budget
        text = f"{out.text[:budget]}\n[... output truncated: {omitted:,} characters not shown]"
        kept.append(Output(out.kind, text, out.mime, out.name))
        budget = 0
    return kept


def _cell(index: int, cell: NotebookNode, max_chars: int, label: str) -> Cell:
    kind: CellKind = cell.cell_type
    outputs: list[Output] = []
    if kind == "code":
        outputs = _truncate([_output(o) for o in cell.get("outputs", [])], max_chars, label, index)
    count = cell.get("execution_count") if kind == "code" else None
    count = count if isinstance(count, int) else None
    return Cell(str(cell.id), index, kind, _text(cell.source), tuple(outputs), count)


# --- language --------------------------------------------------------------------------


def _language_word(value: Any) -> Language | None:
    word = str(value or "").strip().lower()
    return "r" if word in ("r", "ir") else "python" if word.startswith("python") else None


def _kernel_name_language(name: Any) -> Language | None:
    """``python3``, ``conda-env-ds-py`` -> python; ``ir``, ``ir43``, ``conda-env-x-r`` -> r."""
    tokens = [t for t in re.split(r"[^a-z0-9]+", str(name or "").lower()) if t]
    if any(t.startswith(("python", "xpython")) or t in ("py", "py3", "ipykernel") for t in tokens):
        return "python"
    if any(t == "r" or re.fullmatch(r"ir\d*|irkernel", t) for t in tokens):
        return "r"
    return None


def _detect_language(metadata: Mapping[str, Any], sources: Iterable[str]) -> Language:
    kernelspec = metadata.get("kernelspec") or {}
    language_info = metadata.get("language_info") or {}
    for guess in (
        _language_word(kernelspec.get("language")),
        _kernel_name_language(kernelspec.get("name")),
        _language_word(language_info.get("name")),
    ):
        if guess is not None:
            return guess
    text = "\n".join(sources)
    return "r" if len(_R_HINTS.findall(text)) > len(_PY_HINTS.findall(text)) else "python"
