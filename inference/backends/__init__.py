"""Backends, registered lazily by name so llama.cpp loads only when a route uses it."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from ..config import EngineConfig, RouteConfig
from ..errors import ConfigError
from ..threads import ThreadBudget
from .base import Backend, TokenCallback

BackendFactory = Callable[[RouteConfig, EngineConfig, ThreadBudget], Backend]

_REGISTRY: dict[str, str | BackendFactory] = {
    "embedded": "inference.backends.embedded:EmbeddedBackend",
}


def register_backend(name: str, factory: str | BackendFactory) -> None:
    """Add a backend: a factory, or "module:Class" imported on first use."""
    _REGISTRY[name] = factory


def backend_names() -> list[str]:
    return sorted(_REGISTRY)


def create_backend(route: RouteConfig, config: EngineConfig, budget: ThreadBudget) -> Backend:
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
    return factory(route, config, budget)


__all__ = ["Backend", "TokenCallback", "backend_names", "create_backend", "register_backend"]
