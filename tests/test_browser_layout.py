"""Issue 33's layout, in Chromium at 1400 px (the sidebar open): the Rubrics page's import
table fits the page (its "imported as", "what to do" and "where" columns were cut or off
screen), and Review's split view shows each criterion's points (they were off screen).

The tables are drawn on a canvas, so the test holds the grid's width, as the browser laid
it out, against the widths the page gives its columns. Screenshots under
artifacts/browser/layout/.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser_app import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, ROOT, running_app, wait_idle

pytestmark = [pytest.mark.browser, pytest.mark.slow]

OUT = ARTIFACTS / "layout"
OLD = ROOT.parent / "shared" / "course-r" / "old-rubrics" / "assignment_6_rubric.json"
SUBS = ROOT / "examples" / "retail-sales" / "submissions"


@pytest.fixture
def app_url(tmp_path: Path) -> Iterator[str]:
    """The app over a store with two retail-sales notebooks graded (stored outputs)."""
    from grader.layers.base import GradeOptions
    from grader.pipeline import GradeInput, Grader
    from grader.service.batch import grade_batch
    from grader.service.workspace import Workspace
    from grader.store.database import Store

    data = tmp_path / "data"
    with Store(data / "grader.db") as store:
        ws = Workspace(store, data / "assignments")
        items = [GradeInput(f"{sid}.ipynb", (SUBS / f"{kind}.ipynb").read_bytes(), sid, sid)
                 for sid, kind in (("73101", "runtime_errors"), ("73102", "partial"))]
        grade_batch(Grader(ws.load("retail-sales"), GradeOptions(execute=False)), items, store)
    with running_app(data, OUT / "streamlit.log") as url:
        yield url


def _go(page, name: str) -> None:
    from playwright.sync_api import expect

    page.get_by_test_id("stSidebarNav").get_by_role("link", name=name).click()
    expect(page.get_by_role("heading", name=name, exact=True)).to_be_visible(timeout=60_000)
    wait_idle(page)


def _width(config: dict) -> int:
    return sum(c["width"] for c in config.values() if isinstance(c.get("width"), int))


@pytest.mark.skipif(not OLD.is_file(), reason="the course's old rubrics are not here")
def test_the_import_table_and_the_review_criteria_fit_at_1400_px(app_url: str):
    from playwright.sync_api import expect, sync_playwright

    from app_pages.components import CRITERIA_COLUMNS
    from app_pages.import_view import COLUMNS

    OUT.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1400})
        try:
            page.goto(app_url)
            expect(page.get_by_role("heading", name="Grade")).to_be_visible(timeout=90_000)
            wait_idle(page)

            _go(page, "Rubrics")
            page.get_by_role("combobox", name="Assignment").click()
            page.get_by_role("option").filter(has_text="(r-joins,").first.click()
            wait_idle(page)
            page.get_by_text("Import a rubric file").click()
            page.locator("input[type=file]").first.set_input_files(str(OLD))
            wait_idle(page)
            table = page.locator("[data-testid=stDataFrame]:visible").first
            table.scroll_into_view_if_needed()
            page.wait_for_timeout(800)
            page.screenshot(path=str(OUT / "import-table.png"))
            box = table.bounding_box()
            assert box["width"] >= _width(COLUMNS) + 16  # every column, and the scroll bar
            assert box["x"] + box["width"] <= 1400

            _go(page, "Review")
            page.get_by_role("tab", name="Criteria and evidence").scroll_into_view_if_needed()
            page.wait_for_timeout(800)
            page.screenshot(path=str(OUT / "review-split.png"))
            grid = page.locator("[data-testid=stDataFrame]:visible").nth(1)  # the criteria
            box = grid.bounding_box()
            first = {k: v for k, v in CRITERIA_COLUMNS.items()
                     if k in ("criterion", "points", "max", "needs review")}
            assert box["width"] >= _width(first)  # the criterion, its points, max, review
            assert box["x"] + box["width"] <= 1400
        except Exception:
            page.screenshot(path=str(OUT / "failed.png"))
            raise
        finally:
            browser.close()
