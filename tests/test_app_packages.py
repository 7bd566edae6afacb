"""The packages box in Streamlit's AppTest: what an assignment declares and this machine
lacks is named on the Rubrics page (and the Grade page) with a button that installs it;
once installed, the box says so and the missing-package warning is gone."""

from __future__ import annotations

import pytest
from nbformat.v4 import new_code_cell

from tests.conftest import open_app
from tests.test_packages import X, local, tiny_wheel
from tests.test_selfcheck import write_assignment

pytestmark = pytest.mark.slow


def test_the_missing_packages_are_named_and_installed_from_the_page(app_data, tmp_path):
    wheels = tmp_path / "wheels"
    tiny_wheel(wheels)
    folder = write_assignment(app_data / "assignments" / "tiny", "python",
                              [new_code_cell("import gradertiny\nx = ...")],
                              [new_code_cell("import gradertiny\nx = 1")], X)
    (folder / "requirements.txt").write_text("\n".join(local(wheels, "gradertiny")) + "\n")
    with (folder / "assignment.toml").open("a", encoding="utf-8") as f:
        f.write('title = "Tiny"\n[packages]\npython = "requirements.txt"\n')
    at = open_app("app_pages/rubrics.py")
    at.selectbox(key="rubrics_assignment").set_value("tiny").run()
    assert not at.exception
    warned = [w.value for w in at.warning if "not installed here" in w.value]
    assert warned
    assert "gradertiny" in warned[0]
    [button] = [b for b in at.button if b.label == "Install the assignment's packages"]
    button.click().run()
    assert not at.exception
    assert not [w for w in at.warning if "not installed here" in w.value]
    assert any("gradertiny: installed" in c.value for c in at.caption)
    assert (app_data / "envs").is_dir()
