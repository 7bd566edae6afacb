"""Validated nbformat cells into typed ``Cell``s, and the notebook's language.

Part of reading a notebook (``grader.notebooks.load`` parses, repairs and cleans the
text; this module normalises what is left). Outputs become plain text: ANSI
escape sequences (CSI colours, OSC hyperlinks and titles, other escapes) are
removed (``strip_ansi``), carriage returns are applied as a terminal would, and
outputs longer than the per-cell budget are cut with a marker saying how much
was left out.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any

from nbformat import NotebookNode

from grader.types import Cell, CellKind, Language, Output

__all__ = ["detect_language", "strip_ansi", "text_of", "to_cell"]

log = logging.getLogger(__name__)

# ANSI escapes: CSI (ESC [ or 8-bit 0x9B), OSC (ESC ] ... BEL/ST), DCS/SOS/PM/APC strings
# (ESC P/X/^/_ ... ST), any other two- or three-byte escape, then any stray ESC.
_ANSI_RE = re.compile(
    r"(?:\x1b\]|\x9d)[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"  # OSC, terminated
    r"|(?:\x1b[PX^_]|[\x90\x98\x9e\x9f])[^\x1b\x9c]*(?:\x1b\\|\x9c)"  # DCS/SOS/PM/APC
    r"|(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"  # CSI: params, intermediates, final byte
    r"|\x1b[ -/]*[0-~]"  # nF / Fp / Fe / Fs escapes, e.g. ESC ( B, ESC 7, ESC M
    r"|\x1b"  # a stray ESC left by a truncated sequence
)
# Content hints, counted when the metadata does not name the language.
_R_HINTS = re.compile(r"[\w.)\]]\s*<-\s*\S|\b(?:library|require)\(|%>%|\|>|(?<![\w.])c\(")
_PY_HINTS = re.compile(r"(?m)^\s*(?:import\s+\w|from\s+[\w.]+\s+import\s|def\s+\w+\s*\()|\bprint\(")


def strip_ansi(text: str) -> str:
    """``text`` without terminal escape sequences (colours, cursor moves, hyperlinks)."""
    return _ANSI_RE.sub("", text)


def text_of(value: Any) -> str:
    """A notebook text field (a string or a list of strings) as one string."""
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
        text = _overstrike(strip_ansi(text_of(out.get("text"))))
        return Output(kind, text, (), str(out.get("name", "")))
    if kind in ("execute_result", "display_data"):
        data = out.get("data") or {}
        mime = tuple(k for k in data if k != "text/plain")
        return Output(kind, strip_ansi(text_of(data.get("text/plain"))), mime)
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


def to_cell(index: int, cell: NotebookNode, max_chars: int, label: str) -> Cell:
    """The typed ``Cell`` of a validated nbformat cell, outputs cut to ``max_chars``."""
    kind: CellKind = cell.cell_type
    outputs: list[Output] = []
    if kind == "code":
        outputs = _truncate([_output(o) for o in cell.get("outputs", [])], max_chars, label, index)
    count = cell.get("execution_count") if kind == "code" else None
    count = count if isinstance(count, int) else None
    meta = (cell.get("metadata") or {}).get("nbgrader")
    locked = ""
    if isinstance(meta, dict) and meta.get("locked") is True:
        locked = str(meta.get("grade_id") or f"cell-{cell.id}")[:200]
    return Cell(str(cell.id), index, kind, text_of(cell.source), tuple(outputs), count, locked)


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


def detect_language(metadata: Mapping[str, Any], sources: Iterable[str]) -> Language:
    """The kernelspec's language, else its name's, else language_info's, else what the
    code looks like (R hints against Python hints)."""
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
