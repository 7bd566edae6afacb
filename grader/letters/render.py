"""The student's letter written as Markdown and as one self-contained HTML page.

Markdown: student text is made inert (no emphasis, links, images, raw HTML, list
marks) and code goes in code spans fenced longer than any backtick run inside.
HTML: everything escaped, no external resources (no fonts, scripts or images to
fetch), A4 print styles. The PDF is ``grader.letters.pdf``.
"""

from __future__ import annotations

import html
import re

from ..safe_text import scrub
from .text import MODEL_LABEL, Letter, Phrase, Quote, Section

_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>!#|~&$])")


def md_text(text: str) -> str:
    """Plain text made inert in Markdown: no emphasis, links, images, HTML or list marks."""
    flat = _MD_SPECIAL.sub(r"\\\1", re.sub(r"\s+", " ", scrub(text)))
    return re.sub(r"^([-+=]|\d+\.)", r"\\\1", flat)


def md_code(text: str) -> str:
    flat = " ".join(scrub(text).split()) or " "
    fence = "`" * (max((len(r) for r in re.findall(r"`+", flat)), default=0) + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def md_phrase(p: Phrase) -> str:
    return "".join(md_code(t) if code else md_text(t) for t, code in p.parts)


def _md_quote(q: Quote) -> str:
    body = md_code(q.text) if q.kind != "text" else f"“{md_text(q.text)}”"
    return f"{md_text(q.where)}: {body}" if q.where else body


def _section_blocks(s: Section) -> list[tuple[str, list[Phrase | Quote]]]:
    return [("What you did", list(s.done)), ("What is missing", list(s.missing)),
            ("From your notebook", list(s.quotes)), ("Next step", list(s.next_steps)),
            (MODEL_LABEL, list(s.model_text))]


def letter_markdown(letter: Letter) -> str:
    out = [f"# {md_text(letter.assignment)}", "", f"Feedback for **{md_text(letter.student)}**",
           ""]
    if letter.status == "error":
        out += [md_text(letter.problem), "", "What to do:", ""]
        out += [f"{i}. {md_text(step)}" for i, step in enumerate(letter.what_to_do, 1)]
        return scrub("\n".join([*out, "", md_text(letter.closing), ""]))
    out += [f"**Score: {letter.score}** ({letter.percent})", ""]
    for p in letter.overview:
        out += [md_phrase(p), ""]
    if letter.review_note:
        out += [f"*{md_text(letter.review_note)}*", ""]
    for s in letter.sections:
        out += [f"## {md_text(s.title)} — {s.score}", ""]
        if s.review:
            out += [f"*{md_text(s.review)}*", ""]
        if s.summary is not None:
            out += [md_phrase(s.summary), ""]
        for head, items in _section_blocks(s):
            if items:
                out += [f"**{md_text(head)}**", ""]
                out += [f"- {_md_quote(i) if isinstance(i, Quote) else md_phrase(i)}"
                        for i in items] + [""]
    return scrub("\n".join([*out, "---", "", md_text(letter.closing), ""]))


_CSS = """body{font-family:"DejaVu Sans",Helvetica,Arial,sans-serif;color:#1d1d1f;
max-width:46em;margin:2em auto;padding:0 1em;line-height:1.5}
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.15em;margin:1.6em 0 .3em;
border-bottom:1px solid #ddd;padding-bottom:.2em}.pts{float:right;font-weight:normal}
.score{font-size:1.2em;font-weight:bold}h3{font-size:.95em;margin:.8em 0 .2em}
ul{margin:.2em 0 .5em;padding-left:1.4em}code{font-family:"DejaVu Sans Mono",monospace;
background:#f3f3f3;padding:0 .2em;border-radius:3px;overflow-wrap:anywhere}
.where{color:#555}.review{color:#8a5a00;font-style:italic}.model{color:#37474f}
.closing{margin-top:2em;border-top:1px solid #ddd;padding-top:.6em}
@page{size:A4;margin:18mm}@media print{body{margin:0;max-width:none}
h2{break-after:avoid}li{break-inside:avoid}}"""


def _h(text: str) -> str:
    return html.escape(scrub(text), quote=True)


def html_phrase(p: Phrase) -> str:
    return "".join(f"<code>{_h(t)}</code>" if code else _h(t) for t, code in p.parts)


def _html_quote(q: Quote) -> str:
    body = f"<code>{_h(q.text)}</code>" if q.kind != "text" else f"“{_h(q.text)}”"
    return f"<span class='where'>{_h(q.where)}:</span> {body}" if q.where else body


def letter_html(letter: Letter) -> str:
    """A self-contained, printable page (no external resources; all text escaped)."""
    e = _h
    parts = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'>"
             f"<meta name='viewport' content='width=device-width,initial-scale=1'>"
             f"<title>{e(letter.assignment)} - {e(letter.student)}</title>"
             f"<style>{_CSS}</style></head><body>",
             f"<h1>{e(letter.assignment)}</h1><p>Feedback for <b>{e(letter.student)}</b></p>"]
    if letter.status == "error":
        parts.append(f"<p>{e(letter.problem)}</p><p>What to do:</p><ol>")
        parts += [f"<li>{e(step)}</li>" for step in letter.what_to_do]
        parts.append("</ol>")
    else:
        parts.append(f"<p class='score'>Score: {e(letter.score)} ({e(letter.percent)})</p>")
        parts += [f"<p>{html_phrase(p)}</p>" for p in letter.overview]
        if letter.review_note:
            parts.append(f"<p class='review'>{e(letter.review_note)}</p>")
        for s in letter.sections:
            parts.append(f"<section><h2>{e(s.title)} <span class='pts'>{e(s.score)}</span></h2>")
            if s.review:
                parts.append(f"<p class='review'>{e(s.review)}</p>")
            if s.summary is not None:
                parts.append(f"<p>{html_phrase(s.summary)}</p>")
            for head, items in _section_blocks(s):
                if items:
                    cls = " class='model'" if head == MODEL_LABEL else ""
                    parts.append(f"<h3{cls}>{e(head)}</h3><ul{cls}>")
                    parts += [f"<li>{_html_quote(i) if isinstance(i, Quote) else html_phrase(i)}"
                              "</li>" for i in items]
                    parts.append("</ul>")
            parts.append("</section>")
    parts.append(f"<p class='closing'>{e(letter.closing)}</p></body></html>")
    return scrub("".join(parts))


__all__ = ["html_phrase", "letter_html", "letter_markdown", "md_code", "md_phrase", "md_text"]
