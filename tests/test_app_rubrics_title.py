"""The Rubrics page and the title typed when an assignment was made (issue 22, item 10).

An assignment made from a rubric JSON of our own format kept the rubric's own title in
the rubric (``Workspace.create`` retitled only imported rubrics), while the assignment
took the typed title: the Rubrics page showed the file's title. ``create`` now gives the
rubric the typed title; for an assignment made before (or a rubric saved since with
another title) the page says that the two differ and puts the typed title in the field
with one click; an import on the page takes the assignment's title."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from grader.service.workspace import Upload, Workspace
from grader.store.database import Store
from tests.test_app_rubrics import RETAIL, k, page, texts

REPO = Path(__file__).resolve().parents[1]
TYPED = "Week 3: retail sales (section B)"


def create(data: Path, rubric: dict, later_title: str = "") -> str:
    """An assignment made with the typed title; ``later_title``: its rubric saved since
    under another title (as an assignment made before the fix carries it)."""
    with Store(data / "grader.db") as store:
        ws = Workspace(store, data / "assignments")
        made, _ = ws.create(
            TYPED, Upload("template.ipynb", (RETAIL / "template.ipynb").read_bytes()),
            Upload("solution.ipynb", (RETAIL / "solution.ipynb").read_bytes()),
            Upload("rubric.json", json.dumps(rubric).encode()))
        assert made.rubric.title == TYPED  # the title typed at creation, not the file's
        if later_title:
            ws.save_rubric(made.name, dataclasses.replace(made.rubric, title=later_title))
    return made.name


def test_the_typed_title_is_offered_where_the_rubric_file_had_its_own(app_data: Path):
    rubric = json.loads((REPO / "rubrics" / "retail-sales.json").read_text(encoding="utf-8"))
    rubric["title"] = "Retail rubric from last year"
    name = create(app_data, rubric, later_title="Retail rubric from last year")
    at = page(name)
    assert at.selectbox(key="rubrics_assignment").value == name
    said = texts(at.info)
    assert f"This assignment is titled “{TYPED}”" in said
    assert "“Retail rubric from last year”, from the rubric file" in said
    assert at.text_input(key=k(at, "title")).value == "Retail rubric from last year"
    (use,) = [b for b in at.button if b.label == "Use the assignment's title"]
    use.click().run()
    assert not at.exception
    assert at.text_input(key=k(at, "title")).value == TYPED
    assert "This assignment is titled" not in texts(at.info)  # said once, then done
    changes = texts(at.markdown)
    assert f"title: 'Retail rubric from last year' -> '{TYPED}'" in changes
    assert not at.button(key="rubrics_save").disabled


def test_a_rubric_with_the_typed_title_says_nothing(app_data: Path):
    rubric = json.loads((REPO / "rubrics" / "retail-sales.json").read_text(encoding="utf-8"))
    rubric["title"] = TYPED
    at = page(create(app_data, rubric))
    assert "This assignment is titled" not in texts(at.info)
    assert not [b for b in at.button if b.label == "Use the assignment's title"]
    assert at.text_input(key=k(at, "title")).value == TYPED
