"""Hidden names reach the student's own text: evidence, model notes, layer notes and
outputs quoted in a report say no name once names are hidden, in the store's report
and so in every export built from it (issue 22, item 17's follow-up)."""

from __future__ import annotations

import dataclasses
import json

from grader.anonymity import name_parts, redact, redact_report
from grader.exports.formats import json_export, plain_csv
from grader.store.database import Store
from grader.types import Evidence
from tests.test_store import make_report

NAME = "Bex Tremaine"


def test_a_name_is_replaced_as_a_whole_word_in_any_case():
    names = name_parts("Ann Lee", "al042", "submissions/al042_hw1.ipynb")
    assert names == ["Ann Lee", "al042", "al042_hw1", "Ann", "Lee"]
    assert redact("print('ANN was here'); planning = 1", names, "Student 001") == \
        "print('Student 001 was here'); planning = 1"
    assert redact("by al042.", names, "Student 001") == "by Student 001."


def test_the_store_s_anonymous_report_carries_no_name_in_the_student_s_text(tmp_path):
    store = Store(tmp_path / "grader.db")
    try:
        a = store.upsert_assignment("hw1", "Homework 1", "python", "/srv/hw1")
        rv = store.add_rubric_version(a, "v1", '{"criteria": []}')
        report = make_report("aa", file="tremaine_hw1.ipynb")
        c1 = report.criteria[0]
        check = dataclasses.replace(c1.checks[0], evidence=(
            Evidence("cell-1", 2, f"# Name: {NAME}\nprint('made by bex tremaine')"),))
        report.criteria[0] = dataclasses.replace(
            c1, checks=[check], model_notes={"feedback": f"Well done, {NAME.split()[0]}!"})
        report.layers["L1"].notes.append("read tremaine_hw1.ipynb")
        sub = store.add_submission(a, "aa", "tremaine_hw1.ipynb", "bt77", NAME)
        gid = store.save_grade(sub, rv, report)
        shown = store.get_report(gid, anonymous=True)
        text = json_export([shown], hide_names=True) + plain_csv([shown])
        for word in ("Bex", "Tremaine", "tremaine", "bt77"):
            assert word not in text, word
        assert "Student 001" in text
        # the ids and codes of ours are kept, and the real report is untouched
        data = json.loads(json_export([shown], hide_names=True))[0]
        assert [c["id"] for c in data["criteria"]] == ["c1", "c2"]
        assert NAME in store.get_report(gid).criteria[0].checks[0].evidence[0].text
    finally:
        store.close()


def test_redact_report_keeps_numbers_and_the_rubric_s_names():
    report = make_report("aa")
    same = redact_report(report, ["Criterion"], "Student 001")
    assert same.criteria[0].title == "Criterion 1"
    assert same.score == report.score
    assert same.layers["L1"].details == {"cells": [1, 2]}
