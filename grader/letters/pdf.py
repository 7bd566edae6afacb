"""The student's letter as one PDF (A4, page numbers), made with fpdf2.

Text is set in DejaVu Sans (code in DejaVu Sans Mono), from Debian's
fonts-dejavu-core or, where that is missing, the copy bundled with matplotlib;
without either, ``FontError`` says what to install. The fonts cover Latin,
Greek, Cyrillic, Arabic, Hebrew and many symbols; any character they lack (CJK,
most emoji) is printed as a visible replacement mark instead of failing, and
invisible format characters (bidi controls, zero-width joiners) are left out.
Arabic and Hebrew are printed letter by letter, unshaped (fpdf2 shapes text only
with the optional uharfbuzz).
"""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from fpdf import FPDF
from fpdf.enums import XPos, YPos

from ..errors import GraderError
from ..safe_text import scrub
from .text import MODEL_LABEL, Letter, Phrase, Quote, Section, cut

log = logging.getLogger(__name__)

DEBIAN_FONTS = Path("/usr/share/fonts/truetype/dejavu")
FONT_FILES = {"sans": "DejaVuSans.ttf", "sans-bold": "DejaVuSans-Bold.ttf",
              "mono": "DejaVuSansMono.ttf"}
MARGIN_MM = 18
BODY_PT = 10.5
LINE_MM = 5.2
INK = (29, 29, 31)
GREY = (95, 95, 95)
AMBER = (138, 90, 0)
SLATE = (55, 71, 79)


class FontError(GraderError):
    """No DejaVu font to write the PDF with."""


def _matplotlib_fonts() -> Path | None:
    try:
        import matplotlib
    except ImportError:
        return None
    return Path(matplotlib.get_data_path()) / "fonts" / "ttf"


def font_paths() -> dict[str, Path]:
    """The font files to use: Debian's DejaVu, else matplotlib's copy. Raises
    ``FontError`` naming both places when neither has the regular and bold faces."""
    places = [DEBIAN_FONTS, _matplotlib_fonts()]
    for folder in (p for p in places if p is not None):
        found = {k: folder / f for k, f in FONT_FILES.items() if (folder / f).is_file()}
        if "sans" in found and "sans-bold" in found:
            found.setdefault("mono", found["sans"])
            return found
    tried = ", ".join(str(p) for p in places if p is not None)
    raise FontError(f"no DejaVu Sans font for the PDF letters (looked in {tried}); install "
                    "the Debian package fonts-dejavu-core, or matplotlib")


@dataclass(slots=True)
class _Fonts:
    """Each face's characters, to replace what it cannot print before fpdf2 sees it."""

    cmaps: dict[str, dict[int, int]]

    def fit(self, text: str, face: str) -> str:
        cmap = self.cmaps[face]
        out = []
        for ch in scrub(text):
            if ord(ch) in cmap or ch == "\n":
                out.append(ch)
            elif unicodedata.category(ch) in ("Cf", "Mn", "Me", "Cc"):
                continue  # invisible or combining: nothing to show in its place
            else:
                out.append("\ufffd" if 0xFFFD in cmap else "?")
        return "".join(out)


class _Page(FPDF):
    footer_text = ""

    def footer(self) -> None:
        self.set_y(-12)
        self.set_font("sans", "", 8)
        self.set_text_color(*GREY)
        self.cell(0, 5, f"{self.footer_text}   Page {self.page_no()} of {{nb}}", align="C")


class _Writer:
    def __init__(self, letter: Letter) -> None:
        self.pdf = pdf = _Page(orientation="P", unit="mm", format="A4")
        paths = font_paths()
        pdf.add_font("sans", "", str(paths["sans"]))
        pdf.add_font("sans", "B", str(paths["sans-bold"]))
        pdf.add_font("mono", "", str(paths["mono"]))
        self.fonts = _Fonts({"sans": pdf.fonts["sans"].cmap, "sansB": pdf.fonts["sansB"].cmap,
                             "mono": pdf.fonts["mono"].cmap})
        pdf.set_margins(MARGIN_MM, MARGIN_MM, MARGIN_MM)
        pdf.set_auto_page_break(True, margin=MARGIN_MM)
        pdf.set_title(self.fonts.fit(f"{letter.assignment} - {letter.student}", "sans"))
        pdf.set_creator("grader")
        if letter.graded_at > 0:  # the grade's date: the same grade gives the same file
            pdf.set_creation_date(datetime.fromtimestamp(letter.graded_at, UTC))
        pdf.footer_text = self.fonts.fit(cut(f"{letter.assignment} · {letter.student}", 70),
                                         "sans")
        pdf.add_page()

    # -- text ----------------------------------------------------------------------------
    def font(self, face: str, size: float, color: tuple[int, int, int] = INK) -> str:
        family, style = ("sans", "B") if face == "sansB" else (face, "")
        self.pdf.set_font(family, style, size)
        self.pdf.set_text_color(*color)
        return face

    def para(self, text: str, face: str = "sans", size: float = BODY_PT,
             color: tuple[int, int, int] = INK, h: float = LINE_MM, after: float = 1.5) -> None:
        self.font(face, size, color)
        self.pdf.multi_cell(0, h, self.fonts.fit(text, face), align="L", new_x=XPos.LMARGIN,
                            new_y=YPos.NEXT)
        self.pdf.ln(after)

    def pieces(self, parts: list[tuple[str, str]], color: tuple[int, int, int]) -> None:
        """Inline text of several faces, wrapping at the margins."""
        pdf = self.pdf
        for text, face in parts:
            self.font(face, BODY_PT - (0.6 if face == "mono" else 0), color)
            text = self.fonts.fit(text, face)
            # A piece's first word that does not fit on this line goes to the next one
            # whole: fpdf2 breaks only at spaces within one write, else mid-word.
            first = text.split(" ", 1)[0]
            room = pdf.w - pdf.r_margin - pdf.get_x()
            if first and pdf.get_x() > pdf.l_margin + 0.1 and \
                    room < pdf.get_string_width(first) <= pdf.epw:
                pdf.ln(LINE_MM)
            pdf.write(LINE_MM, text)

    def bullet(self, draw: Callable[[], None], indent: float = 3.0) -> None:
        pdf = self.pdf
        left = pdf.l_margin
        self.font("sans", BODY_PT)
        pdf.set_x(left + indent)
        pdf.write(LINE_MM, "•")
        pdf.set_left_margin(left + indent + 4)
        pdf.set_x(left + indent + 4)
        try:
            draw()
        finally:
            pdf.ln(LINE_MM + 0.8)
            pdf.set_left_margin(left)

    def phrase(self, p: Phrase, color: tuple[int, int, int] = INK) -> None:
        self.pieces([(t, "mono" if code else "sans") for t, code in p.parts], color)

    def quote(self, q: Quote) -> None:
        parts = [(f"{q.where}: ", "sans")] if q.where else []
        body = (q.text, "mono") if q.kind != "text" else (f"“{q.text}”", "sans")
        self.pieces([*parts, body], GREY)

    def keep(self, room_mm: float) -> None:
        """A new page when less than ``room_mm`` is left (a heading stays with its text)."""
        if self.pdf.get_y() + room_mm > self.pdf.page_break_trigger:
            self.pdf.add_page()

    # -- blocks ----------------------------------------------------------------------------
    def heading(self, title: str, score: str) -> None:
        pdf = self.pdf
        self.keep(28)
        pdf.ln(3)
        self.font("sansB", 12)
        score_w = pdf.get_string_width(score) + 4
        y0 = pdf.get_y()
        pdf.multi_cell(pdf.epw - score_w, 6.2, self.fonts.fit(title, "sansB"), align="L",
                       new_x=XPos.LMARGIN, new_y=YPos.NEXT)
        y1 = pdf.get_y()
        pdf.set_xy(pdf.l_margin + pdf.epw - score_w, y0)
        pdf.cell(score_w, 6.2, score, align="R")
        pdf.set_y(y1 + 0.8)
        pdf.set_draw_color(210, 210, 210)
        pdf.line(pdf.l_margin, pdf.get_y(), pdf.l_margin + pdf.epw, pdf.get_y())
        pdf.ln(2)

    def section(self, s: Section) -> None:
        self.heading(s.title, s.score)
        if s.review:
            self.para(s.review, color=AMBER)
        if s.summary is not None:
            self.pdf.set_x(self.pdf.l_margin)
            self.phrase(s.summary)
            self.pdf.ln(LINE_MM + 1)
        blocks: list[tuple[str, list[Phrase | Quote], tuple[int, int, int]]] = [
            ("What you did", list(s.done), INK), ("What is missing", list(s.missing), INK),
            ("From your notebook", list(s.quotes), GREY), ("Next step", list(s.next_steps), INK),
            (MODEL_LABEL, list(s.model_text), SLATE)]
        for head, items, color in blocks:
            if not items:
                continue
            self.keep(14)
            self.para(head, face="sansB", size=BODY_PT, color=color, after=0.5)
            for item in items:
                self.bullet(lambda i=item, c=color: self.quote(i) if isinstance(i, Quote)
                            else self.phrase(i, c))
            self.pdf.ln(1)

    def letter(self, letter: Letter) -> bytes:
        self.para(letter.assignment, face="sansB", size=16, h=8, after=0.5)
        self.para(f"Feedback for {letter.student}", color=GREY, after=3)
        if letter.status == "error":
            self.para(letter.problem, after=3)
            self.para("What to do:", face="sansB")
            for i, step in enumerate(letter.what_to_do, 1):
                self.para(f"{i}. {step}")
        else:
            self.para(f"Score: {letter.score} ({letter.percent})", face="sansB", size=13, h=7,
                      after=2)
            for p in letter.overview:
                self.pdf.set_x(self.pdf.l_margin)
                self.phrase(p)
                self.pdf.ln(LINE_MM + 1)
            if letter.review_note:
                self.para(letter.review_note, color=AMBER)
            for s in letter.sections:
                self.section(s)
        self.pdf.ln(4)
        self.para(letter.closing, color=GREY)
        return bytes(self.pdf.output())


def letter_pdf(letter: Letter, compress: bool = True) -> bytes:
    """The letter as a PDF file's bytes. ``compress=False`` leaves the page streams
    readable (for tests). Raises ``FontError`` when no DejaVu font is found."""
    writer = _Writer(letter)
    writer.pdf.set_compression(compress)
    return writer.letter(letter)


__all__ = ["FontError", "font_paths", "letter_pdf"]
