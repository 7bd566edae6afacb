"""One limit for an upload, said where the file is chosen (grader.views.upload_limits,
.streamlit/config.toml), and a bad notebook's refusal in words with the parser's detail
kept apart (grader.notebooks.refusals)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from grader.errors import NotebookError
from grader.notebooks.load import DEFAULT_LIMITS, NotebookLimits, load_notebook
from grader.notebooks.refusals import words_and_detail
from grader.notebooks.zips import DEFAULT_ARCHIVE_LIMITS
from grader.views.upload_limits import NOTEBOOK_MB, UPLOAD_MB, limits_text, notebook_limit_text

ROOT = Path(__file__).resolve().parents[1]


def test_the_uploader_s_limit_is_the_one_the_pages_say():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["server"]["maxUploadSize"] == UPLOAD_MB
    assert DEFAULT_ARCHIVE_LIMITS.max_total_bytes >= UPLOAD_MB * 1_000_000  # a ZIP can hold it
    assert DEFAULT_LIMITS.max_bytes == NOTEBOOK_MB * 1_000_000
    text = limits_text()
    assert text.startswith(f"Notebooks up to {NOTEBOOK_MB} MB each, in a ZIP too; a ZIP up to "
                           f"{UPLOAD_MB} MB")
    assert "Clear All Outputs" in text
    assert notebook_limit_text().startswith(f"Notebooks up to {NOTEBOOK_MB} MB each.")


def test_a_notebook_over_the_limit_is_told_to_clear_its_outputs():
    big = json.dumps({"cells": [], "metadata": {"pad": "x" * 400}, "nbformat": 4,
                      "nbformat_minor": 5}).encode()
    with pytest.raises(NotebookError) as info:
        load_notebook(big, "hw.ipynb", NotebookLimits(max_bytes=200))
    assert info.value.reason.startswith("the file is too large (")
    assert "the limit is 200 bytes" in info.value.reason
    assert "clear them (in Jupyter: Edit > Clear All Outputs" in info.value.reason


@pytest.mark.parametrize(("data", "words", "detail"), [
    (b"# a script saved as a notebook\nprint(1)\n",
     "the file does not begin as a notebook does", "Expecting value at line 1, column 1"),
    (b'{"cells": ["a\x01b"]}', "the file is damaged or was not saved completely",
     "Invalid control character at line 1, column 14"),
    (b'{"cells": [', "the file is damaged or was not saved completely",
     "Expecting value at line 1, column 12"),
])
def test_a_file_that_is_not_json_is_said_in_words_with_the_detail_apart(data, words, detail):
    """Issue 33: "not JSON: Invalid control character at at line 1, column 48"."""
    with pytest.raises(NotebookError) as info:
        load_notebook(data, "hw.ipynb")
    said, technical = words_and_detail(info.value.reason)
    assert said.startswith("not a readable notebook (not JSON): ")
    assert words in said
    assert "line 1" not in said  # the parser's words are in the detail only
    assert technical == detail
    assert " at at " not in info.value.reason


def test_a_reason_without_detail_is_all_words():
    assert words_and_detail("the file is empty") == ("the file is empty", "")
