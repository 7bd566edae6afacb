"""Cluster configuration: which route serves each role, read from one TOML file.

The environment is read here and nowhere else:

- ``GRADER_CONFIG``: path of the TOML file (default: ``grader.toml`` in the
  repository root, if it exists; otherwise the embedded default below).
- ``GRADER_DATA_DIR``: where the SQLite history lives (default ``.data/``).

The embedded default needs no file and no server: both roles (``code`` and
``feedback``) run SmolLM2 in-process, each as its own prefill + decode pair.
See docs/configuration.md for every key.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

from .errors import ConfigError
from .models import BUILTIN_MODELS, DEFAULT_MODEL, ModelSpec, get_model, spec_from_config

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_ROLES = ("code", "feedback")
Mode = Literal["disaggregated", "single"]
MODES = ("disaggregated", "single")


@dataclass(frozen=True, slots=True)
class RouteConfig:
    """How one role is served.

    ``mode = "disaggregated"``: prefill on one worker, KV moved, decode on another.
    ``mode = "single"``: one worker does both (no handoff).
    """

    role: str
    backend: str = "embedded"
    model: str = DEFAULT_MODEL
    mode: Mode = "disaggregated"
    n_ctx: int | None = None  # None: the model's default
    prefix_cache_mb: int = 256
    max_tokens: int | None = None  # None: the model's default
    temperature: float | None = None
    fallback: bool = True  # on a disaggregation failure, retry with one worker
    options: dict[str, Any] = field(default_factory=dict)  # backend-specific

    @property
    def name(self) -> str:
        return f"{self.role}:{self.backend}/{self.model}"


@dataclass(frozen=True, slots=True)
class EngineConfig:
    routes: dict[str, RouteConfig]
    models: dict[str, ModelSpec] = field(default_factory=dict)
    threads: int | None = None  # None: every core this process may use
    history_db: Path | None = None  # None: no SQLite history (in-memory only)
    history_size: int = 10_000
    source: str = "embedded default"

    def model(self, name: str) -> ModelSpec:
        return get_model(name, self.models)


def data_dir() -> Path:
    return Path(os.environ.get("GRADER_DATA_DIR") or REPO_ROOT / ".data")


def default_config(history_db: Path | None = None) -> EngineConfig:
    return EngineConfig(
        routes={role: RouteConfig(role=role) for role in DEFAULT_ROLES},
        history_db=history_db if history_db is not None else data_dir() / "grader.db",
    )


def config_path() -> Path | None:
    env = os.environ.get("GRADER_CONFIG")
    if env:
        path = Path(env).expanduser()
        if not path.exists():
            raise ConfigError(f"GRADER_CONFIG names {path}, which does not exist")
        return path
    path = REPO_ROOT / "grader.toml"
    return path if path.exists() else None


def load_config(path: Path | str | None = None) -> EngineConfig:
    """Read the config file (explicit path, $GRADER_CONFIG, ./grader.toml) or the default."""
    path = Path(path) if path is not None else config_path()
    if path is None:
        return default_config()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    return parse_config(data, source=str(path))


def parse_config(data: dict[str, Any], source: str = "<dict>") -> EngineConfig:
    _only(data, {"engine", "roles", "models"}, source)
    engine = data.get("engine", {})
    _only(engine, {"threads", "history_db", "history_size"}, f"{source} [engine]")
    models = {name: spec_from_config(name, tbl) for name, tbl in data.get("models", {}).items()}
    roles = data.get("roles") or {role: {} for role in DEFAULT_ROLES}
    route_keys = {f.name for f in fields(RouteConfig)} - {"role"}
    routes: dict[str, RouteConfig] = {}
    for role, tbl in roles.items():
        _only(tbl, route_keys, f"{source} [roles.{role}]")
        route = RouteConfig(role=role, **tbl)
        if route.mode not in MODES:
            raise ConfigError(f"{source} [roles.{role}]: mode {route.mode!r} is not one of "
                              f"{', '.join(MODES)}")
        if route.model not in {**BUILTIN_MODELS, **models}:
            raise ConfigError(f"{source} [roles.{role}]: unknown model {route.model!r}; known: "
                              f"{', '.join(sorted({**BUILTIN_MODELS, **models}))}")
        routes[role] = route
    history = engine.get("history_db")
    threads = engine.get("threads")
    if threads is not None and (not isinstance(threads, int) or threads < 1):
        raise ConfigError(f"{source} [engine]: threads must be a positive integer")
    return EngineConfig(
        routes=routes,
        models=models,
        threads=threads,
        history_db=Path(history).expanduser() if history else data_dir() / "grader.db",
        history_size=int(engine.get("history_size", 10_000)),
        source=source,
    )


def _only(table: Any, allowed: set[str], where: str) -> None:
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: expected a table")
    unknown = set(table) - allowed
    if unknown:
        raise ConfigError(f"{where}: unknown keys {', '.join(sorted(unknown))}; "
                          f"valid keys are {', '.join(sorted(allowed))}")
