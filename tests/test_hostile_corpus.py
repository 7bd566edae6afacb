"""The hostile corpus (tests/hostile/) graded end to end: nothing crashes, nothing leaks.

One session-wide measurement (minutes: about a hundred notebooks and archives, two
languages, real sandboxes and kernels), then one assertion per promise of issue 9.
``python -m tests.hostile`` writes the same figures to RELIABILITY.md.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hostile.corpus import CLASSES
from tests.hostile.run import Findings, measure, runtime_parts

pytestmark = [pytest.mark.slow, pytest.mark.r]


@pytest.fixture(scope="module")
def findings(tmp_path_factory: pytest.TempPathFactory) -> Findings:
    return measure(Path(tmp_path_factory.mktemp("hostile")), llm=True)


def test_no_batch_crashes_and_every_grade_is_kept(findings: Findings) -> None:
    for b in findings.batches:
        assert not b.crashed, f"{b.language} batch crashed (exit {b.returncode}): {b.stderr_tail}"
        graded = sum(r["status"] == "graded" for r in b.reports)
        assert b.stored == graded, f"{b.language}: {graded} graded but {b.stored} stored"
        assert b.exports, f"{b.language}: no export written"
        assert all(len(n.encode()) <= 255 for n in b.exports)


@pytest.mark.parametrize("klass", [k for k in CLASSES if k not in ("prompt",)])
def test_every_case_of_the_class_ends_as_it_should(findings: Findings, klass: str) -> None:
    outcomes = findings.by_class()[klass]
    assert outcomes, f"no case of class {klass}"
    wrong = [f"{o.case.token} {o.case.language} {o.case.what}: {o.got}" for o in outcomes
             if not o.ok]
    assert not wrong, "\n".join(wrong)


def test_a_fork_bomb_leaves_the_other_notebooks_graded_as_without_it(findings: Findings) -> None:
    assert set(findings.bomb) == {"python", "r"}
    for lang, bomb in findings.bomb.items():
        assert bomb["notebooks"] >= 5, bomb
        assert bomb["same"], f"{lang}: {bomb['baseline']} != {bomb['with_bomb']}"


def test_the_sandbox_shows_nothing_of_the_host(findings: Findings) -> None:
    assert set(findings.probes) == {"python", "r"}
    for lang, p in findings.probes.items():
        assert p["ran"], (lang, p["error"])
        assert p["sandboxed"], lang
        assert p["secrets_seen"] == 0, (lang, p)
        assert p["host_users"] == [], (lang, p["host_users"])
        assert p["host_folders_shown"] == [], (lang, p["host_folders_shown"])
        assert p["wrote_outside"] == [], (lang, p["wrote_outside"])
        assert p["port_connections"] == 0, lang
        # /root or /work appear only where a runtime lives there (a pyenv interpreter, the
        # venv), and then hold nothing else (host_folders_shown above)
        private = {"home", "root", "srv", "mnt", "work", "opt"} - runtime_parts()
        assert not private & set(p["root_listing"]), p["root_listing"]


@pytest.mark.llm
def test_a_notebook_far_past_the_context_still_gets_model_layers(findings: Findings) -> None:
    assert findings.prompt.get("ran")
    assert findings.prompt["overflows"] == 0, findings.prompt["layer_errors"]
    wrong = [o.got for o in findings.by_class()["prompt"] if not o.ok]
    assert not wrong, wrong


def test_an_assignment_whose_data_links_out_is_refused_and_leaks_nothing(
        findings: Findings) -> None:
    links = findings.links
    assert links["returncode"] == 2, links
    assert links["named"], links
    assert links["secret_shown"] == 0, links


def test_a_forged_verdict_never_beats_its_honest_twin(findings: Findings) -> None:
    forged = [o for o in findings.by_class()["forging"] if o.case.expect.get("twin")]
    assert len(forged) >= 9, [o.case.what for o in forged]
    assert {o.case.language for o in forged} == {"python", "r"}
    assert all(o.ok for o in forged), [o.got for o in forged if not o.ok]


def test_no_run_folder_is_left_behind(findings: Findings) -> None:
    assert findings.leftovers == 0
