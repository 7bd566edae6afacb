"""What decoding a route's replies takes besides a context: its model and its settings.

``RouteModel`` is a route's model, loaded on first use (one ``LoadedModel`` per file
for the whole process, so contexts share its weights); ``Decoding`` holds the route's
defaults and makes a request's sampler and reply under them. The serial decode loop
(``EmbeddedBackend``) and the batched one (``batched.BatchDecoder``) are both given
these two objects, so a request decodes the same whichever of them runs it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import ModelLoadError
from ..grammar import schema_to_grammar
from ..models import ModelSpec
from ..types import GenerationRequest, RequestMetrics
from ._llama import LoadedModel, Sampler
from .decode_text import Reply

__all__ = ["Decoding", "RouteModel", "shared_model"]

_models: dict[Path, LoadedModel] = {}
_models_lock = threading.Lock()


def shared_model(path: Path, name: str) -> LoadedModel:
    """One LoadedModel per file for the whole process; contexts share its weights."""
    key = path.resolve()
    with _models_lock:
        model = _models.get(key)
        if model is None:
            model = _models[key] = LoadedModel(key, name)
        return model


class RouteModel:
    """A route's model, loaded on first ``get``; ``load_error`` says why it could not be
    (empty once it loaded)."""

    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec
        self.load_error = ""
        self._model: LoadedModel | None = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def get(self) -> LoadedModel:
        with self._lock:
            if self._model is None:
                try:
                    self._model = shared_model(self.spec.resolve_path(), self.spec.name)
                except ModelLoadError as exc:
                    self.load_error = str(exc)
                    raise
                self.load_error = ""
            return self._model


@dataclass(frozen=True, slots=True)
class Decoding:
    """A route's decoding defaults, for requests that leave them unset."""

    max_tokens: int
    temperature: float

    def temperature_of(self, request: GenerationRequest) -> float:
        return self.temperature if request.temperature is None else request.temperature

    def max_tokens_of(self, request: GenerationRequest) -> int:
        return self.max_tokens if request.max_tokens is None else request.max_tokens

    def deterministic(self, request: GenerationRequest) -> bool:
        """Greedy decoding: the same request always gets the same reply."""
        return self.temperature_of(request) <= 0.0

    def sampler(self, model: LoadedModel, request: GenerationRequest, seed: int) -> Sampler:
        """The request's sampler chain (its schema's grammar, its temperature), seeded
        with ``seed``: the prefill side uses the request's seed, the decode side the next
        one."""
        grammar = schema_to_grammar(request.schema_text) if request.schema_text else None
        return Sampler(model, self.temperature_of(request), seed, grammar)

    def reply(self, model: LoadedModel, request: GenerationRequest, metrics: RequestMetrics,
              t_start: float, on_token: Callable[[str], None] | None) -> Reply:
        """An empty reply to ``request``, taking at most its (or the route's) max_tokens."""
        return Reply(model, request, self.max_tokens_of(request), metrics, t_start, on_token)
