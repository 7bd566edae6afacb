"""Issue 22's walk of a new instructor, in Chromium, without the models (a few minutes
on 2 cores).

1. An assignment is created from its own files on the Grade page: the page names the
   files it was made from, and the form is empty again.
2. A ZIP of eight notebooks (Canvas file names, the student's name in each notebook's
   metadata) is graded; the page is reloaded mid-batch: the picker shows the batch's
   assignment and the progress goes on to the end.
3. The feedback letters downloaded from the Grade page (after that reload) equal
   Review's, file for file (the PDFs apart from their creation time and id).
4. A criterion's points are edited on the Rubrics page and saved as a new version; the
   students are graded again under it from Review; the Grade page's results table
   shows the grades in force with that version, and its Canvas CSV the new points.
5. With names hidden, no student's name, Canvas id or notebook-metadata name reaches
   the Grade, Review or Dashboard page (nothing the server sends the browser, every
   table shown) nor any download.
6. An assignment is made from an nbgrader source notebook alone: the import table is
   in words.

Screenshots of the Grade page mid-batch and of the import table are kept under
artifacts/browser/walk/; with UPDATE_SCREENSHOTS=1 they are copied to docs/screenshots/
for the README.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser_app import (
    ARTIFACTS,
    CHROMIUM,
    CHROMIUM_ARGS,
    ROOT,
    SCREENSHOTS,
    running_app,
    stacks,
    wait_idle,
)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

OUT = ARTIFACTS / "walk"
RETAIL = ROOT / "examples" / "retail-sales"
NBGRADER = ROOT / "tests" / "fixtures" / "nbgrader_ps1" / "problem1.ipynb"
TITLE, SHORT = "Retail walk", "retail-walk"
# (Canvas name slug, the name in the notebook's metadata, the bundled submission): all
# invented. Canvas ids 73101.. and submission ids 88101.. follow the order.
STUDENTS = [("quillzephyr", "Zephyr Quill", "complete"),
            ("marlowtessaly", "Tessaly Marlow", "partial"),
            ("brightwaterio", "Iolanthe Brightwater", "alternative"),
            ("vantorrenbex", "Bex Vantorren", "wrong_outputs"),
            ("okonkwindle", "Windle Okonk", "runtime_errors"),
            ("fairhollowen", "Ottoline Fairhollow", "template_only"),
            ("strandquistly", "Lysandre Strandquist", "hardcoded"),
            ("pellucidara", "Darragh Pellucid", "injected_clean")]
NAMES = [w for slug, name, _ in STUDENTS for w in (slug, *name.split())] + [
    str(n) for i in range(len(STUDENTS)) for n in (73101 + i, 88101 + i)]


def _class_zip(tmp: Path) -> tuple[Path, list[str]]:
    """The class's ZIP as Canvas names its files, and the sha256 of each notebook."""
    import hashlib

    path, digests = tmp / "class.zip", []
    with zipfile.ZipFile(path, "w") as z:
        for i, (slug, name, sample) in enumerate(STUDENTS):
            nb = json.loads((RETAIL / "submissions" / f"{sample}.ipynb").read_text("utf-8"))
            nb["metadata"]["authors"] = [{"name": name}]
            data = json.dumps(nb).encode()
            z.writestr(f"{slug}_{73101 + i}_{88101 + i}_retail.ipynb", data)
            digests.append(hashlib.sha256(data).hexdigest())
    return path, digests


def _named(text: str) -> list[str]:
    """The students' names, ids and name parts found in ``text`` (as whole words)."""
    return [n for n in NAMES if re.search(rf"(?<![^\W_]){n}(?![^\W_])", text, re.I)]


class Wire:
    """Everything the app's server sends the browser (its websocket frames)."""

    def __init__(self, page) -> None:
        self.frames: list[bytes] = []
        page.on("websocket", lambda ws: ws.on("framereceived", self._add))

    def _add(self, payload: str | bytes) -> None:
        self.frames.append(payload.encode() if isinstance(payload, str) else payload)

    def since(self, mark: int) -> str:
        return b"".join(self.frames[mark:]).decode("utf-8", errors="replace")


@pytest.fixture
def app_url(tmp_path: Path) -> Iterator[str]:
    with running_app(tmp_path / "data", OUT / "streamlit.log") as url:
        yield url


def _go(page, name: str) -> None:
    from playwright.sync_api import expect

    page.get_by_test_id("stSidebarNav").get_by_role("link", name=name).click()
    expect(page.get_by_role("heading", name=name, exact=True)).to_be_visible(timeout=60_000)
    wait_idle(page)


def _picked(page) -> str:
    return page.get_by_role("combobox", name="Assignment").input_value()


def _download(page, button: str, into: Path) -> Path:
    with page.expect_download(timeout=60_000) as dl:
        page.get_by_role("button", name=button, exact=True).click()
    into.mkdir(parents=True, exist_ok=True)
    path = into / dl.value.suggested_filename
    dl.value.save_as(path)
    return path


def _tables(page, into: Path, first: int | None = None) -> list[list[dict[str, str]]]:
    """The tables shown on the page (all, or the ``first`` few), as each one's own
    "Download as CSV" button gives it (a table is drawn on a canvas: its text is in no
    element)."""
    out = []
    for grid in page.locator("[data-testid=stDataFrame]:visible").all()[:first]:
        grid.scroll_into_view_if_needed()
        grid.hover()
        with page.expect_download(timeout=30_000) as dl:
            # the button sits above the table, where the table before it may lie over it
            grid.get_by_role("button", name="Download as CSV").dispatch_event("click")
        into.mkdir(parents=True, exist_ok=True)
        path = into / f"table-{len(list(into.iterdir()))}.csv"
        dl.value.save_as(path)
        out.append(list(csv.DictReader(io.StringIO(path.read_text("utf-8-sig")))))
    page.mouse.move(5, 5)
    return out


def _letters(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as z:
        return {n: z.read(n) for n in z.namelist()}  # PDFs too: dated by their grade


def test_the_instructor_s_walk(app_url: str, tmp_path: Path):
    from playwright.sync_api import sync_playwright

    for old in ("grade-mid-batch.png", "import-table.png"):
        (OUT / old).unlink(missing_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1600},
                                accept_downloads=True)
        # a table's own CSV button: a plain download, not the browser's save dialog
        page.add_init_script("delete window.showSaveFilePicker")
        wire = Wire(page)
        try:
            page.goto(app_url)
            _create_from_files(page)
            try:
                digests = _grade_with_a_reload(page, tmp_path)
            except AssertionError as exc:
                raise AssertionError(f"{exc}\n--- the app's threads ---\n{stacks(app_url)}"
                                     ) from None
            _same_letters_on_both_pages(page, tmp_path / "letters")
            _edit_the_rubric_and_regrade(page, tmp_path / "regrade")
            assert _named(wire.since(0)), "the wire check sees the names when shown"
            _hidden_names(page, wire, digests, tmp_path / "hidden")
            _import_table(page, tmp_path / "import")
        except Exception:
            OUT.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(OUT / "failed.png"))  # where it stopped
            raise
        finally:
            browser.close()
    for shot in ("grade-mid-batch.png", "import-table.png"):
        assert (OUT / shot).stat().st_size > 10_000
        if os.environ.get("UPDATE_SCREENSHOTS"):  # the README's pictures
            shutil.copyfile(OUT / shot, SCREENSHOTS / shot)


def _create_from_files(page) -> None:
    from playwright.sync_api import expect

    expect(page.get_by_role("heading", name="Grade")).to_be_visible(timeout=60_000)
    wait_idle(page)
    page.get_by_text("Create an assignment from files").click()
    form = page.get_by_test_id("stForm")
    form.get_by_label("Title").fill(TITLE)
    for label, paths in (("Template notebook", [RETAIL / "template.ipynb"]),
                         ("Solution notebook", [RETAIL / "solution.ipynb"]),
                         ("Rubric (JSON", [ROOT / "rubrics" / "retail-sales.json"]),
                         ("Data files", sorted((RETAIL / "data").glob("*.csv")))):
        form.get_by_test_id("stFileUploader").filter(has_text=label).locator(
            "input[type=file]").set_input_files([str(p) for p in paths])
    expect(form.get_by_test_id("stFileChip")).to_have_count(6, timeout=30_000)
    wait_idle(page)
    form.get_by_role("button", name="Create assignment").click()
    made = page.get_by_text(f"Created “{TITLE}”")
    expect(made).to_be_visible(timeout=60_000)
    wait_idle(page)
    assert made.inner_text() == (
        f"Created “{TITLE}” as {SHORT} (python, 8 criteria) from template template.ipynb, "
        "solution solution.ipynb, rubric retail-sales.json, data: customers.csv, "
        "orders.csv, products.csv.")
    # the form is empty again: the next assignment starts from nothing of this one's
    assert form.get_by_label("Title").input_value() == ""
    expect(form.get_by_test_id("stFileChip")).to_have_count(0)
    assert _picked(page) == f"{TITLE} ({SHORT}, Python)"
    page.get_by_text("Create an assignment from files").click()  # folded away again
    wait_idle(page)


def _to_top(page) -> None:
    """Scroll the app to its top (Streamlit scrolls inside its main section), the mouse
    off the page: no tooltip in a screenshot."""
    page.mouse.move(5, 5)
    page.get_by_test_id("stMain").evaluate("e => e.scrollTo(0, 0)")
    page.wait_for_timeout(300)


def _grade_with_a_reload(page, tmp: Path) -> list[str]:
    from playwright.sync_api import expect

    batch, digests = _class_zip(tmp)
    page.get_by_test_id("stFileUploader").filter(has_text="Student notebooks").locator(
        "input[type=file]").set_input_files(str(batch))
    expect(page.get_by_text(batch.name)).to_be_visible(timeout=30_000)
    wait_idle(page)
    page.get_by_test_id("stExpander").filter(has_text="Options").locator("summary").click()
    page.get_by_test_id("stCheckbox").filter(has_text="Model analysis").locator("label").click()
    expect(page.get_by_label("Model analysis and feedback (L3, L4)", exact=True)
           ).not_to_be_checked()
    wait_idle(page)  # without the models: the walk runs in minutes on 2 cores
    page.get_by_role("button", name="Grade", exact=True).click()

    running = page.get_by_text(f"Grading “{TITLE}” ({SHORT})...")
    some = re.compile(r"^[1-7] of 8 notebooks graded$")
    expect(page.get_by_text(some)).to_be_visible(timeout=120_000)
    table = page.get_by_test_id("stExpander").filter(has=running).get_by_test_id(
        "stDataFrame")
    expect(table).to_be_visible(timeout=30_000)
    page.wait_for_timeout(1000)  # the table drawn
    _to_top(page)
    box = page.get_by_test_id("stExpander").filter(has=running).bounding_box()
    OUT.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(OUT / "grade-mid-batch.png"),
                    clip={"x": 0, "y": 0, "width": 1400, "height": box["y"] + box["height"] + 24})

    page.reload()  # a new session: nothing of the batch in its state
    expect(page.get_by_role("heading", name="Grade")).to_be_visible(timeout=60_000)
    try:
        expect(running).to_be_visible(timeout=60_000)
    except AssertionError:
        raise AssertionError("after the reload the page does not follow the batch (or the "
                             "batch ended before the page was drawn again)") from None
    expect(page.get_by_text(re.compile(r"^\d of 8 notebooks graded$"))).to_be_visible()
    assert _picked(page) == f"{TITLE} ({SHORT}, Python)"  # the batch's, not the example
    expect(page.get_by_text(f"Graded 8 of 8 notebooks of “{TITLE}” ({SHORT})")).to_be_visible(
        timeout=300_000)
    wait_idle(page)
    assert _picked(page) == f"{TITLE} ({SHORT}, Python)"
    (results, *_) = _tables(page, tmp / "tables")
    assert sorted(r["student"] for r in results) == sorted(s for s, _, _ in STUDENTS)
    assert {r["score"] for r in results if r["student"] == "quillzephyr"} == {"20"}
    return digests


def _same_letters_on_both_pages(page, into: Path) -> None:
    """The Grade page's letters (its batch followed after a reload) are Review's."""
    graded = _letters(_download(page, "Feedback letters (ZIP)", into / "grade"))
    _go(page, "Review")
    assert _picked(page) == f"{TITLE} ({SHORT}, Python)"  # one label on every page
    reviewed = _letters(_download(page, "Feedback letters (ZIP)", into / "review"))
    assert sorted(graded) == sorted(f"feedback/{s}.{ext}" for s, _, _ in STUDENTS
                                    for ext in ("html", "md", "pdf"))
    assert graded == reviewed
    letter = graded["feedback/marlowtessaly.md"].decode()
    assert letter.startswith(f"# {TITLE}\n")
    assert "East has the highest revenue" in letter  # the student's own answer, quoted


def _edit_the_rubric_and_regrade(page, into: Path) -> None:
    from playwright.sync_api import expect

    _go(page, "Rubrics")
    assert _picked(page) == f"{TITLE} ({SHORT}, Python)"
    rubric = json.loads((ROOT / "rubrics" / "retail-sales.json").read_text("utf-8"))
    row = [c["id"] for c in rubric["criteria"]].index("runs-clean") + 1  # 1 point
    editor = page.locator("[data-testid=stDataFrame]:visible").first  # the criteria
    editor.scroll_into_view_if_needed()
    box = editor.bounding_box()
    page.mouse.click(box["x"] + 80, box["y"] + 35 * row + 17)  # its "order" cell
    for _ in range(4):  # order, id, title, kind: to "points"
        page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")
    cell = page.locator("#portal input")
    assert cell.input_value() == "1"
    cell.fill("4")
    cell.press("Enter")
    expect(page.get_by_text("runs-clean: points 1 → 4")).to_be_visible(timeout=30_000)
    expect(page.get_by_test_id("stMetric").filter(has_text="Total points")).to_contain_text(
        "23")
    wait_idle(page)
    page.get_by_label("Note for this version").fill("the notebook running clean: 4 points")
    page.get_by_label("Note for this version").press("Enter")
    wait_idle(page)
    page.get_by_role("button", name="Save as new version").click()
    saved = page.get_by_text(re.compile(r"^Saved rubric version \w+"))
    expect(saved).to_be_visible(timeout=60_000)
    assert re.match(r"Saved rubric version \w+", saved.inner_text())
    wait_idle(page)

    _go(page, "Review")
    expect(page.get_by_text("8 student(s) have no grade under the rubric in force")
           ).to_be_visible()
    page.get_by_role("button", name="Grade them under the rubric in force (8)").click()
    expect(page.get_by_text(re.compile(r"^Last regrade"))).to_be_visible(timeout=300_000)
    wait_idle(page)

    _go(page, "Grade")  # the batch's results: now the grades in force
    expect(page.get_by_text(re.compile(r"8 student\(s\) were graded again since this batch: "
                                       r"their grade in force \(rubric version 2 \("))
           ).to_be_visible()
    (results, *_) = _tables(page, into / "tables")
    assert {r["rubric"][:11] for r in results} == {"version 2 ("}  # its number, not a hash
    assert {r["max"] for r in results} == {"23"}
    canvas = list(csv.reader(io.StringIO(
        _download(page, "Canvas CSV", into).read_text("utf-8"))))
    assert canvas[0][-1] == TITLE
    assert canvas[1][0] == "Points Possible"
    assert canvas[1][-1] == "23"
    in_csv = {row[0]: float(row[-1]) for row in canvas[2:]}
    assert in_csv == {r["student"]: float(r["score"]) for r in results}
    assert in_csv["quillzephyr"] == 23  # full marks under the new points
    assert {row[1] for row in canvas[2:]} == {str(73101 + i) for i in range(len(STUDENTS))}


def _hidden_names(page, wire: Wire, digests: list[str], into: Path) -> None:
    from playwright.sync_api import expect

    page.get_by_test_id("stSidebar").get_by_text("Hide student names").click()
    expect(page.get_by_role("switch", name="Hide student names")).to_be_checked()
    mark = len(wire.frames)
    wait_idle(page)
    seen: dict[str, list[str]] = {}
    for where in ("Grade", "Review", "Dashboard"):
        if where != "Grade":
            _go(page, where)
        page.wait_for_timeout(1500)  # the Dashboard's tables and charts drawn
        seen[f"{where} page"] = _named(page.locator("body").inner_text())
        seen[f"{where} tables"] = _named(json.dumps(_tables(page, into / where / "tables")))
        if where == "Dashboard":
            break
        files = {b: _download(page, b, into / where) for b in
                 ("Canvas CSV", "Grades CSV", "JSON", "Feedback letters (ZIP)")}
        for button, path in files.items():
            if path.suffix == ".zip":
                letters = _letters(path)
                text = " ".join(letters) + " ".join(
                    v.decode() for n, v in letters.items() if not n.endswith(".pdf"))
                assert len(letters) == 3 * len(STUDENTS)
            else:
                text = path.read_text("utf-8")
            seen[f"{where}: {button}"] = _named(text) + [d for d in digests if d in text]
    seen["sent to the browser"] = _named(wire.since(mark))
    found = {k: v for k, v in seen.items() if v}
    assert not found, found


def _import_table(page, into: Path) -> None:
    from playwright.sync_api import expect

    _go(page, "Grade")
    page.get_by_text("Create an assignment from files").click()
    form = page.get_by_test_id("stForm")
    form.get_by_label("Title").fill("Problem set 1")
    form.get_by_test_id("stFileUploader").filter(has_text="Template notebook").locator(
        "input[type=file]").set_input_files(str(NBGRADER))
    expect(form.get_by_test_id("stFileChip")).to_have_count(1, timeout=30_000)
    wait_idle(page)
    form.get_by_role("button", name="Create assignment").click()
    made = page.get_by_text("Created “Problem set 1”")
    expect(made).to_be_visible(timeout=60_000)
    wait_idle(page)
    assert "from the source notebook problem1.ipynb (template, solution and rubric)" in \
        made.inner_text()
    advice = page.get_by_test_id("stMarkdown").filter(has_text="What to do")
    expect(advice).to_be_visible()
    (table,) = _tables(page, into, first=1)  # the first on the page: under "Created"
    assert {r["status"] for r in table} <= {"imported", "not carried over"}  # words
    page.mouse.move(5, 5)
    made.scroll_into_view_if_needed()
    page.wait_for_timeout(1000)  # the table drawn again after its download
    high = page.get_by_test_id("stAlert").filter(has=made).bounding_box()
    low = advice.bounding_box()
    page.screenshot(path=str(OUT / "import-table.png"), clip={
        "x": high["x"] - 16, "y": high["y"] - 16, "width": high["width"] + 32,
        "height": low["y"] + low["height"] - high["y"] + 32})
