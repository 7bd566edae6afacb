"""JSON that is always JSON (issue 21): grammar-bound output of both bundled models parses.

A grade's feedback layer failed twice on "model output is not valid JSON: Invalid control
character": the schema grammar's ``char`` rule let a model write a raw newline inside a
string. The grammar now admits control characters only escaped, and the parser reads a
reply that still holds one (a remote server's grammar) as the JSON it means. Here both
bundled models decode prompts that invite line breaks and tabs, under the grader's own
feedback and code schemas, at a temperature that explores: every reply that ended by
itself parses with Python's strict ``json.loads`` and matches its schema.
"""

from __future__ import annotations

import json

import jsonschema
import pytest
from conftest import make_config

from grader.layers.prompts import code_schema, feedback_schema
from grader.rubrics.schema import Criterion
from inference import DisaggregatedClient, GenerationRequest, OutputValidationError
from inference.grammar import check_schema
from inference.prompting import parse_output

CRITERIA = [Criterion(id="tidy", title="Tidy the data", kind="code", points=4, checks=()),
            Criterion(id="explain", title="Explain the trend", kind="written", points=2, checks=())]
PROMPTS = [
    "Write the feedback as a list, one point per line, each line starting with a tab.",
    "Quote the student's code exactly, keeping its line breaks:\nfor r in rows:\n\tprint(r)",
    'The student wrote: "mean = df[\'x\'].mean()\\n" and a backslash \\ path C:\\data.',
    "Use a bulleted list with new lines:\n- first\n- second\n- third",
    "Answer in a poem of three lines.",
    "Reply with the code block ```python\nx = 1\ny = 2\n``` inside your feedback.",
]


def test_the_grammar_admits_no_raw_control_character():
    grammar = check_schema({"type": "object", "properties": {"a": {"type": "string"}}})
    char = next(line for line in grammar.splitlines() if line.startswith("char ::="))
    assert r"\x00-\x1F" in char
    assert r"\x7F" in char


def test_a_reply_with_a_raw_newline_in_a_string_reads_as_meant():
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    assert parse_output('{"a": "two\nlines\tand a tab"}', schema) == {
        "a": "two\nlines\tand a tab"}
    with pytest.raises(OutputValidationError, match="not valid JSON"):
        parse_output('{"a": "cut', schema)


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory):
    client = DisaggregatedClient(make_config(tmp_path_factory.mktemp("json"), {
        "small": {"model": "smollm2-135m", "temperature": 0.9, "prefix_cache_mb": 0},
        "gemma": {"model": "gemma3-270m", "temperature": 0.9, "prefix_cache_mb": 0},
    }))
    yield client
    client.close()


@pytest.mark.llm
@pytest.mark.slow
@pytest.mark.parametrize("role", ["small", "gemma"])
def test_every_finished_reply_of_the_bundled_models_is_strict_json(both, role):
    schemas = [feedback_schema(CRITERIA), code_schema(CRITERIA, ["c1", "c2"], rich=True)]
    finished, cut = 0, []
    for i, prompt in enumerate(PROMPTS):
        schema = schemas[i % 2]
        req = GenerationRequest.chat(role, "You are a teaching assistant. Reply with JSON "
                                           "only.", prompt, json_schema=schema, max_tokens=250)
        try:
            reply = both.generate(req)
        except OutputValidationError as exc:  # only a reply cut by max_tokens may fail
            cut.append(exc.metrics.finish_reason)
            continue
        finished += 1
        value = json.loads(reply.text)  # strict: a raw control character fails here
        jsonschema.validate(value, schema)
        assert value == reply.parsed
    assert set(cut) <= {"length"}
    assert finished >= 2


@pytest.mark.llm
@pytest.mark.slow
def test_an_invalid_reply_is_tried_once_more_only_where_that_can_change_it(both, tmp_path):
    def errors(client: DisaggregatedClient) -> int:
        return sum(1 for m in client.history.recent(50) if "OutputValidationError" in m.error)

    cut = GenerationRequest.chat("small", "Reply with JSON.", "Grade: x = 1",
                                 json_schema=feedback_schema(CRITERIA), max_tokens=3)
    before = errors(both)
    with pytest.raises(OutputValidationError):  # cut by max_tokens twice: the second error
        both.generate(cut)
    assert errors(both) == before + 2  # sampled (temperature 0.9): a second try was made
    greedy = DisaggregatedClient(make_config(tmp_path, {"small": {
        "model": "smollm2-135m", "temperature": 0.0, "prefix_cache_mb": 0}}))
    try:
        with pytest.raises(OutputValidationError):
            greedy.generate(cut)
        # greedy but cut by max_tokens: tried once more with more room (4 tokens: still cut)
        rows = [m for m in greedy.history.recent(50) if "OutputValidationError" in m.error]
        assert len(rows) == 2
        assert sorted(r.decode_tokens for r in rows) == [3, 4]
    finally:
        greedy.close()
