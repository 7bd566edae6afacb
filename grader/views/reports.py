"""Rows and files made from reports, for the app's Grade and Review pages.

Presentation only, no Streamlit: plain rows with units in the column names, a
diff of two reports, the notebook as cells labelled by who wrote them (numbered as
the letter numbers them), and the download files (``grader.views.downloads``).
Model-written text is always labelled as such; numbers come from the reports
(points) and the engine's measurements (tok/s, TTFT); percentages are whole, as the
letter writes them (``percent``).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..analysis.template import match_template
from ..errors import NotebookError
from ..exports.formats import (
    as_points,
    cell_name,
    cell_number,
    feedback_zip,
    gradebook,
    percent_text,
    points_text,
    student_name,
    whole_percent,
)
from ..notebooks.archive import InputProblem
from ..notebooks.load import load_both, load_notebook
from ..types import GradeReport, LayerResult, Notebook
from .downloads import Download, Reports, downloads
from .labels import criterion_labels


def percent(score: float | None, max_score: float | None) -> int | None:
    """The score in whole percent, as the student's letter writes it (half up; never 100
    short of full, nor 0 above nothing: ``grader.letters.numbers``); None when there is
    no score or no maximum."""
    return whole_percent(score, max_score)


def problem_lines(problems: Sequence[InputProblem], hide_names: bool = False) -> list[str]:
    """What went wrong with each file that could not be read; ``hide_names`` numbers
    them ("unreadable file 1") instead of naming them."""
    return [f"{f'unreadable file {i}' if hide_names else p.file}: not graded: {p.reason}"
            for i, p in enumerate(problems, 1)]


def result_rows(graded: Sequence[tuple[int, GradeReport]]) -> list[dict[str, Any]]:
    """One row per report (grade id, student, score, points per criterion, flags, review);
    reports come with pseudonyms from the store when names are hidden. Files that could
    not be read at all are no rows here: ``problem_lines`` names them, with the reason."""
    rows = []
    for grade_id, r in graded:
        row: dict[str, Any] = {
            "grade": grade_id, "student": student_name(r), "file": r.file,
            "score": None if r.score is None else gradebook(r.score, r.max_score),
            "max": r.max_score,
            "%": percent(r.score, r.max_score),
        }
        row.update({f"{c.id} (/{as_points(c.max_points)})": gradebook(c.points, c.max_points)
                    for c in r.criteria})
        row.update({
            "needs review": ", ".join(r.needs_review) if r.status == "graded" else "all",
            "flags": ", ".join(dict.fromkeys(f.code for f in r.flags)),
            "status": r.status if r.status == "graded" else f"error: {r.error}",
        })
        rows.append(row)
    return rows


def criterion_rows(r: GradeReport) -> list[dict[str, Any]]:
    """One row per criterion, what a narrow column must show first: the criterion as the
    rubric titles it, its points and maximum, whether it needs review; then why, the
    checks' messages, its kind and id."""
    labels = criterion_labels(r.criteria)
    return [{
        "criterion": labels[c.id], "points": gradebook(c.points, c.max_points),
        "max": c.max_points, "needs review": c.needs_review,
        "why review": "; ".join(c.review_reasons),
        "checks": "; ".join(f"{ch.check} {ch.target}: {ch.message}" for ch in c.checks),
        "kind": c.kind, "id": c.id,
    } for c in r.criteria]


def cell_positions(data: bytes | None, name: str) -> dict[str, int]:
    """Each cell's id -> its 0-based position in the notebook ``data`` ({} without it or
    when it does not read), so that evidence names cells as the letter does."""
    if not data:
        return {}
    try:
        return {c.id: c.index for c in load_notebook(data, name).cells}
    except NotebookError:
        return {}


def evidence_rows(r: GradeReport, criterion_id: str,
                  positions: dict[str, int] | None = None) -> list[dict[str, Any]]:
    """What each check of a criterion found, and where (cell, line). With ``positions``
    (``cell_positions``), the cell as the letter and the notebook view number it
    ("cell 16"); else its id."""
    crit = next((c for c in r.criteria if c.id == criterion_id), None)
    if crit is None:
        return []
    positions = positions or {}

    def cell(cell_id: str | None) -> str | None:
        return cell_name(positions[cell_id]) if cell_id in positions else cell_id

    rows = []
    weights = sum(ch.weight for ch in crit.checks if ch.check != "level") or 1.0
    for ch in crit.checks:
        # the check's part of the criterion's points (never a second scale: "1 / 1" under
        # a 2-point criterion read as a contradiction); a level gives the criterion's share
        part = crit.max_points * (1.0 if ch.check == "level" else ch.weight / weights)
        for e in ch.evidence or (None,):
            rows.append({
                "layer": ch.layer, "check": ch.check, "target": ch.target,
                "points": f"{as_points(ch.score * part, part)} of {as_points(part)}",
                "status": ch.status,
                "message": ch.message, "cell": cell(e.cell_id) if e else None,
                "line": e.line if e else None, "seen": e.text if e else "",
            })
    return rows


def model_rows(r: GradeReport) -> list[dict[str, Any]]:
    """What the models said per criterion (L3 for code, L4 for written answers)."""
    rows = []
    for c in r.criteria:
        n = c.model_notes
        if not n:
            continue
        if c.kind == "code":
            said = n.get("issue", "")
            if n.get("suggestion"):
                said += f" (suggestion: {n['suggestion']})"
            rows.append({"criterion": c.id, "layer": "L3", "verdict": n.get("verdict", ""),
                         "model wrote": said, "quote": n.get("quote", ""),
                         "confidence": n.get("confidence", "")})
        else:
            said = "; ".join(f"{k.replace('_', ' ')}: {n[k]}"
                             for k in ("strength", "improve", "next_step") if n.get(k))
            rows.append({"criterion": c.id, "layer": "L4", "verdict": n.get("score", ""),
                         "model wrote": said, "quote": "", "confidence": ""})
    return rows


def request_rows(r: GradeReport) -> list[dict[str, Any]]:
    """The measured requests behind layers 3 and 4: speeds, TTFT, route, KV moved."""
    rows = []
    for name in ("L3", "L4"):
        lr = r.layers.get(name)
        if lr is None or lr.details.get("not_run") or lr.details.get("pending"):
            continue  # no request made (yet): the Model tab says why
        d = lr.details
        rows.append({
            "layer": name, "route": d.get("route", ""), "method": d.get("method", ""),
            "prompt tokens": d.get("prompt_tokens"), "cached tokens": d.get("cached_tokens"),
            "prefill tok/s": d.get("prefill_tps"), "decode tokens": d.get("decode_tokens"),
            "decode tok/s": d.get("decode_tps"), "TTFT (s)": d.get("ttft_s"),
            "total (s)": d.get("total_s"),
            "KV moved (MB)": None if d.get("kv_bytes") is None else round(d["kv_bytes"] / 1e6,
                                                                            2),
            "parallel efficiency": d.get("parallel_efficiency"),
            "advisory": d.get("advisory"), "error": lr.error,
        })
    return rows


def layer_seconds(lr: LayerResult) -> float:
    """A layer's seconds as the report recorded them: its own ``seconds`` (L1, L2), and for
    the model layers, which send their requests together and leave it at 0, the
    engine-measured seconds of their requests (``details.total_s``), as on the Dashboard."""
    if lr.seconds:
        return lr.seconds
    engine = lr.details.get("total_s")
    if isinstance(engine, int | float) and not isinstance(engine, bool):
        return float(engine)
    start, end = lr.details.get("started_at"), lr.details.get("finished_at")
    if isinstance(start, int | float) and isinstance(end, int | float) and end >= start:
        return float(end - start)  # a failed request: how long it ran before it failed
    return 0.0


def layer_rows(r: GradeReport) -> list[dict[str, Any]]:
    """Each layer's run: its seconds (``layer_seconds``), and for the model layers sent
    together the wall seconds of the pair."""
    return [{"layer": name, "seconds": round(layer_seconds(lr), 2),
             "wall, with the other model layer (s)": _wall(lr), "checks": len(lr.checks),
             "flags": len(lr.flags), "notes": "; ".join(lr.notes), "error": lr.error}
            for name, lr in r.layers.items()]


def _wall(lr: LayerResult) -> float | None:
    wall = lr.details.get("parallel_wall_s")
    return round(float(wall), 2) if isinstance(wall, int | float) else None


def diff_rows(old: GradeReport, new: GradeReport) -> list[dict[str, Any]]:
    """Criterion by criterion, what a regrade changed (criteria in either report), then
    the total, in points and in percent of the points possible: a rubric edit may change
    the points possible too, so a score can fall in points and rise in percent.
    Unchanged criteria are listed too, with a change of 0."""
    before = {c.id: c for c in old.criteria}
    after = {c.id: c for c in new.criteria}
    rows = []
    for cid in dict.fromkeys([*before, *after]):
        a, b = before.get(cid), after.get(cid)
        rows.append(_diff_row(cid, None if a is None else a.points,
                              None if a is None else a.max_points,
                              None if b is None else b.points,
                              None if b is None else b.max_points,
                              bool(a and a.needs_review), bool(b and b.needs_review)))
    rows.append(_diff_row("total", old.score, old.max_score, new.score, new.max_score,
                          bool(old.needs_review), bool(new.needs_review)))
    return rows


def _diff_row(what: str, pa: float | None, ma: float | None, pb: float | None,
              mb: float | None, review_a: bool, review_b: bool) -> dict[str, Any]:
    pct_a, pct_b = percent(pa, ma), percent(pb, mb)
    return {"criterion": what, "before": points_text(pa, ma), "after": points_text(pb, mb),
            "change (points)": None if pa is None or pb is None else gradebook(pb - pa),
            "before %": pct_a, "after %": pct_b,
            "change (% points)": None if pct_a is None or pct_b is None
            else round(pct_b - pct_a, 1),
            "review before": review_a, "review after": review_b}


@dataclass(frozen=True, slots=True)
class CellView:
    index: int  # 0-based position; shown as ``number``, the letter's numbering
    kind: str  # code | markdown | raw
    source: str
    outputs: str  # the outputs as plain text
    origin: str  # "student", "modified" (template cell the student changed), "template"
    has_error: bool
    images: tuple[bytes, ...] = ()  # PNG outputs (plots), as stored in the notebook

    @property
    def number(self) -> int:
        """The cell's number as the student's letter names it ("cell 16")."""
        return cell_number(self.index)

    @property
    def name(self) -> str:
        """"cell 16", as in the letter."""
        return cell_name(self.index)


MAX_IMAGES_PER_CELL = 4
MAX_IMAGE_BYTES = 2 * 1024 * 1024


def _png_outputs(cell: Any) -> tuple[bytes, ...]:
    """The PNG images a code cell's stored outputs hold (the plots), capped in number and
    size; anything that is not valid base64 PNG is left out."""
    found = []
    for out in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
        b64 = (out.get("data") or {}).get("image/png")
        if isinstance(b64, list):
            b64 = "".join(b64)
        if not isinstance(b64, str) or len(b64) > MAX_IMAGE_BYTES * 4 // 3 + 4:
            continue
        try:
            png = base64.b64decode(b64, validate=False)
        except (binascii.Error, ValueError):
            continue
        if png.startswith(b"\x89PNG\r\n\x1a\n"):
            found.append(png)
        if len(found) == MAX_IMAGES_PER_CELL:
            break
    return tuple(found)


def notebook_cells(data: bytes, name: str, template: Notebook | None = None,
                   placeholders: Sequence[str] = ()) -> list[CellView]:
    """A submission's cells for display, each labelled by who wrote it (against the
    template when given), with their text outputs and plots. Raises NotebookError naming
    the file when unreadable."""
    nb, raw = load_both(data, name)
    origins: dict[str, str] = {}
    if template is not None:
        match = match_template(template, nb, tuple(placeholders))
        origins = {o.cell.id: o.status for o in match.origins}
    return [CellView(c.index, c.kind, c.source, c.output_text,
                     origins.get(c.id, "student"), c.has_error, _png_outputs(node))
            for c, node in zip(nb.cells, raw.cells, strict=True)]


_MD_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)]*)\)")
_MD_REF_IMAGE = re.compile(r"^\s*\[[^\]]+\]:\s*\S+", re.MULTILINE)


def offline_markdown(text: str) -> str:
    """Student markdown made safe to show: an image it links (``![alt](https://...)``)
    would make the instructor's browser fetch it from the student's choice of server
    (a tracking pixel); such images become a note with the address, as text. Images
    embedded as data: URLs stay. Reference-style definitions are shown as text."""
    def image(m: re.Match[str]) -> str:
        alt, target = m.group(1), m.group(2).strip().lstrip("<")
        if target.startswith("data:image/"):
            return m.group(0)
        return f"*[image not loaded: {alt or 'no description'}]* `{target.replace('`', '')}`"

    text = _MD_IMAGE.sub(image, text)
    return _MD_REF_IMAGE.sub(lambda m: f"`{m.group(0).strip()}`", text)


__all__ = ["CellView", "Download", "Reports", "cell_positions", "criterion_rows",
           "diff_rows", "downloads", "evidence_rows", "feedback_zip", "layer_rows",
           "layer_seconds", "model_rows", "notebook_cells", "offline_markdown", "percent",
           "percent_text", "points_text", "problem_lines", "request_rows", "result_rows"]
