"""The student's letter: what it says, what it never says, and its three forms.

Real reports come from grading the bundled example submissions (the R one from the
notebook's text alone, which needs no kernel; the Python ones executed in the sandbox,
marked slow); edge cases are hand-built reports.
"""

from __future__ import annotations

import dataclasses
import html
import io
import logging
import math
import re
import zipfile
from decimal import Decimal
from pathlib import Path

import pytest

from grader.assignment import load_assignment
from grader.exports.formats import (
    feedback_html,
    feedback_markdown,
    feedback_pdf,
    feedback_zip,
    write_exports,
)
from grader.layers.base import GradeOptions
from grader.letters import pdf as letter_pdf_module
from grader.letters.build import (
    MODEL_LABEL,
    REVIEW_NOTE,
    Letter,
    build_letter,
    letter_for,
    letter_html,
    letter_markdown,
    sentence,
)
from grader.letters.pdf import FontError, font_paths, letter_pdf
from grader.letters.places import readable_id
from grader.notebooks.load import load_notebook
from grader.pipeline import GradeInput, Grader
from grader.points import as_points, points_text
from grader.store.legacy_facts import legacy_facts
from grader.types import CheckResult, CriterionResult, Evidence, Flag, GradeReport, LayerResult

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SCORE = re.compile(r"(\d+(?:\.\d+)?) / (\d+(?:\.\d+)?)")


# --- building reports ----------------------------------------------------------------------

def chk(crit: str, kind: str, target: str, score: float, message: str,
        evidence: tuple[Evidence, ...] = (), status: str = "ok") -> CheckResult:
    """A result as a layer makes it: its sentence, and the facts the letter reads (those
    a layer gives with that sentence)."""
    return CheckResult(crit, kind, target, score, 1.0, "L1", message, evidence, status,
                       facts=legacy_facts(kind, message, target))


def crit(cid: str, kind: str, max_points: float, points: float, checks: list[CheckResult],
         **kw) -> CriterionResult:
    return CriterionResult(cid, f"Part {cid}", kind, max_points, points, checks=checks, **kw)


def report(criteria: list[CriterionResult], name: str = "S-00101", **kw) -> GradeReport:
    return GradeReport(file=f"{name}.ipynb", sha256="sha-" + name, assignment="demo",
                       rubric_version="v1", status="graded",
                       score=round(sum(c.points for c in criteria), 4),
                       max_score=sum(c.max_points for c in criteria), student_id=name,
                       display_name=name, criteria=criteria, **kw)


def model_report(advisory: bool) -> GradeReport:
    """A code and a written criterion, both partly met, with notes from L3 and L4."""
    code = crit("joins", "code", 4, 2.0, [chk(
        "joins", "calls", "left_join, anti_join", 0.5,
        "1 of 2 called; not called in the student's code: anti_join",
        (Evidence("c3", 2, "x <- left_join(a, b)"),))])
    code.model_notes = {"verdict": "partial", "issue": "Your join keeps customers twice over",
                        "cells": "c3", "suggestion": "Join on the customer id column alone",
                        "quote": "x <- left_join(a, b)"}
    written = crit("q1", "written", 2, 1.0, [chk(
        "q1", "answer", "Question 1", 0.5, "answered with 20 words, below the minimum of 40",
        (Evidence("a1", None, "East leads because it has more customers."),))])
    written.model_notes = {"strength": "Positive", "improve": "1.0",
                           "next_step": "Name the size of the gap between the regions",
                           "score": "0.50"}
    junk = crit("q2", "written", 2, 1.0, [chk(
        "q2", "answer", "Question 2", 0.5, "answered with 10 words, below the minimum of 20",
        (Evidence("a2", None, "Sales rise in December."),))])
    junk.model_notes = {"strength": "not met", "improve": "1.0", "next_step": "{\"a\": 1}"}
    layers = {"L3": LayerResult("L3", details={
                  "advisory": advisory, "route": "smollm2-135m", "prefill_tps": 241.7,
                  "output": {"joins": {"verdict": "partial", "cells": ["c3"],
                                       "issue": "Your join keeps customers twice over"}}},
                  seconds=3.21),
              "L4": LayerResult("L4", details={"advisory": advisory, "decode_tps": 107.3})}
    return report([code, written, junk], layers=layers)


@pytest.fixture(scope="module")
def strings_dates() -> tuple:
    """R strings-dates, partial submission, graded from the notebook's text (no kernel)."""
    a = load_assignment(EXAMPLES / "r-strings-dates")
    path = a.submissions / "partial.ipynb"
    r = Grader(a, GradeOptions(execute=False)).grade(GradeInput.from_path(path))
    return a, r, load_notebook(path)


@pytest.fixture(scope="module")
def retail() -> dict[str, tuple]:
    """Retail sales submissions executed in the sandbox: real output checks."""
    a = load_assignment(EXAMPLES / "retail-sales")
    names = ["wrong_outputs", "runtime_errors", "hardcoded", "template_only"]
    paths = [a.submissions / f"{n}.ipynb" for n in names]
    reports = Grader(a, GradeOptions(execute=True)).grade_many(
        [GradeInput.from_path(p) for p in paths], workers=2)
    return {n: (a, r, load_notebook(p)) for n, r, p in zip(names, reports, paths, strict=True)}


def sections_text(letter: Letter) -> dict[str, str]:
    """Each section's whole text, as the Markdown shows it."""
    md = letter_markdown(letter)
    parts = re.split(r"^## ", md, flags=re.M)[1:]
    return {s.criterion_id: part for s, part in zip(letter.sections, parts, strict=True)}


# --- what the letter says --------------------------------------------------------------------

def test_written_evidence_stays_with_its_question(strings_dates):
    a, r, nb = strings_dates
    text = sections_text(build_letter(r, a.rubric, nb, a.title))
    assert "Cleaning changed the counts" in text["q8-1"]
    assert "Seventeen" not in text["q8-1"]  # 8.2's answer, which 8.1's evidence once quoted
    assert "Seventeen of the 75 products" in text["q8-2"]
    assert "Cleaning changed" not in text["q8-2"]


def own_texts(c: CriterionResult) -> list[str]:
    return [" ".join(e.text.split()) for e in c.evidence]


@pytest.mark.slow
def test_quotes_come_from_their_criterions_own_checks(strings_dates, retail):
    cases = [strings_dates, *retail.values()]
    for a, r, nb in cases:
        letter = build_letter(r, a.rubric, nb)
        by_id = {c.id: c for c in r.criteria}
        for s in letter.sections:
            own = own_texts(by_id[s.criterion_id])
            excerpts = [q.text for q in s.quotes]
            if s.summary is not None and "“" in str(s.summary):
                excerpts.append(str(s.summary).split("“", 1)[1].rsplit("”", 1)[0])
            for text in excerpts:
                assert any(text.rstrip("…") in t for t in own), (s.criterion_id, text)


def test_sections_follow_the_rubric_order(strings_dates):
    a, r, nb = strings_dates
    shuffled = dataclasses.replace(r, criteria=list(reversed(r.criteria)))
    letter = build_letter(shuffled, a.rubric, nb)
    assert [s.criterion_id for s in letter.sections] == [c.id for c in a.rubric.criteria]


def test_unanswered_question_says_so_and_what_to_write(strings_dates):
    a, r, nb = strings_dates
    s = next(s for s in build_letter(r, a.rubric, nb).sections if s.criterion_id == "q8-3")
    assert s.score == "0 / 2"
    assert "You have not answered “Question 8.3: Date Analysis Importance” yet." in \
        [str(p) for p in s.missing]
    assert any("at least 50 words" in str(p) for p in s.next_steps)


def test_a_complete_criterion_gets_one_line(strings_dates):
    a, r, nb = strings_dates
    letter = build_letter(r, a.rubric, nb)
    complete = [s for s in letter.sections if s.complete]
    assert complete  # the answered questions 8.1 and 8.2
    text = sections_text(letter)
    for s in complete:
        assert s.summary is not None
        assert not s.done
        assert not s.missing
        assert not s.next_steps
        assert not s.quotes
        assert not s.model_text
        body = [line for line in text[s.criterion_id].splitlines()[1:]
                if line.strip() and line != "---" and "ask your instructor" not in line]
        assert len(body) == 1, body


@pytest.mark.slow
def test_no_line_twice_in_a_section(strings_dates, retail):
    for a, r, nb in [strings_dates, *retail.values()]:
        letter = build_letter(r, a.rubric, nb)
        for s in letter.sections:
            lines = [str(p) for p in (*s.done, *s.missing, *s.next_steps)]
            assert len(lines) == len(set(lines)), (s.criterion_id, lines)
            assert len(s.quotes) == len(set(s.quotes))
        for part in sections_text(letter).values():
            bullets = [line for line in part.splitlines() if line.startswith("- ")]
            assert len(bullets) == len(set(bullets))


def test_two_calls_on_one_line_are_named_once(strings_dates):
    a, r, nb = strings_dates
    calls = next(ch for c in r.criteria if c.id == "string-cleaning" for ch in c.checks
                 if ch.check == "calls")
    places = [(e.cell_id, e.line) for e in calls.evidence]
    assert len(places) > len(set(places))  # str_trim and str_to_title share a line
    s = next(s for s in build_letter(r, a.rubric, nb).sections
             if s.criterion_id == "string-cleaning")
    assert str(s.done[0]).endswith("str_squish() (cells 7 and 9).")
    one = report([crit("c", "code", 2, 1.0, [chk(
        "c", "calls", "str_trim, str_to_title, paste", 2 / 3,
        "2 of 3 called; not called in the student's code: paste",
        (Evidence("c3", 2, "x <- str_to_title(str_trim(y))"),
         Evidence("c3", 2, "x <- str_to_title(str_trim(y))")))])])
    section = build_letter(one).sections[0]
    assert [str(p) for p in section.done] == [
        "You used str_trim() and str_to_title() (cell c3, line 2)."]


def test_cells_are_named_by_position_or_readable_id(strings_dates):
    a, r, nb = strings_dates
    with_nb = letter_markdown(build_letter(r, a.rubric, nb))
    without = letter_markdown(build_letter(r, a.rubric))
    assert re.search(r"cells? \d+", with_nb)
    assert "import\\_data" not in with_nb  # positions, not ids, when the notebook is there
    assert "cell import\\_data" in without
    uuid = "3f2a9c1e-8b7d-4e6f-9a1b-2c3d4e5f6a7b"
    hand = report([crit("load", "code", 2, 1.0, [chk(
        "load", "calls", "read_csv, head", 0.5,
        "1 of 2 called; not called in the student's code: head",
        (Evidence(uuid, 3, "df = read_csv('x.csv')"),))])])
    md = letter_markdown(build_letter(hand))
    assert "3f2a9c1e" not in md
    assert "`read_csv()`" in md


@pytest.mark.parametrize(("cell_id", "shown"), [
    ("import_data", "cell import_data"), ("q1-answer", "cell q1-answer"),
    ("cell4-0123456789ab", "cell 5"), ("3f2a9c1e-8b7d-4e6f-9a1b-2c3d4e5f6a7b", ""),
    ("9f3a2b1c", ""), ("xY3kD9aB1cE2", ""), ("deadbeefcafe", "")])
def test_readable_cell_ids(cell_id, shown):
    assert readable_id(cell_id) == shown


# --- numbers --------------------------------------------------------------------------------

@pytest.mark.slow
def test_points_are_the_gradebooks(retail):
    """The letter writes the points the gradebook holds (2 decimals, as the Canvas CSV
    exports them), and its criteria add up to its total."""
    for a, r, nb in retail.values():
        letter = build_letter(r, a.rubric, nb)
        assert letter.score == points_text(r.score, r.max_score)
        shown = []
        for s in letter.sections:
            got, full = SCORE.fullmatch(s.score).groups()  # type: ignore[union-attr]
            assert full == as_points(s.max_points)
            assert got == as_points(s.points, s.max_points)
            shown.append(Decimal(got))
        assert sum(shown) == Decimal(as_points(r.score))
        exact = 100 * r.score / r.max_score  # whole, half up, never 100 short of full
        whole = min(math.floor(exact + 0.5), 99 if r.score < r.max_score else 100)
        assert letter.percent == f"{max(whole, 1 if r.score > 0 else 0)}%"


def test_point_formats():
    assert as_points(8.64) == "8.64"  # the gradebook's own number, never 9
    assert as_points(2.0) == "2"
    assert as_points(16.5) == "16.5"
    assert as_points(0.845) == "0.85"  # half up, as a person rounds (Python's round gives 0.84)
    assert as_points(1.996, 2) == "1.99"  # never shown as full when it is not
    assert as_points(0.004, 4) == "0.01"  # nor as nothing when it is something
    assert as_points(1234567.5) == "1234567.5"  # never an exponent
    assert points_text(15.54, 20) == "15.54 / 20"


def test_half_points_rubric_shows_the_gradebooks_points():
    r = report([crit("a", "code", 2.5, 1.27, [chk("a", "calls", "f", 0.5, "1 of 1 called")]),
                crit("b", "code", 5, 5.0, [chk("b", "calls", "g", 1.0, "1 of 1 called")])])
    letter = build_letter(r)
    assert [s.score for s in letter.sections] == ["1.27 / 2.5", "5 / 5"]
    assert letter.score == "6.27 / 7.5"  # the parts add up to the total shown
    assert letter.percent == "84%"


# --- model text -------------------------------------------------------------------------------

JUNK = ("not met", "Positive", "1.0", "{")


def test_advisory_model_text_never_appears():
    r = model_report(advisory=True)
    for page in (letter_markdown(build_letter(r)), letter_html(build_letter(r))):
        assert "language model" not in page
        assert "twice over" not in page
        assert "gap between the regions" not in page
        for junk in ("not met", "Positive", "1.0", "smollm2", "241.7", "3.21"):
            assert junk not in page
    r.layers["L3"].details.pop("advisory")  # unknown is not trusted either
    r.layers["L4"].details.pop("advisory")
    assert "language model" not in letter_markdown(build_letter(r))


def test_trusted_model_text_appears_labelled_and_sentences_only():
    r = model_report(advisory=False)
    letter = build_letter(r)
    text = {s.criterion_id: [str(p) for p in s.model_text] for s in letter.sections}
    assert text["joins"] == ["Your join keeps customers twice over (see cell c3)",
                             "Suggestion: Join on the customer id column alone",
                             "The line it refers to: x <- left_join(a, b)"]
    assert text["q1"] == ["Next step: Name the size of the gap between the regions"]
    assert text["q2"] == []  # "not met", "1.0" and JSON are not comments
    md = letter_markdown(letter)
    assert md.count(f"**{MODEL_LABEL}**") == 2
    assert "Positive" not in md
    assert "not met" not in md
    assert "1.0" not in md
    assert html.escape(MODEL_LABEL) in letter_html(letter)


def test_model_text_needs_surviving_evidence_and_agreement():
    r = model_report(advisory=False)
    r.layers["L3"].details["output"]["joins"]["cells"] = []  # dropped: not the student's
    assert build_letter(r).sections[0].model_text == ()
    r = model_report(advisory=False)
    r.criteria[0].model_notes["verdict"] = "met"  # 50% of the checks: no contradiction
    assert build_letter(r).sections[0].model_text
    r.criteria[0].points = 0.5  # 12.5%: "met" contradicts the checks
    assert build_letter(r).sections[0].model_text == ()
    r = model_report(advisory=False)
    r.flags.append(Flag("prompt_injection", "text aimed at the grader"))
    assert all(s.model_text == () for s in build_letter(r).sections)
    r = model_report(advisory=False)
    r.criteria[1].checks = [dataclasses.replace(r.criteria[1].checks[0], score=0.0,
                                                message="unanswered (only template text)")]
    assert build_letter(r).sections[1].model_text == ()  # nothing answered, nothing to praise


@pytest.mark.parametrize("text", ["Positive", "1.0", "not met", "N/A", "{\"x\": 1}", "ok",
                                  "Good job."])
def test_labels_and_values_are_not_sentences(text):
    assert sentence(text) == ""


# --- instructor-only detail --------------------------------------------------------------------

@dataclasses.dataclass(frozen=True, slots=True)
class HiddenCheck(CheckResult):
    hidden: bool = True


def test_flags_review_reasons_and_hidden_checks_stay_out():
    load = crit("load", "code", 4, 1.0, [
        chk("load", "output", "total", 0.0,
            "not checked: bubblewrap (the sandbox) is not installed", status="skipped"),
        HiddenCheck("load", "output", "secret_total", 0.0, 1.0, "L2",
                    "secret_total: values: 3 of 3 rows differ; first at row 1: 7 != solution 9",
                    (Evidence("c9", 4, "secret_total <- 7"),)),
    ], needs_review=True, review_reasons=["layer L2 crashed: Traceback boom",
                                          "output total: not checked: bubblewrap"])
    r = report([load], flags=[
        Flag("hardcoded_output", "total is assigned literal values instead of being computed"),
        Flag("prompt_injection", "text aimed at the grader: ignore previous instructions"),
        Flag("template_modified", "the template's test cell was edited")],
        layers={"L2": LayerResult("L2", notes=["graded from the stored outputs"],
                                  seconds=12.5, details={"sandboxed": False})})
    letter = build_letter(r)
    assert letter.review_note == REVIEW_NOTE
    for page in (letter_markdown(letter), letter_html(letter)):
        low = page.lower()
        for secret in ("hardcoded", "hard-coded", "prompt_injection", "injection",
                       "template_modified", "literal values", "ignore previous", "edited",
                       "bubblewrap", "crashed", "traceback", "stored outputs", "secret",
                       "12.5", "sandbox"):
            assert secret not in low, secret
        assert "checks of this part did not pass." in page
        assert REVIEW_NOTE in page


# --- HTML and Markdown -----------------------------------------------------------------------

def hostile() -> GradeReport:
    c = crit("load", "code", 4, 2.0, [chk(
        "load", "assigns", "orders, customers", 0.5,
        "1 of 2 assigned; not assigned in the student's code: customers",
        (Evidence("c1", 1, "orders = '<img src=x onerror=alert(1)>' ![x](http://evil/p.png)"),))])
    c.title = "<b>Load</b> [link](http://evil)"
    r = report([c], name="<script>alert(1)</script>")
    return r


def test_html_escapes_student_text_and_fetches_nothing():
    page = letter_html(build_letter(hostile(), title="HW <i>1</i>"))
    assert "<script" not in page
    assert "<img" not in page
    assert "<b>Load" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<i>1" not in page
    assert not re.search(r"(src|href)\s*=|@import|url\(|<link|<script", page, re.I)
    assert page.startswith("<!doctype html>")
    assert "@page{size:A4" in page


def test_markdown_makes_student_text_inert():
    md = letter_markdown(build_letter(hostile()))
    assert "<script>" not in md
    assert "\\<script\\>" in md
    assert "[link](http" not in md  # the title's link is escaped
    # code from the notebook only inside code spans
    outside = re.sub(r"`[^`]*`", "", md)
    assert "![x]" not in outside
    assert "<img" not in outside


def test_error_report_is_a_short_kind_letter():
    r = dataclasses.replace(report([]), status="error", score=None,
                            error="essay.ipynb: not JSON: Expecting value at line 1, column 1")
    letter = build_letter(r, title="HW 1")
    md = letter_markdown(letter)
    assert "could not be graded" in md
    assert ".ipynb" in md
    assert "Expecting value" not in md
    assert "Score" not in md
    assert len(letter.what_to_do) == 3
    assert "could not be graded" in letter_html(letter)
    assert letter_pdf(letter).startswith(b"%PDF-")


# --- PDF ---------------------------------------------------------------------------------------

def check_pdf_structure(pdf: bytes) -> int:
    """The cross-reference table points at every object; returns the number of pages."""
    assert pdf.startswith(b"%PDF-1.")
    m = re.search(rb"startxref\s+(\d+)\s+%%EOF\s*$", pdf)
    assert m, pdf[-200:]
    xref = int(m.group(1))
    assert pdf[xref:xref + 4] == b"xref"
    head = re.match(rb"xref\s+0 (\d+)\s+", pdf[xref:])
    assert head
    entries = re.findall(rb"(\d{10}) (\d{5}) ([nf])", pdf[xref:xref + 40 + 20 * int(head[1])])
    assert len(entries) == int(head[1])
    for number, (offset, _, kind) in enumerate(entries):
        if kind == b"n":
            assert re.match(rb"%d 0 obj" % number, pdf[int(offset):]), number
    return len(re.findall(rb"/Type\s*/Page\b", pdf))


def test_pdf_of_a_real_letter_parses(strings_dates):
    a, r, nb = strings_dates
    pdf = letter_pdf(build_letter(r, a.rubric, nb, a.title), compress=False)
    assert check_pdf_structure(pdf) >= 2
    assert b"/MediaBox [0 0 595.28 841.89]" in pdf  # A4


def test_pdf_takes_any_unicode(caplog):
    text = ("学生の答え 😀👍🏽 مرحبا بالعالم עברית Zoë \u202eevil\u202c \ud800 \x00\x1b[31m "
            + "x" * 600)
    c = crit("q1", "written", 2, 1.0, [chk(
        "q1", "answer", "Question 1 学", 0.5, "answered with 9 words, below the minimum of 20",
        (Evidence("a1", None, text),))])
    r = report([c], name="学生 Zoë 😀 مرحبا")
    r.criteria[0].title = text[:80]
    with caplog.at_level(logging.WARNING):
        pdf = letter_pdf(build_letter(r, title="作业 1 📚"), compress=False)
    assert check_pdf_structure(pdf) >= 1
    assert not [rec for rec in caplog.records if "missing the following glyphs" in rec.message]


def test_fonts_fall_back_to_matplotlib_then_fail_clearly(monkeypatch, tmp_path):
    monkeypatch.setattr(letter_pdf_module, "DEBIAN_FONTS", tmp_path / "none")
    paths = font_paths()
    assert "matplotlib" in str(paths["sans"])
    assert paths["sans-bold"].is_file()
    monkeypatch.setattr(letter_pdf_module, "_matplotlib_fonts", lambda: None)
    with pytest.raises(FontError, match="fonts-dejavu-core"):
        font_paths()


# --- exports ----------------------------------------------------------------------------------

def test_exports_hold_pdf_markdown_and_html_per_student(tmp_path, strings_dates):
    a, r, nb = strings_dates
    other = dataclasses.replace(r, display_name="S-00102", student_id="S-00102")
    zipped = feedback_zip([r, other], a.title, a.rubric, {r.sha256: nb})
    with zipfile.ZipFile(io.BytesIO(zipped)) as z:
        names = sorted(z.namelist())
        assert names == sorted(f"feedback/{s}.{e}" for s in ("partial", "S-00102")
                               for e in ("pdf", "md", "html"))
        assert z.read("feedback/partial.pdf").startswith(b"%PDF-")
        assert "cells 7 and 9" in z.read("feedback/partial.md").decode()  # by position
    written = write_exports([r], tmp_path, a.title)
    assert sorted(p.name for p in written if p.parent.name == "feedback") == [
        "partial.html", "partial.md", "partial.pdf"]
    assert feedback_pdf(r, a.title).startswith(b"%PDF-")
    assert feedback_markdown(r, a.title, a.rubric, nb) == letter_markdown(
        build_letter(r, a.rubric, nb, a.title))
    assert "<h1>" in feedback_html(r, a.title)


def test_letter_for_reads_notebook_bytes_and_survives_bad_ones(strings_dates):
    a, r, _ = strings_dates
    data = (a.submissions / "partial.ipynb").read_bytes()
    assert "cells 7 and 9" in letter_markdown(letter_for(r, a.rubric, data))
    assert "cell import\\_data" in letter_markdown(letter_for(r, a.rubric, b"not a notebook"))


def test_the_same_grade_gives_the_same_pdf_dated_by_the_grade():
    """A letter's PDF carries the grade's date, not the moment it was drawn: the Grade
    page's ZIP and Review's hold the same file, and a download made again is the same."""
    import time

    from grader.letters.build import build_letter
    from grader.letters.pdf import letter_pdf
    from tests.test_store import make_report

    report = make_report("aa")  # graded at 1700000000: 2023-11-14 22:13:20 UTC
    first = letter_pdf(build_letter(report))
    time.sleep(1.1)
    assert letter_pdf(build_letter(report)) == first
    assert b"D:20231114221320" in first
