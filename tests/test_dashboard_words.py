"""Failures in words and tables without "None" (inference.dashboard.failures, .rows)."""

from __future__ import annotations

import math

from inference.dashboard.failures import (
    CONSEQUENCE,
    WORDS,
    explain,
    in_words,
    last_failure,
    load_failure,
)
from inference.dashboard.rows import MISSING, readable
from inference.errors import KVFormatError, OutputValidationError
from inference.metrics import MetricsHistory
from inference.types import RequestMetrics
from inference.warmup import RoleWarmth

RAW = ("OutputValidationError: model output is not valid JSON: Invalid control character "
       "at: line 1 column 48")


def test_a_recorded_error_is_said_in_words():
    assert in_words(RAW) == WORDS[OutputValidationError]
    assert "not in the form the grader asked for" in in_words(RAW)
    # a subclass without words of its own takes its nearest base's
    assert in_words("KVFormatError: kv_truncated") == WORDS[KVFormatError.__mro__[1]]
    assert in_words("OutputValidationError (criteria a, b): bad") == \
        WORDS[OutputValidationError]
    assert in_words("ValueError: nope") == "the model request failed"
    assert in_words("not an error at all") == "the model request failed"
    note = explain(RAW, "feedback", "2 min ago")
    assert note.headline.startswith("A request to the feedback model 2 min ago failed: ")
    assert "Invalid control character" not in note.headline  # the details are apart
    assert note.details == RAW
    assert CONSEQUENCE in note.headline
    assert CONSEQUENCE not in explain(RAW, grading=False).headline


def test_the_newest_failure_of_the_window_with_its_details():
    h = MetricsHistory(None)
    assert last_failure(h, now=1000.0) is None
    h.record(RequestMetrics(request_id="r0", role="code", route="code:x", started_at=10.0,
                            finished_at=11.0, error="BackendError: too long ago"))
    h.record(RequestMetrics(request_id="r1", role="code", route="code:x", started_at=200.0,
                            finished_at=201.0, error="BackendError: worker crashed"))
    h.record(RequestMetrics(request_id="r2", role="feedback", route="feedback:x",
                            started_at=900.0, finished_at=910.0, error=RAW))
    h.record(RequestMetrics(request_id="r3", role="code", route="code:x", started_at=950.0,
                            finished_at=951.0))
    note = last_failure(h, within_s=900.0, now=1000.0)
    assert note is not None
    assert note.headline.startswith("A request to the feedback model 90 s ago failed: the "
                                    "model's answer was not in the form")
    assert "request r2, route feedback:x" in note.details
    assert RAW in note.details
    assert "2 model requests failed" in note.details
    assert last_failure(h, within_s=60.0, now=1000.0) is None


def test_a_model_that_could_not_load_is_said_in_words():
    assert load_failure([RoleWarmth("code", "ready")]) is None
    note = load_failure([RoleWarmth("code", "failed", 1.0, "ModelLoadError: no such file "
                                    "/models/x.gguf"), RoleWarmth("feedback", "loading")])
    assert note is not None
    assert note.headline.startswith("Could not load the code-analysis model: the model could "
                                    "not be loaded")
    assert "/models/x.gguf" not in note.headline
    assert note.details == "code: ModelLoadError: no such file /models/x.gguf"


def test_readable_rows_show_a_dash_where_nothing_was_measured():
    rows = readable([{"batch": 1, "notebooks / min": 21.4, "wall (s)": None, "ok": True},
                     {"batch": 2, "notebooks / min": 0.41, "wall (s)": 12.0, "ok": None,
                      "extra": "x"},
                     {"batch": 3, "notebooks / min": math.nan, "wall (s)": 3.0, "ok": False}])
    assert [r["batch"] for r in rows] == [1, 2, 3]  # a column without gaps keeps its type
    assert [r["wall (s)"] for r in rows] == [MISSING, "12", "3"]
    assert [r["notebooks / min"] for r in rows] == ["21.4", "0.41", MISSING]
    assert [r["ok"] for r in rows] == ["yes", MISSING, "no"]
    assert [r["extra"] for r in rows] == [MISSING, "x", MISSING]
    assert not any(v is None for r in rows for v in r.values())
