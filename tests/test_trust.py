"""A route trusted to judge with a model the project calls too small gets a warning
(issue 23): by name, GGUF file or Ollama tag, embedded or behind a server."""

from __future__ import annotations

import dataclasses

from inference import DisaggregatedClient, WorkerHealth, default_config
from inference.config import parse_config
from inference.trust import judging_warnings, too_small_to_judge


def test_the_bundled_models_are_known_too_small_by_any_of_their_names():
    assert too_small_to_judge("smollm2-135m") == "smollm2-135m"
    assert too_small_to_judge("SmolLM2-135M-Instruct.Q4_1") == "smollm2-135m"
    assert too_small_to_judge("smollm2:135m") == "smollm2-135m"
    assert too_small_to_judge("gemma-3-270m-q4_k_m.gguf") == "gemma3-270m"
    assert too_small_to_judge("qwen2.5-7b-instruct") is None
    assert too_small_to_judge("") is None


def health(name: str, role: str, model: str) -> WorkerHealth:
    return WorkerHealth(name=name, role=role, route=f"{role}:kvserver", kind="server",
                        state="up", model=model)


def test_a_judging_route_behind_servers_is_warned_per_server(tmp_path):
    config = parse_config({
        "engine": {"history_db": str(tmp_path / "h.db")},
        "servers": {"d1": {"url": "http://127.0.0.1:9", "role": "both"},
                    "d2": {"url": "http://127.0.0.1:10", "role": "both"}},
        "roles": {"code": {"backend": "kvserver", "servers": ["d1", "d2"],
                           "can_judge": True},
                  "feedback": {"backend": "kvserver", "servers": ["d1", "d2"],
                               "can_judge": False}}})
    lines = judging_warnings(config, [health("d1", "code, feedback", "smollm2-135m"),
                                      health("d2", "code, feedback", "qwen2.5-7b")])
    assert len(lines) == 1
    assert "The code role may move scores" in lines[0]
    assert "d1 serves smollm2-135m" in lines[0]


def test_the_embedded_default_is_advisory_and_not_warned_until_trusted(tmp_path):
    config = default_config(history_db=tmp_path / "h.db")
    with DisaggregatedClient(config) as client:
        assert client.judging_warnings() == []  # advisory: nothing to warn about
    trusted = dataclasses.replace(config, routes={
        role: dataclasses.replace(r, can_judge=True) for role, r in config.routes.items()})
    lines = judging_warnings(trusted, [])
    assert {line.split(" role")[0] for line in lines} == {f"The {r}" for r in config.routes}
    assert all("(embedded)" in line for line in lines)
