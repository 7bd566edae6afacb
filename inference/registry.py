"""The backends by name, imported lazily: llama.cpp loads only when a route uses it.

Each name maps to a factory or to ``"module:Class"``, imported on first use: the
embedded engine lives in ``inference.backends``, the remote ones (our kvserver,
OpenAI-compatible, Ollama) in ``inference.cluster``. The registry sits above both,
so neither needs to know the other's backends.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from .backends.base import Backend
from .config import EngineConfig, RouteConfig
from .errors import ConfigError
from .threads import ThreadBudget

# A factory takes (route, config, budget); a remote backend's also takes the client's
# Cluster (the servers, their health and the routing tables, shared by all routes).
BackendFactory = Callable[..., Backend]

_REGISTRY: dict[str, str | BackendFactory] = {
    "embedded": "inference.backends.embedded:EmbeddedBackend",
    "kvserver": "inference.cluster.remote:KVServerBackend",
    "openai": "inference.cluster.remote:OpenAIBackend",
    "ollama": "inference.cluster.remote:OllamaBackend",
}


def register_backend(name: str, factory: str | BackendFactory) -> None:
    """Add a backend: a factory, or "module:Class" imported on first use."""
    _REGISTRY[name] = factory


def backend_names() -> list[str]:
    return sorted(_REGISTRY)


def create_backend(route: RouteConfig, config: EngineConfig, budget: ThreadBudget,
                   cluster: Any = None) -> Backend:
    try:
        factory = _REGISTRY[route.backend]
    except KeyError:
        raise ConfigError(
            f"role {route.role!r}: unknown backend {route.backend!r}; "
            f"known backends are {', '.join(backend_names())}"
        ) from None
    if isinstance(factory, str):
        module_name, _, attr = factory.partition(":")
        factory = getattr(importlib.import_module(module_name), attr)
    if route.remote:
        return factory(route, config, budget, cluster)
    return factory(route, config, budget)


__all__ = ["BackendFactory", "backend_names", "create_backend", "register_backend"]
