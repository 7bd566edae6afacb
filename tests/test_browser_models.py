"""Issue 33's walk with the models on, in Chromium (the bundled models: a few minutes on
2 cores).

1. Two of retail-sales' samples (runtime_errors and template_only) are graded with the
   models on: the results table shows both grades while the models' notes are still to
   come ("The models' notes: 0 of 2"), and the notes come in after them.
2. Each student's letter, read on the Review page, shows the numbers of the JSON the Grade
   page exports: the total (8.64 stays 8.64, never rounded to another number) and its
   percentage, the same as the gradebook's.
3. The models are switched off on the Grade page, Review is visited and the Grade page
   opened again: the switch is still off; a notebook graded then says its model layers
   were off, and no model request was sent (the request history and the store's model
   queue hold what they held).

Screenshots: artifacts/browser/models/ (grades before notes; a letter).
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from tests.browser_app import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, running_app, stacks, wait_idle
from tests.test_browser_walk import _download, _go

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.llm]

OUT = ARTIFACTS / "models"
SAMPLES = ["runtime_errors.ipynb", "template_only.ipynb"]
NOTES_IN = "The models' notes of all"
MODELS = "Model analysis and feedback (L3, L4)"


def _pick(page, label: str, option: str) -> None:
    page.get_by_role("combobox", name=label, exact=True).click()
    page.get_by_role("option", name=option).first.click()
    wait_idle(page)


def _grade_samples(page, samples: list[str]) -> None:
    _pick(page, "Assignment", "Retail sales")
    box = page.get_by_role("combobox", name="Or the example's sample submissions")
    for sample in samples:
        box.click()
        page.get_by_role("option", name=sample, exact=True).click()
    page.keyboard.press("Escape")
    page.get_by_role("button", name="Grade", exact=True).click()


def _options(page) -> None:
    if not page.get_by_label(MODELS, exact=True).is_visible():
        page.get_by_text("Options", exact=True).click()


def _tick(page, label: str, value: bool) -> None:
    """A checkbox set as an instructor sets it: a click on its label (the input is hidden
    under it)."""
    if page.get_by_label(label, exact=True).is_checked() != value:
        page.get_by_text(label, exact=True).click()
    wait_idle(page)


def _counts(data: Path) -> tuple[int, int]:
    """(model requests recorded, model parts queued or made), read from the app's store."""
    with sqlite3.connect(data / "grader.db") as db:
        requests = db.execute("SELECT count(*) FROM inference_requests").fetchone()[0]
        parts = db.execute("SELECT count(*) FROM model_parts").fetchone()[0]
    return requests, parts


def test_grades_first_letters_with_the_gradebook_s_numbers_and_models_off(tmp_path: Path):
    from playwright.sync_api import expect, sync_playwright

    data = tmp_path / "data"
    with running_app(data, OUT / "streamlit.log") as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1600},
                                accept_downloads=True)
        try:
            page.goto(url)
            expect(page.get_by_role("heading", name="Grade")).to_be_visible(timeout=60_000)
            wait_idle(page)
            _grade_samples(page, SAMPLES)
            # 1. the grades, then the notes
            results = page.get_by_role("heading", name=re.compile("^Results: Retail sales"))
            expect(results).to_be_visible(timeout=300_000)
            expect(page.get_by_text(re.compile(r"The models' notes: \d of 2"))).to_be_visible(
                timeout=60_000)
            OUT.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(OUT / "grades-before-notes.png"), full_page=True)
            graded = json.loads(_download(page, "JSON", tmp_path / "json").read_text("utf-8"))
            expect(page.get_by_text(NOTES_IN)).to_be_visible(timeout=900_000)
            # 2. the letters say the gradebook's numbers
            _go(page, "Review")
            assert len(graded) == len(SAMPLES)
            for row in graded:
                _letter_says(page, row)
            page.screenshot(path=str(OUT / "letter.png"), full_page=True)
            # 3. the models off, across pages
            _go(page, "Grade")
            _options(page)
            _tick(page, "Model analysis and feedback (L3, L4)", False)
            _go(page, "Review")
            _go(page, "Grade")
            _options(page)
            expect(page.get_by_label(MODELS, exact=True)).not_to_be_checked()
            _tick(page, "Regrade files graded before", True)
            before = _counts(data)
            _grade_samples(page, ["partial.ipynb"])
            expect(page.get_by_text(re.compile(r"^Graded 1 of 1 notebooks"))).to_be_visible(
                timeout=300_000)  # this batch's, not the one before
            wait_idle(page)
            assert _counts(data) == before  # no request sent, nothing queued for the models
            assert page.get_by_text(NOTES_IN).count() == 0
        except Exception as exc:
            OUT.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(OUT / "failed.png"), full_page=True)
            raise AssertionError(f"{exc}\n--- the app's threads ---\n{stacks(url)}") from exc
        finally:
            browser.close()


def _letter_says(page, row: dict) -> None:
    """The Review page's letter of ``row``'s student shows its score and percentage."""
    from playwright.sync_api import expect

    _pick(page, "Grade", re.compile(re.escape(Path(row["file"]).stem)))
    score, top = row["score"], row["max_score"]
    shown = f"{score:.2f}".rstrip("0").rstrip(".") if score is not None else ""
    letter = page.locator("p").filter(has_text=re.compile(r"^Score: "))  # bold, then the %
    expect(letter.first).to_be_visible(timeout=60_000)
    text = letter.first.inner_text()
    assert f"Score: {shown} / {top:g}" in text, (text, row["file"], score)
    percent = re.search(r"\((\d+(?:\.\d+)?)%\)", text)
    assert percent is not None, text
    assert abs(float(percent.group(1)) - 100 * score / top) < 0.5 + 1e-9, (text, score)
