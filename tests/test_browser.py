"""The app in a real browser: Debian's Chromium driven by Playwright.

Starts `streamlit run app.py` on a free loopback port with a fresh data folder,
uploads a bundled submission on the Grade page, grades it with the embedded
models, reads the score, downloads the Canvas CSV, and saves screenshots of the
results and of the dashboard under artifacts/browser/ (git-ignored). With
UPDATE_SCREENSHOTS=1 it also copies them to docs/screenshots/ for the README.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
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

SUBMISSION = ROOT / "examples" / "retail-sales" / "submissions" / "partial.ipynb"

pytestmark = [pytest.mark.browser, pytest.mark.llm, pytest.mark.slow]


def _with_tracker(tmp: Path) -> Path:
    """The bundled submission with a markdown image on a remote server (a tracking pixel,
    at a documentation-only address), under the same name."""
    nb = json.loads(SUBMISSION.read_text(encoding="utf-8"))
    nb["cells"].append({"cell_type": "markdown", "id": "tracker", "metadata": {},
                        "source": "![tracker](http://192.0.2.1/pixel.png)"})
    out = tmp / SUBMISSION.name
    out.write_text(json.dumps(nb), encoding="utf-8")
    return out


@pytest.fixture
def app_url(tmp_path: Path) -> Iterator[str]:
    with running_app(tmp_path / "data") as url:
        yield url


def test_upload_grade_download_and_dashboard(app_url: str, tmp_path: Path):
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 2000},
                                    accept_downloads=True)
            requested: list[str] = []
            page.on("request", lambda r: requested.append(r.url))
            # a deep link on a fresh server: the four pages, nothing else, in the menu
            page.goto(f"{app_url}/review")
            expect(page.get_by_text("No grades yet")).to_be_visible(timeout=60_000)
            nav = page.get_by_test_id("stSidebarNav").get_by_role("link")
            assert nav.all_inner_texts() == ["Grade", "Dashboard", "Rubrics", "Review"]
            nav.filter(has_text="Grade").click()
            expect(page.get_by_role("heading", name="Grade")).to_be_visible(timeout=60_000)

            # pick the Python example, upload one of its submissions, grade with the models
            page.get_by_test_id("stSelectbox").filter(has_text="Assignment").click()
            page.get_by_role("option", name="Retail sales analysis", exact=False).click()
            wait_idle(page)
            uploader = page.get_by_test_id("stFileUploader").filter(has_text="Student notebooks")
            uploader.locator("input[type=file]").set_input_files(str(_with_tracker(tmp_path)))
            expect(page.get_by_text(SUBMISSION.name)).to_be_visible(timeout=30_000)
            wait_idle(page)  # the upload's own rerun done: a click now is not lost
            page.get_by_role("button", name="Grade", exact=True).click()
            try:
                expect(page.get_by_text("Graded 1 of 1 notebooks")).to_be_visible(
                    timeout=300_000)
            except AssertionError as exc:
                raise AssertionError(f"{exc}\n--- the app's threads ---\n{stacks(app_url)}"
                                     ) from None

            score = page.get_by_test_id("stMetricValue").first
            expect(score).to_contain_text("/ 20", timeout=30_000)
            points = float(score.inner_text().split("/")[0])
            assert 0 < points < 20  # partial work: some points, not all
            page.screenshot(path=str(ARTIFACTS / "results.png"), full_page=True)

            with page.expect_download(timeout=30_000) as dl:
                page.get_by_role("button", name="Canvas CSV").click()
            target = tmp_path / dl.value.suggested_filename
            dl.value.save_as(target)
            rows = list(csv.reader(io.StringIO(target.read_text(encoding="utf-8"))))
            assert rows[0][0] == "Student"
            assert rows[0][-1] == "Retail sales analysis"
            assert rows[1][0] == "Points Possible"
            assert rows[1][-1] == "20"
            assert abs(float(rows[2][-1]) - points) < 0.006  # the page rounds to 2 decimals
            assert rows[2][0] == "partial"

            # the notebook beside its grade, its remote image not fetched
            page.get_by_role("link", name="Review").click()
            expect(page.get_by_text("image not loaded: tracker")).to_be_visible(timeout=60_000)

            # the student's letter, as the student will read it
            letter = page.get_by_test_id("stMarkdownContainer").filter(
                has_text="Feedback for").first
            letter.scroll_into_view_if_needed(timeout=30_000)
            text = letter.inner_text()
            _assert_send_ready(text)
            letter.screenshot(path=str(ARTIFACTS / "letter.png"))

            page.get_by_role("link", name="Dashboard").click()
            expect(page.get_by_role("heading", name="Dashboard")).to_be_visible(timeout=60_000)
            page.wait_for_timeout(3000)  # let the charts draw
            page.screenshot(path=str(ARTIFACTS / "dashboard.png"), full_page=True)
        finally:
            browser.close()
    # nothing but the app itself was asked for anything: student data stays here
    assert requested
    outside = sorted({u for u in requested if not u.startswith((app_url, "data:", "blob:"))})
    assert outside == []
    assert (ARTIFACTS / "results.png").stat().st_size > 10_000
    assert (ARTIFACTS / "dashboard.png").stat().st_size > 10_000
    assert (ARTIFACTS / "letter.png").stat().st_size > 10_000
    if os.environ.get("UPDATE_SCREENSHOTS"):  # the README's pictures
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ARTIFACTS / "results.png", SCREENSHOTS / "grade.png")
        shutil.copyfile(ARTIFACTS / "dashboard.png", SCREENSHOTS / "dashboard.png")
        shutil.copyfile(ARTIFACTS / "letter.png", SCREENSHOTS / "letter.png")


def _assert_send_ready(text: str) -> None:
    """The letter of the graded submission (partial work, graded with the bundled models,
    which only advise): no model text, scores rounded as the rubric's whole points, and
    each question's section quoting that question's answer only."""
    assert "Feedback for" in text
    assert "language model" not in text  # the advisory route's notes stay off the letter
    for said in ("not met", "strength:", "verdict", '": "', "hardcoded_output"):
        assert said not in text.lower(), said  # model JSON, flag codes
    assert not re.findall(r"\b\d+\.\d+\s*/\s*\d+", text)  # whole points, as the rubric's
    sections = re.split(r"\n(?=Question \d)", text)
    q1 = next(s for s in sections if s.startswith("Question 1"))
    q2 = next(s for s in sections if s.startswith("Question 2"))
    answer1 = "East has the highest revenue"  # the submission's answer to question 1
    assert answer1 in q1
    assert answer1 not in q2  # question 2 is unanswered: nothing of question 1 in it
    assert "not answered" in q2
