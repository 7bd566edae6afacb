"""Exports: Canvas gradebook CSV, plain CSV, JSON, and per-student feedback.

Feedback pages show each criterion's points with the evidence the grader found
(cells, lines, values); student text is always escaped. Names come from the
reports, so an anonymised batch exports pseudonyms only.

Every export is text any UTF-8 writer takes (a lone surrogate that reached a
report becomes U+FFFD, see ``grader.safe_text``), and files are named from
``safe_stem``: short ASCII stems, unique even on a file system that ignores case.
"""

from __future__ import annotations

import csv
import html
import io
import json
import zipfile
from collections.abc import Sequence
from pathlib import Path

from .safe_text import STEM_LIMIT, file_stem, scrub, utf8
from .serialize import report_to_dict
from .types import CriterionResult, GradeReport


def student_name(r: GradeReport) -> str:
    """Who a report is of, as shown: display name, else student id, else the file's stem."""
    return r.display_name or r.student_id or Path(r.file).stem


def _pct(r: GradeReport) -> str:
    return "" if r.score is None or not r.max_score else f"{100 * r.score / r.max_score:.1f}"


def _fmt(x: float | None) -> str:
    return "" if x is None else f"{x:g}"


def canvas_csv(reports: Sequence[GradeReport], assignment_title: str) -> str:
    """A CSV for Canvas's gradebook import (Grades > Import).

    Canvas matches rows by ``ID`` (its user id, which Canvas download file
    names carry); ungraded submissions are left blank, never given a 0.
    """
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", assignment_title])
    w.writerow(["Points Possible", "", "", "", "", _fmt(reports[0].max_score) if reports else ""])
    for r in reports:
        w.writerow([student_name(r), r.student_id, "", "", "", _fmt(r.score)])
    return scrub(buf.getvalue())


def plain_csv(reports: Sequence[GradeReport]) -> str:
    crit_ids = list(dict.fromkeys(c.id for r in reports for c in r.criteria))
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(
        [
            "file",
            "student_id",
            "name",
            "status",
            "score",
            "max_score",
            "percent",
            *crit_ids,
            "needs_review",
            "flags",
            "error",
        ]
    )
    for r in reports:
        by_id = {c.id: c for c in r.criteria}
        w.writerow(
            [
                r.file,
                r.student_id,
                student_name(r),
                r.status,
                _fmt(r.score),
                _fmt(r.max_score),
                _pct(r),
                *[_fmt(by_id[c].points) if c in by_id else "" for c in crit_ids],
                " ".join(r.needs_review),
                " ".join(sorted({f.code for f in r.flags})),
                r.error,
            ]
        )
    return scrub(buf.getvalue())


def json_export(reports: Sequence[GradeReport]) -> str:
    return scrub(json.dumps([report_to_dict(r) for r in reports], indent=2, ensure_ascii=False))


def _criterion_lines(c: CriterionResult) -> list[str]:
    lines = []
    for ch in c.checks:
        lines.append(f"{ch.check} {ch.target}: {ch.message}")
        for e in ch.evidence[:3]:
            where = f"cell {e.cell_id}" if e.cell_id else "notebook"
            if e.line:
                where += f", line {e.line}"
            lines.append(f"    {where}: {e.text}")
    notes = c.model_notes
    if notes.get("strength") or notes.get("improve") or notes.get("next_step"):
        lines.append("model-written feedback (a language model's reading; your instructor "
                     "decides the points):")
        for key, label in (("strength", "strength"), ("improve", "to improve"),
                           ("next_step", "next step")):
            if notes.get(key):
                lines.append(f"    {label}: {notes[key]}")
    elif notes.get("issue") and notes["issue"].strip().lower() not in ("", "none"):
        lines.append(f"model-written note: {notes['issue']}")
    if c.needs_review:
        lines.append("to be reviewed by your instructor: " + "; ".join(c.review_reasons))
    return lines


def feedback_markdown(r: GradeReport, assignment_title: str) -> str:
    out = [f"# {assignment_title}: feedback for {student_name(r)}", ""]
    if r.status == "error":
        out += [f"This submission could not be graded: {r.error}", ""]
        return scrub("\n".join(out))
    out += [f"**Score: {_fmt(r.score)} / {_fmt(r.max_score)}** ({_pct(r)}%)", ""]
    for c in r.criteria:
        out += [f"## {c.title}: {_fmt(c.points)} / {_fmt(c.max_points)}", ""]
        out += [
            f"- {line}" if not line.startswith("    ") else f"  {line.strip()}"
            for line in _criterion_lines(c)
        ]
        out.append("")
    if r.flags:
        out += ["## Notes", ""] + [f"- {f.message}" for f in r.flags] + [""]
    return scrub("\n".join(out))


def feedback_html(r: GradeReport, assignment_title: str) -> str:
    e = html.escape
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{e(assignment_title)}"
        f" - {e(student_name(r))}</title><style>body{{font-family:sans-serif;max-width:50em;"
        "margin:2em auto}} .ev{color:#555;font-family:monospace;white-space:pre-wrap}"
        " .review{color:#a15c00}</style></head><body>",
        f"<h1>{e(assignment_title)}</h1><p>Feedback for <b>{e(student_name(r))}</b></p>",
    ]
    if r.status == "error":
        parts.append(f"<p>This submission could not be graded: {e(r.error)}</p></body></html>")
        return scrub("".join(parts))
    parts.append(f"<p><b>Score: {_fmt(r.score)} / {_fmt(r.max_score)}</b> ({_pct(r)}%)</p>")
    for c in r.criteria:
        parts.append(f"<h2>{e(c.title)}: {_fmt(c.points)} / {_fmt(c.max_points)}</h2><ul>")
        for line in _criterion_lines(c):
            cls = (
                "ev"
                if line.startswith("    ")
                else ("review" if line.startswith("to be reviewed") else "")
            )
            parts.append(f"<li class='{cls}'>{e(line.strip())}</li>")
        parts.append("</ul>")
    if r.flags:
        parts.append(
            "<h2>Notes</h2><ul>" + "".join(f"<li>{e(f.message)}</li>" for f in r.flags) + "</ul>"
        )
    parts.append("</body></html>")
    return scrub("".join(parts))


def safe_stem(text: str) -> str:
    """``text`` as a file name's stem: ASCII letters, digits, '.', '_' and '-' only, at most
    ``STEM_LIMIT`` bytes (see ``safe_text.file_stem``)."""
    return file_stem(text)


def feedback_stems(reports: Sequence[GradeReport]) -> list[str]:
    """One distinct file stem per report, from the student's name (as the report shows it:
    pseudonyms in an anonymised batch). Distinct ignoring case, as on macOS and Windows:
    a second "student042" (or "Student042") is "student042-2"."""
    used: set[str] = set()
    stems = []
    for r in reports:
        base = stem = safe_stem(student_name(r))
        n = 1
        while stem.casefold() in used:
            n += 1
            stem = f"{base[: STEM_LIMIT - len(str(n)) - 1]}-{n}"
        used.add(stem.casefold())
        stems.append(stem)
    return stems


def feedback_zip(reports: Sequence[GradeReport], assignment_title: str) -> bytes:
    """Per-student feedback pages (HTML) in one ZIP: feedback/<student>.html."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for r, stem in zip(reports, feedback_stems(reports), strict=True):
            z.writestr(f"feedback/{stem}.html", utf8(feedback_html(r, assignment_title)))
    return buf.getvalue()


def write_exports(
    reports: Sequence[GradeReport], out_dir: Path, assignment_title: str
) -> list[Path]:
    """Write every export into ``out_dir``; returns the files written. Raises ``OSError``
    (naming the path) when the folder cannot be made or a file cannot be written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    fb = out_dir / "feedback"
    fb.mkdir(exist_ok=True)
    written = []
    for name, text in (
        ("canvas.csv", canvas_csv(reports, assignment_title)),
        ("grades.csv", plain_csv(reports)),
        ("grades.json", json_export(reports)),
    ):
        (out_dir / name).write_bytes(utf8(text))
        written.append(out_dir / name)
    for r, stem in zip(reports, feedback_stems(reports), strict=True):
        for ext, text in (
            ("html", feedback_html(r, assignment_title)),
            ("md", feedback_markdown(r, assignment_title)),
        ):
            path = fb / f"{stem}.{ext}"
            path.write_bytes(utf8(text))
            written.append(path)
    return written
