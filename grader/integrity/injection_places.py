"""Every place of a submission that a model or an instructor reads, scanned for
text aimed at an AI grader (the rules are ``grader.integrity.injection``'s).

The places:

- every cell's source, template cells included. A passage the instructor's own
  notebooks (template and solution) also contain is theirs, so a given cell is
  judged by what the student added to it: a comment appended to a "do not change"
  cell is found, the template's own wording ("the grader runs it as is") is not;
- stored outputs in every format: plain text, HTML and markdown (with their
  hidden parts), LaTeX, JSON, SVG, JavaScript, errors and their tracebacks, text
  chunks of PNG images, and the outputs' metadata;
- the outputs of our own run (``fresh``), which differ from the stored ones when
  the text is built only when the cell runs (decoded, reversed, computed);
- the notebook's metadata, each cell's metadata (tags included) and the
  attachments of markdown cells (their names, text and PNG text chunks).

An output passage that the paired instructor cell also produces (a given test
cell printing "8/8 tests passed" in the solution) is the instructor's.

Each distinct text is scanned once per assignment (``injection_memo.ScanMemo``, kept
with the instructor's text in the assignment's cache): the template and the solution
first, then only what a submission does not share with them or with the submissions
before it (a cell the student wrote or changed, its own outputs).
"""

from __future__ import annotations

import binascii
import json
import logging
import re
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..analysis.template import TemplateMatch, match_template
from ..layers.base import SubmissionContext
from ..notebooks.load import load_notebook_node, strip_ansi
from ..sandbox.execution import ExecutionResult
from ..types import Notebook, Output
from .injection import InjectionHit
from .injection_memo import ScanMemo

__all__ = ["InstructorText", "fresh_outputs", "instructor_text", "scan_context",
           "scan_context_outputs", "scan_context_sources", "scan_submission"]

log = logging.getLogger(__name__)

Fresh = Mapping[str, Sequence[Output]]  # cell id -> the outputs of our own run
Signature = tuple[str, str]  # (rule, excerpt), as the instructor's text produces it

_MARKUP = ("text/html", "text/markdown", "image/svg+xml")
_TEXT_MIME = re.compile(r"^(?:text/|image/svg\+xml$|application/(?:.*json|javascript|x-latex))")
_PNG = b"\x89PNG\r\n\x1a\n"
MAX_PNG_TEXT = 100_000  # characters read out of one image's text chunks
MAX_JSON_CHARS = 200_000  # a larger JSON output is read by its strings only
# Scanning costs about 3 s per million characters: an output longer than this (the
# notebook loader keeps 100,000 characters of a cell's outputs) is read this far.
MAX_SCAN_CHARS = 1_000_000
_SPLIT = re.compile(r"[-_.:/]+|(?<=[a-z])(?=[A-Z])")


@dataclass(frozen=True, slots=True)
class InstructorText:
    """What the instructor's notebooks themselves match, so it is never the student's."""

    sources: frozenset[Signature]  # every cell source, metadata and attachment
    outputs: Mapping[str, frozenset[Signature]]  # template cell id -> its cells' outputs
    # what was scanned, with what it held: the submissions' texts seen before
    memo: ScanMemo = field(default_factory=ScanMemo, compare=False, repr=False)


def instructor_text(template: Notebook, solution: Notebook, template_raw: Any = None,
                    solution_raw: Any = None, solution_run: Fresh | None = None,
                    memo: ScanMemo | None = None) -> InstructorText:
    """The passages the template and the solution (stored and, with ``solution_run``,
    fresh outputs) match: a submission repeating them repeats the instructor. Their
    texts are remembered in ``memo`` (a new one when None), which the submissions use."""
    memo = ScanMemo() if memo is None else memo
    sources: set[Signature] = set()
    outputs: dict[str, set[Signature]] = {}
    paired = {o.cell.id: o.template_cell.id
              for o in match_template(template, solution, ()).origins if o.template_cell}
    for nb, raw in ((template, template_raw), (solution, solution_raw)):
        for hit in _notebook_metadata(raw, memo):
            sources.add(_signature(hit))
        for i, cell in enumerate(nb.cells):
            raw_cell = _raw_cell(raw, i)
            sources.update(map(_signature, memo.source(cell, nb.language)))
            sources.update(map(_signature, _cell_extras(cell.id, raw_cell, memo)))
            key = cell.id if nb is template else paired.get(cell.id)
            if key is None:
                continue
            found = _stored_outputs(cell.id, raw_cell, cell.outputs, memo)
            if nb is solution and solution_run is not None:
                found += _fresh(cell.id, solution_run.get(cell.id, ()), memo)
            outputs.setdefault(key, set()).update(map(_signature, found))
    return InstructorText(frozenset(sources), {k: frozenset(v) for k, v in outputs.items()},
                          memo)


def scan_submission(nb: Notebook, raw: Any, match: TemplateMatch, instructor: InstructorText,
                    fresh: Fresh | None = None) -> list[InjectionHit]:
    """Every passage aimed at an AI grader in a submission, the instructor's own aside.

    ``raw``: the submission's nbformat node (metadata, attachments, every output
    format); ``fresh``: the outputs of our own run of it, by cell id.
    """
    return [*_source_hits(nb, raw, instructor), *_output_hits(nb, raw, match, instructor, fresh)]


def _source_hits(nb: Notebook, raw: Any, instructor: InstructorText) -> list[InjectionHit]:
    """The notebook's metadata, and every cell's source, metadata and attachments."""
    memo = instructor.memo
    hits = [h for h in _notebook_metadata(raw, memo) if _signature(h) not in instructor.sources]
    for i, cell in enumerate(nb.cells):
        own = [*memo.source(cell, nb.language), *_cell_extras(cell.id, _raw_cell(raw, i), memo)]
        hits += [h for h in own if _signature(h) not in instructor.sources]
    return hits


def _output_hits(nb: Notebook, raw: Any, match: TemplateMatch, instructor: InstructorText,
                 fresh: Fresh | None) -> list[InjectionHit]:
    """Every cell's stored outputs, and those of our run (``fresh``)."""
    hits: list[InjectionHit] = []
    for i, cell in enumerate(nb.cells):
        origin = match.origin(cell.id)
        pair = origin.template_cell.id if origin is not None and origin.template_cell else None
        given = instructor.outputs.get(pair, frozenset()) if pair is not None else frozenset()
        outs = _stored_outputs(cell.id, _raw_cell(raw, i), cell.outputs, instructor.memo)
        if fresh is not None:
            outs += _fresh(cell.id, fresh.get(cell.id, ()), instructor.memo)
        hits += [h for h in outs if _signature(h) not in given]
    return hits


def scan_context(ctx: SubmissionContext, fresh: Fresh | None = None) -> list[InjectionHit]:
    """``scan_submission`` for one submission of the pipeline; what the instructor's
    notebooks match is worked out once per assignment (with the solution's run once
    layer 2 has made it)."""
    return scan_submission(ctx.submission, ctx.raw, ctx.match, _known(ctx), fresh)


def scan_context_sources(ctx: SubmissionContext) -> list[InjectionHit]:
    """The part of ``scan_context`` that needs no run: the sources, metadata and
    attachments, where lines are set aside before any layer reads the answers."""
    return _source_hits(ctx.submission, ctx.raw, _known(ctx))


def scan_context_outputs(ctx: SubmissionContext, fresh: Fresh | None = None,
                         ) -> list[InjectionHit]:
    """The rest of ``scan_context``: stored outputs and those of our run."""
    return _output_hits(ctx.submission, ctx.raw, ctx.match, _known(ctx), fresh)


def _known(ctx: SubmissionContext) -> InstructorText:
    """What the instructor's notebooks match, once per assignment (and once more with the
    solution's run, when layer 2 has made it), with the assignment's one ``ScanMemo``."""
    actx = ctx.assignment
    run = actx.cache.get("solution_run")
    solution_run = fresh_outputs(run) if isinstance(run, ExecutionResult) else None
    key = "injection_instructor_text" + (" with the solution's run" if solution_run else "")
    with actx.lock:
        known = actx.cache.get(key)
        if known is None:
            template_raw = load_notebook_node(actx.assignment.template)
            memo = actx.cache.setdefault("injection_scan_memo", ScanMemo())
            known = actx.cache[key] = instructor_text(
                actx.template, actx.solution, template_raw, actx.solution_raw, solution_run,
                memo)
    return known


def fresh_outputs(run: ExecutionResult) -> dict[str, tuple[Output, ...]]:
    """The outputs of a run by cell id, for ``fresh`` (nothing when it did not run)."""
    return {} if run.error else {c.cell_id: c.outputs for c in run.cells}


# --- the places --------------------------------------------------------------------------


def _signature(hit: InjectionHit) -> Signature:
    return hit.rule, " ".join(hit.text.split()).casefold()


def _raw_cell(raw: Any, index: int) -> Mapping[str, Any]:
    cells = raw.get("cells", []) if isinstance(raw, Mapping) else []
    cell = cells[index] if index < len(cells) else {}
    return cell if isinstance(cell, Mapping) else {}


def _notebook_metadata(raw: Any, memo: ScanMemo) -> list[InjectionHit]:
    meta = raw.get("metadata") if isinstance(raw, Mapping) else None
    return _metadata_hits(None, meta, memo) if meta else []


def _cell_extras(cell_id: str, raw_cell: Mapping[str, Any], memo: ScanMemo,
                 ) -> list[InjectionHit]:
    """A cell's metadata and attachments."""
    hits = _metadata_hits(cell_id, raw_cell.get("metadata"), memo)
    attachments = raw_cell.get("attachments")
    if isinstance(attachments, Mapping):
        for name, bundle in attachments.items():
            hits += memo.text(str(name), "attachment", cell_id)
            if isinstance(bundle, Mapping):
                hits += _bundle(cell_id, bundle, "attachment", memo)
    return hits


def _metadata_hits(cell_id: str | None, meta: Any, memo: ScanMemo) -> list[InjectionHit]:
    if not meta:
        return []
    lines = []
    for s in _strings(meta):
        lines.append(s)
        if not any(c.isspace() for c in s) and (split := _SPLIT.sub(" ", s).strip()) != s:
            lines.append(split)  # tags and keys: "ignore-previous-instructions"
    return memo.text("\n".join(lines), "metadata", cell_id)


def _strings(value: Any, depth: int = 0) -> Iterator[str]:
    """Every key and string value in a JSON value (numbers are data, not text)."""
    if depth > 50:
        return
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield str(k)
            yield from _strings(v, depth + 1)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v, depth + 1)


def _stored_outputs(cell_id: str, raw_cell: Mapping[str, Any], outputs: Sequence[Output],
                    memo: ScanMemo) -> list[InjectionHit]:
    """Every stored output of a cell, in every format, and the outputs' metadata."""
    raw_outputs = raw_cell.get("outputs")
    if not isinstance(raw_outputs, list):  # no node: the normalised text outputs
        return _fresh(cell_id, outputs, memo, "output")
    hits: list[InjectionHit] = []
    for out in raw_outputs:
        if not isinstance(out, Mapping):
            continue
        kind = out.get("output_type")
        if kind == "stream":
            hits += memo.text(_capped(strip_ansi(_text(out.get("text"))), cell_id), "output",
                              cell_id)
        elif kind == "error":
            trace = "\n".join(map(str, out.get("traceback") or ()))
            text = f"{out.get('ename', '')}: {out.get('evalue', '')}\n{trace}"
            hits += memo.text(_capped(strip_ansi(text), cell_id), "output", cell_id)
        elif isinstance(out.get("data"), Mapping):
            hits += _bundle(cell_id, out["data"], "output", memo)
        hits += _metadata_hits(cell_id, out.get("metadata"), memo)
    return hits


def _bundle(cell_id: str, bundle: Mapping[str, Any], where: str, memo: ScanMemo,
            ) -> list[InjectionHit]:
    """A mime bundle (an output's data, an attachment): every text format, and PNG text."""
    hits: list[InjectionHit] = []
    for mime, value in bundle.items():
        if _TEXT_MIME.match(mime):
            text = _json_text(value) if mime.endswith("json") else _text(value)
            hits += memo.text(_capped(strip_ansi(text), cell_id), where, cell_id,
                              markup=mime in _MARKUP)
        elif mime == "image/png":
            hits += memo.text(_png_text(_text(value)), where, cell_id)
    return hits


def _fresh(cell_id: str, outputs: Sequence[Output], memo: ScanMemo,
           where: str = "run_output") -> list[InjectionHit]:
    texts = [t for o in outputs for t in (o.text, *(text for _, text in o.rich)) if t]
    return [h for t in texts for h in memo.text(t, where, cell_id)]


def _text(value: Any) -> str:
    return "".join(map(str, value)) if isinstance(value, list) else str(value or "")


def _json_text(value: Any) -> str:
    """A JSON output as written, or, when it is large (a chart's data), its strings."""
    if not isinstance(value, Mapping | list):
        return _text(value)
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= MAX_JSON_CHARS else "\n".join(_strings(value))


def _capped(text: str, cell_id: str) -> str:
    if len(text) <= MAX_SCAN_CHARS:
        return text
    log.warning("cell %s: an output of %d characters is scanned for text aimed at the grader "
                "only in its first %d", cell_id, len(text), MAX_SCAN_CHARS)
    return text[:MAX_SCAN_CHARS]


def _png_text(data: str) -> str:
    """The text chunks (tEXt, zTXt, iTXt) of a base64 PNG: a caption a reader never sees."""
    try:
        png = binascii.a2b_base64(data.encode("ascii", "ignore"))
    except binascii.Error as exc:
        log.info("an image/png output is not valid base64 (%s): its text is not read", exc)
        return ""
    if not png.startswith(_PNG):
        return ""
    texts, pos, size = [], len(_PNG), 0
    while pos + 8 <= len(png) and size < MAX_PNG_TEXT:
        length, kind = int.from_bytes(png[pos:pos + 4], "big"), png[pos + 4:pos + 8]
        body = png[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IEND":
            break
        if kind in (b"tEXt", b"zTXt", b"iTXt"):
            text = _chunk_text(kind, body)
            texts.append(text)
            size += len(text)
    return "\n".join(texts)[:MAX_PNG_TEXT]


def _chunk_text(kind: bytes, body: bytes) -> str:
    key, _, rest = body.partition(b"\0")
    try:
        if kind == b"tEXt":
            return f"{key.decode('latin-1')} {rest.decode('latin-1')}"
        if kind == b"zTXt":
            return f"{key.decode('latin-1')} {_inflate(rest[1:]).decode('latin-1')}"
        compressed, rest = rest[:1] == b"\1", rest[2:]
        _lang, _, rest = rest.partition(b"\0")
        _translated, _, text = rest.partition(b"\0")
        raw = _inflate(text) if compressed else text
        return f"{key.decode('latin-1')} {raw.decode('utf-8', 'replace')}"
    except zlib.error as exc:
        log.info("a PNG text chunk does not inflate (%s): it is not read", exc)
        return ""


def _inflate(data: bytes) -> bytes:
    return zlib.decompressobj().decompress(data, MAX_PNG_TEXT)  # bounded: no zip bomb
