"""Model files: missing, not GGUF, or corrupt GGUF each give ModelLoadError."""

from __future__ import annotations

from pathlib import Path

import pytest

from inference import DisaggregatedClient, EngineConfig, GenerationRequest, ModelLoadError
from inference import RouteConfig as Route
from inference.models import BUILTIN_MODELS, ModelSpec


def client_for(tmp_path: Path, model_path: Path) -> DisaggregatedClient:
    spec = ModelSpec(name="broken", path=str(model_path), chat_template="plain")
    return DisaggregatedClient(EngineConfig(routes={"code": Route("code", model="broken")},
                                            models={"broken": spec},
                                            history_db=tmp_path / "h.db"))


@pytest.mark.parametrize(("content", "message"), [
    (None, "does not exist"),
    (b"PK\x03\x04 a zip file, not a model", "is not a GGUF file"),
    (b"GGUF" + b"\x03\x00\x00\x00" + b"\xff" * 64, "could not load"),
])
def test_bad_model_file(tmp_path: Path, content, message):
    path = tmp_path / "model.gguf"
    if content is not None:
        path.write_bytes(content)
    with client_for(tmp_path, path) as client:
        with pytest.raises(ModelLoadError, match=message):
            client.generate(GenerationRequest.chat("code", None, "hi"))
        (health,) = [h for h in client.health() if h.kind == "prefill"]
        assert health.state == "down"
        assert client.history.recent(1)[0].error.startswith("ModelLoadError")


def test_bundled_models_are_installed_gguf_files():
    for spec in BUILTIN_MODELS.values():
        path = spec.resolve_path()
        assert path.stat().st_size > 50_000_000
        assert path.read_bytes()[:4] == b"GGUF"
