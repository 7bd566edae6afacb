"""grader.notebooks.load: reading, repairing, normalising and refusing notebooks."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import nbformat
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from grader.errors import NotebookError
from grader.notebooks.load import NotebookLimits, load_notebook, load_notebook_node, strip_ansi

ID_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def nb_bytes(nb: nbformat.NotebookNode) -> bytes:
    return nbformat.writes(nb).encode()


def nb_dict(nb: nbformat.NotebookNode) -> dict[str, Any]:
    return json.loads(nbformat.writes(nb))


def dumps(d: Any) -> bytes:
    return json.dumps(d).encode()


def sample() -> nbformat.NotebookNode:
    return new_notebook(
        cells=[
            new_markdown_cell("# Homework 1", id="intro"),
            new_code_cell(
                "import pandas as pd\nprint(1 + 1)",
                id="setup",
                execution_count=3,
                outputs=[new_output("stream", name="stdout", text="2\n")],
            ),
        ],
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
    )


def test_loads_cells_ids_and_hash() -> None:
    data = nb_bytes(sample())
    nb = load_notebook(data, "student042.ipynb")
    assert nb.name == "student042.ipynb"
    assert nb.sha256 == hashlib.sha256(data).hexdigest()
    assert [(c.id, c.kind, c.index) for c in nb.cells] == [
        ("intro", "markdown", 0),
        ("setup", "code", 1),
    ]
    code = nb.cell("setup")
    assert code is not None
    assert code.source == "import pandas as pd\nprint(1 + 1)"
    assert code.execution_count == 3
    assert code.outputs[0].kind == "stream"
    assert code.outputs[0].text == "2\n"
    assert code.outputs[0].name == "stdout"
    assert nb.kernel_name == "python3"
    assert nb.nbformat == "4.5"


def test_path_source_named_after_file(tmp_path: Path) -> None:
    path = tmp_path / "doejane_hw1.ipynb"
    path.write_bytes(nb_bytes(sample()))
    assert load_notebook(path).name == "doejane_hw1.ipynb"
    assert load_notebook(path, name="shown.ipynb").name == "shown.ipynb"


def test_source_lists_are_joined() -> None:
    d = nb_dict(sample())
    d["cells"][1]["source"] = ["x = 1\n", "y = 2"]
    d["cells"][1]["outputs"][0]["text"] = ["a\n", "b\n"]
    cell = load_notebook(dumps(d), "a.ipynb").cells[1]
    assert cell.source == "x = 1\ny = 2"
    assert cell.output_text == "a\nb\n"


V3 = {
    "nbformat": 3,
    "nbformat_minor": 0,
    "metadata": {"name": "hw0"},
    "worksheets": [
        {
            "metadata": {},
            "cells": [
                {"cell_type": "heading", "level": 1, "metadata": {}, "source": "Title"},
                {
                    "cell_type": "code",
                    "language": "python",
                    "metadata": {},
                    "collapsed": False,
                    "prompt_number": 1,
                    "input": ["x = 2\n", "x * 3"],
                    "outputs": [
                        {"output_type": "pyout", "prompt_number": 1, "metadata": {}, "text": ["6"]},
                        {"output_type": "stream", "stream": "stdout", "text": ["hi\n"]},
                    ],
                },
            ],
        }
    ],
}


def test_v3_notebook_is_upgraded() -> None:
    nb = load_notebook(dumps(V3), "old.ipynb")
    assert nb.nbformat == "4.5"
    assert [c.kind for c in nb.cells] == ["markdown", "code"]
    assert nb.cells[0].source == "# Title"
    code = nb.cells[1]
    assert code.source == "x = 2\nx * 3"
    assert [(o.kind, o.text) for o in code.outputs] == [("execute_result", "6"), ("stream", "hi\n")]
    assert code.execution_count == 1
    assert all(ID_RE.match(c.id) for c in nb.cells)
    # the ids are derived from the content, not random
    assert [c.id for c in load_notebook(dumps(V3), "old.ipynb").cells] == [c.id for c in nb.cells]


def test_missing_ids_get_stable_unique_ids() -> None:
    d = nb_dict(
        new_notebook(
            cells=[new_code_cell("x = 1"), new_code_cell("x = 1"), new_markdown_cell("text")]
        )
    )
    for cell in d["cells"]:
        del cell["id"]
    first = [c.id for c in load_notebook(dumps(d), "a.ipynb").cells]
    again = [c.id for c in load_notebook(dumps(d), "a.ipynb").cells]
    assert first == again
    assert len(set(first)) == 3
    assert all(ID_RE.match(i) for i in first)
    d["cells"][2]["source"] = "changed"
    assert [c.id for c in load_notebook(dumps(d), "a.ipynb").cells][2] != first[2]


def test_old_minor_version_and_duplicate_ids_are_repaired() -> None:
    d = nb_dict(
        new_notebook(cells=[new_code_cell("a = 1"), new_code_cell("b = 2"), new_code_cell("c = 3")])
    )
    for cell, cell_id in zip(d["cells"], ["same", "same", "bad id!"], strict=True):
        cell["id"] = cell_id
    ids = [c.id for c in load_notebook(dumps(d), "a.ipynb").cells]
    assert ids[0] == "same"
    assert len(set(ids)) == 3
    assert "bad id!" not in ids
    d["nbformat_minor"] = 4
    for cell in d["cells"]:
        del cell["id"]
    nb = load_notebook(dumps(d), "a.ipynb")
    assert nb.nbformat == "4.5"
    assert len({c.id for c in nb.cells}) == 3


def test_missing_fields_are_tolerated() -> None:
    d = {
        "nbformat": 4,
        "nbformat_minor": 5,
        "cells": [
            {"cell_type": "code", "source": "x = 1", "extra_key": True},
            {"cell_type": "markdown", "source": "hi", "outputs": [], "execution_count": 1},
        ],
    }
    nb = load_notebook(dumps(d), "a.ipynb")
    assert [c.source for c in nb.cells] == ["x = 1", "hi"]
    assert nb.cells[0].outputs == ()


def test_load_notebook_node_is_valid_and_upgraded() -> None:
    node = load_notebook_node(dumps(V3), "old.ipynb")
    assert isinstance(node, nbformat.NotebookNode)
    assert (node.nbformat, node.nbformat_minor) == (4, 5)
    nbformat.validate(node)  # raises if the repaired node is not valid
    assert node.cells[1].source == "x = 2\nx * 3"
    with pytest.raises(NotebookError, match=r"old\.ipynb: not a readable notebook \(not JSON\)"):
        load_notebook_node(b"{oops", "old.ipynb")


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("\x1b[31mred\x1b[0m", "red"),
        ("\x1b[1;38;5;196mbold\x1b[39;49m done", "bold done"),
        ("\x1b[?25lhidden cursor\x1b[?25h", "hidden cursor"),
        ("\x1b[2K\x1b[1Gline", "line"),
        ("\x1b]8;;https://example.org\x07link\x1b]8;;\x07", "link"),
        ("\x1b]0;window title\x1b\\text", "text"),
        ("\x1b(Bplain\x1b7\x1b8", "plain"),
        ("\x9b32mgreen\x9b0m", "green"),
        ("\x1bPq#0;2;0;0;0\x1b\\after", "after"),
        ("cut off\x1b", "cut off"),
        ("no escapes [0m here", "no escapes [0m here"),
    ],
)
def test_strip_ansi(raw: str, clean: str) -> None:
    assert strip_ansi(raw) == clean


def test_outputs_are_normalised_and_ansi_free() -> None:
    cell = new_code_cell(
        "1/0",
        outputs=[
            new_output("stream", name="stderr", text="\x1b[33mwarn\x1b[0m\n"),
            new_output(
                "execute_result",
                execution_count=1,
                data={
                    "text/plain": "\x1b[1m<Figure>\x1b[0m",
                    "image/png": "iVBOR",
                    "text/html": "<b>x</b>",
                },
            ),
            new_output("display_data", data={"image/png": "iVBOR"}),
            new_output(
                "error",
                ename="ZeroDivisionError",
                evalue="division by zero",
                traceback=["\x1b[0;31m-----\x1b[0m", "\x1b[0;32m----> 1\x1b[0m 1/0"],
            ),
        ],
    )
    nb = load_notebook(nb_bytes(new_notebook(cells=[cell])), "a.ipynb")
    stream, result, display, error = nb.cells[0].outputs
    assert (stream.kind, stream.name, stream.text) == ("stream", "stderr", "warn\n")
    assert result.text == "<Figure>"
    assert set(result.mime) == {"image/png", "text/html"}
    assert (display.text, display.mime) == ("", ("image/png",))
    assert error.kind == "error"
    assert error.name == "ZeroDivisionError"
    assert error.text == "ZeroDivisionError: division by zero\n-----\n----> 1 1/0"
    assert "\x1b" not in nb.cells[0].output_text
    assert nb.cells[0].has_error


def test_carriage_returns_keep_the_last_progress_state() -> None:
    cell = new_code_cell(
        "", outputs=[new_output("stream", name="stdout", text=" 10%\r 50%\r100%\nok\r\n")]
    )
    nb = load_notebook(nb_bytes(new_notebook(cells=[cell])), "a.ipynb")
    assert nb.cells[0].outputs[0].text == "100%\nok\n"


def test_huge_outputs_are_truncated_not_refused() -> None:
    cell = new_code_cell(
        "print('x' * 300_000)",
        outputs=[
            new_output("stream", name="stdout", text="x" * 300_000),
            new_output("stream", name="stdout", text="tail"),
        ],
    )
    limits = NotebookLimits(max_output_chars_per_cell=1000)
    nb = load_notebook(nb_bytes(new_notebook(cells=[cell])), "a.ipynb", limits)
    first, second = nb.cells[0].outputs
    assert first.text.startswith("x" * 1000)
    assert first.text.count("x") == 1000
    assert "output truncated: 299,000 characters" in first.text
    assert "tail" not in second.text
    assert "truncated" in second.text
    roomy = load_notebook(
        nb_bytes(new_notebook(cells=[cell])),
        "a.ipynb",
        NotebookLimits(max_output_chars_per_cell=400_000),
    )
    assert roomy.cells[0].outputs[0].text == "x" * 300_000


def with_metadata(metadata: dict[str, Any], source: str = "") -> bytes:
    return nb_bytes(new_notebook(cells=[new_code_cell(source)], metadata=metadata))


R_SPEC = {"name": "ir", "display_name": "R", "language": "R"}


@pytest.mark.parametrize(
    ("data", "language", "kernel"),
    [
        (with_metadata({"kernelspec": R_SPEC}, "import os"), "r", "ir"),
        (with_metadata({"kernelspec": {"name": "ir43", "display_name": "R 4.3"}}), "r", "ir43"),
        (
            with_metadata({"kernelspec": {"name": "conda-env-stats-r", "display_name": "R"}}),
            "r",
            "conda-env-stats-r",
        ),
        (
            with_metadata({"kernelspec": {"name": "python3", "display_name": "Py"}}, "x <- 1"),
            "python",
            "python3",
        ),
        (with_metadata({"language_info": {"name": "R"}}, "import os"), "r", ""),
        (with_metadata({"language_info": {"name": "python"}}, "library(dplyr)"), "python", ""),
        (with_metadata({}, "df <- read.csv('a.csv')\ndf %>% head()\nv <- c(1, 2)"), "r", ""),
        (with_metadata({}, "library(ggplot2)\nx |> summary()"), "r", ""),
        (with_metadata({}, "import numpy as np\ndef f(x):\n    print(x)"), "python", ""),
        (with_metadata({}, "x = 1"), "python", ""),
    ],
)
def test_language_detection(data: bytes, language: str, kernel: str) -> None:
    nb = load_notebook(data, "a.ipynb")
    assert (nb.language, nb.kernel_name) == (language, kernel)


TINY = NotebookLimits(max_bytes=2000, max_cells=3)
OK_JSON = nb_dict(sample())


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "the file is empty"),
        (b"  \n\t", "the file is empty"),
        (b'{"cells": \x00[]}', "binary content (NUL bytes)"),
        (b"\x80\x81 not text", "not UTF-8 text"),
        (b"PK\x03\x04\x14\x00rest", "this is a ZIP archive"),
        (b"%PDF-1.7\n", "this is a PDF document"),
        (
            b'{\n  "cells": [\n    {"a" 1}\n  ]\n}',
            "(detail: Expecting ':' delimiter at line 3, column 10)",
        ),
        (b"# just a python file\nprint('hi')\n", "not JSON"),
        (b"[1, 2, 3]", "the JSON is a list"),
        (b'"cells"', "the JSON is a string"),
        (b'{"metadata": {}}', 'no "cells" list'),
        (b'{"nbformat": 4, "cells": {}}', 'no "cells" list'),
        (b'{"nbformat": 3, "worksheets": 5}', 'without a "worksheets" list'),
        (b'{"nbformat": "four", "cells": []}', "'four' is not a number"),
        (b'{"nbformat": 2, "cells": []}', "nbformat version 2 is not supported"),
        (b'{"nbformat": 4, "cells": [42]}', "cell 0 is not a JSON object"),
        (b'{"nbformat": 4, "cells": [{"cell_type": "weird"}]}', "cell type 'weird'"),
        (
            b'{"nbformat": 4, "cells": [{"cell_type": "code", "source": 5}]}',
            "not a valid notebook: cell 0 (source)",
        ),
        (
            dumps({**OK_JSON, "metadata": {"kernelspec": {"display_name": "x"}}}),
            "metadata/kernelspec: 'name' is a required property",
        ),
        (dumps({**OK_JSON, "cells": [new_markdown_cell("x")] * 4}), "too many cells (4;"),
        (dumps({**OK_JSON, "metadata": {"pad": "x" * 3000}}), "too large"),
    ],
)
def test_refusals_name_the_file_and_reason(data: bytes, reason: str) -> None:
    with pytest.raises(NotebookError) as info:
        load_notebook(data, "doejane_hw1.ipynb", TINY)
    assert info.value.file == "doejane_hw1.ipynb"
    assert reason in info.value.reason
    assert str(info.value).startswith("doejane_hw1.ipynb: ")


def test_deeply_nested_json_is_refused() -> None:
    with pytest.raises(NotebookError, match=r"deep\.ipynb: not a notebook: the JSON is nested"):
        load_notebook(b"[" * 100_000, "deep.ipynb")


def test_path_refusals(tmp_path: Path) -> None:
    with pytest.raises(NotebookError, match=r"missing\.ipynb: cannot read the file"):
        load_notebook(tmp_path / "missing.ipynb")
    big = tmp_path / "big.ipynb"
    big.write_bytes(b" " * 5000)
    with pytest.raises(NotebookError, match=r"big\.ipynb: the file is too large"):
        load_notebook(big, limits=TINY)


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_cells"):
        NotebookLimits(max_cells=0)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4)
    ),
    max_leaves=20,
)
CELL_KEYS = st.sampled_from(
    [
        "cell_type",
        "source",
        "outputs",
        "id",
        "metadata",
        "execution_count",
        "output_type",
        "text",
        "data",
        "name",
    ]
)
CELL = st.dictionaries(
    CELL_KEYS, JSON | st.sampled_from(["code", "markdown", "raw", "stream"]), max_size=6
)


@settings(max_examples=150, deadline=None, database=None)
@given(
    st.one_of(
        JSON.map(dumps),
        st.binary(max_size=64),
        st.builds(
            lambda cells, minor: dumps(
                {"nbformat": 4, "nbformat_minor": minor, "metadata": {}, "cells": cells}
            ),
            st.lists(CELL, max_size=3),
            JSON,
        ),
        st.builds(
            lambda cells: dumps(
                {
                    "nbformat": 3,
                    "nbformat_minor": 0,
                    "metadata": {},
                    "worksheets": [{"cells": cells}],
                }
            ),
            st.lists(CELL, max_size=3),
        ),
    )
)
def test_bad_input_only_ever_raises_notebook_error(data: bytes) -> None:
    error: NotebookError | None = None
    try:
        nb = load_notebook(data, "fuzz.ipynb")
    except NotebookError as exc:
        error = exc
    if error is not None:
        assert (error.file, bool(error.reason)) == ("fuzz.ipynb", True)
    else:
        assert all(isinstance(c.source, str) for c in nb.cells)
        assert len({c.id for c in nb.cells}) == len(nb.cells)
