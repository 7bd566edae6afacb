"""Cluster configuration: which route serves each role, read from one TOML file.

The environment is read here and nowhere else:

- ``GRADER_CONFIG``: path of the TOML file (default: ``grader.toml`` in the
  repository root, if it exists; otherwise the embedded default below).
- ``GRADER_DATA_DIR``: where the SQLite history lives (default ``.data/``).
- the bearer tokens of remote servers, from the variable a ``[servers.NAME]`` table
  names in ``token_env`` (or a ``token_file``).

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

from .endpoint import Endpoint, Timeouts
from .errors import ConfigError
from .models import BUILTIN_MODELS, DEFAULT_MODEL, ModelSpec, get_model, spec_from_config

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_ROLES = ("code", "feedback")
Mode = Literal["disaggregated", "single"]
MODES = ("disaggregated", "single")
# Backends that serve from remote servers, and the server protocol each speaks.
REMOTE_BACKENDS = {"kvserver": "kvserver", "openai": "openai", "ollama": "ollama"}


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
    # Remote backends: the names of the [servers.NAME] that serve this role (each
    # server's own role says whether it prefills, decodes or does both).
    servers: tuple[str, ...] = ()
    # Remote backends: when every server is down, serve on the embedded engine with
    # ``model`` (which must then be a local model) instead of failing.
    embedded_fallback: bool = True
    can_judge: bool | None = None  # None: the model's own setting (remote: true)

    def __post_init__(self) -> None:
        object.__setattr__(self, "servers", tuple(self.servers))

    @property
    def remote(self) -> bool:
        return self.backend in REMOTE_BACKENDS

    @property
    def name(self) -> str:
        return f"{self.role}:{self.backend}/{self.model}"


@dataclass(frozen=True, slots=True)
class HealthConfig:
    """How the client watches remote servers (see inference.cluster.health)."""

    probe_interval: float = 2.0  # seconds between two health checks of a server
    breaker_failures: int = 3  # consecutive failures that open a server's circuit
    breaker_reset_seconds: float = 10.0  # open circuit -> one trial request after this
    canary_interval: float = 300.0  # seconds between correctness canaries (0: off)

    def __post_init__(self) -> None:
        if not self.probe_interval > 0:
            raise ConfigError("[health] probe_interval must be > 0 seconds")
        if not (isinstance(self.breaker_failures, int) and self.breaker_failures >= 1):
            raise ConfigError("[health] breaker_failures must be a positive integer")
        if not self.breaker_reset_seconds > 0:
            raise ConfigError("[health] breaker_reset_seconds must be > 0")
        if self.canary_interval < 0:
            raise ConfigError("[health] canary_interval must be >= 0 (0 turns it off)")


@dataclass(frozen=True, slots=True)
class EngineConfig:
    routes: dict[str, RouteConfig]
    models: dict[str, ModelSpec] = field(default_factory=dict)
    threads: int | None = None  # None: every core this process may use
    history_db: Path | None = None  # None: no SQLite history (in-memory only)
    history_size: int = 10_000
    source: str = "embedded default"
    servers: dict[str, Endpoint] = field(default_factory=dict)
    health: HealthConfig = field(default_factory=HealthConfig)
    timeouts: Timeouts = field(default_factory=Timeouts)

    def model(self, name: str) -> ModelSpec:
        return get_model(name, self.models)

    def endpoints(self, role: str) -> list[Endpoint]:
        """The servers of ``role``'s route, in the order the config lists them."""
        return [self.servers[name] for name in self.routes[role].servers]

    def can_judge(self, role: str) -> bool:
        """Whether ``role``'s model may move scores: the route's setting, else the
        model's (a remote model we have no table for: true)."""
        route = self.routes[role]
        if route.can_judge is not None:
            return route.can_judge
        if route.remote and route.model not in {**BUILTIN_MODELS, **self.models}:
            return True
        return self.model(route.model).can_judge


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
    _only(data, {"engine", "roles", "models", "servers", "health", "timeouts"}, source)
    engine = data.get("engine", {})
    _only(engine, {"threads", "history_db", "history_size"}, f"{source} [engine]")
    models = {name: spec_from_config(name, tbl) for name, tbl in data.get("models", {}).items()}
    servers = {name: _server(name, tbl, source) for name, tbl in data.get("servers", {}).items()}
    roles = data.get("roles") or {role: {} for role in DEFAULT_ROLES}
    routes = {role: _route(role, tbl, models, servers, source) for role, tbl in roles.items()}
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
        servers=servers,
        health=_table(HealthConfig, data.get("health", {}), f"{source} [health]"),
        timeouts=_table(Timeouts, data.get("timeouts", {}), f"{source} [timeouts]"),
    )


def _route(role: str, tbl: Any, models: dict[str, ModelSpec], servers: dict[str, Endpoint],
           source: str) -> RouteConfig:
    where = f"{source} [roles.{role}]"
    _only(tbl, {f.name for f in fields(RouteConfig)} - {"role"}, where)
    route = RouteConfig(role=role, **tbl)
    if route.mode not in MODES:
        raise ConfigError(f"{where}: mode {route.mode!r} is not one of {', '.join(MODES)}")
    local = route.model in {**BUILTIN_MODELS, **models}
    if not local and (not route.remote or route.embedded_fallback):
        why = ("" if not route.remote else
               " (a remote route's model must be a local one while embedded_fallback is on; "
               "set embedded_fallback = false to name a model only the servers have)")
        raise ConfigError(f"{where}: unknown model {route.model!r}{why}; known: "
                          f"{', '.join(sorted({**BUILTIN_MODELS, **models}))}")
    if not route.remote:
        if route.servers:
            raise ConfigError(f"{where}: `servers` is for the remote backends "
                              f"({', '.join(REMOTE_BACKENDS)}), not {route.backend!r}")
        return route
    if not route.servers:
        raise ConfigError(f"{where}: backend {route.backend!r} needs `servers`, a list of "
                          "[servers.NAME] tables")
    protocol = REMOTE_BACKENDS[route.backend]
    for name in route.servers:
        if name not in servers:
            raise ConfigError(f"{where}: unknown server {name!r}; configured servers are "
                              f"{', '.join(sorted(servers)) or '(none)'}")
        if servers[name].protocol != protocol:
            raise ConfigError(f"{where}: server {name!r} speaks {servers[name].protocol!r}, "
                              f"backend {route.backend!r} needs {protocol!r}")
    pool = [servers[n] for n in route.servers]
    if route.backend == "kvserver" and route.mode == "disaggregated" and (
            not any(e.can_prefill for e in pool) or not any(e.can_decode for e in pool)):
        raise ConfigError(f"{where}: a disaggregated kvserver route needs a server that "
                          "prefills and one that decodes (role prefill, decode or both)")
    return route


_SERVER_KEYS = {"url", "protocol", "role", "token", "token_env", "token_file", "weight",
                "model", "options"}


def _server(name: str, tbl: Any, source: str) -> Endpoint:
    where = f"{source} [servers.{name}]"
    _only(tbl, _SERVER_KEYS, where)
    if "url" not in tbl:
        raise ConfigError(f"{where}: `url` is required (for example http://10.0.0.5:8090)")
    given = [k for k in ("token", "token_env", "token_file") if k in tbl]
    if len(given) > 1:
        raise ConfigError(f"{where}: give one of token, token_env, token_file")
    token = tbl.get("token")
    if "token_env" in tbl:
        token = os.environ.get(tbl["token_env"])
        if not token:
            raise ConfigError(f"{where}: token_env names ${tbl['token_env']}, which is not set")
    if "token_file" in tbl:
        path = Path(tbl["token_file"]).expanduser()
        try:
            token = path.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ConfigError(f"{where}: cannot read token_file {path}: {exc}") from exc
    kw = {k: v for k, v in tbl.items() if k not in ("token_env", "token_file", "token")}
    try:
        return Endpoint(name=name, token=token or None, **kw)
    except TypeError as exc:
        raise ConfigError(f"{where}: {exc}") from exc


def _table(cls: Any, tbl: Any, where: str) -> Any:
    _only(tbl, {f.name for f in fields(cls)}, where)
    try:
        return cls(**tbl)
    except TypeError as exc:
        raise ConfigError(f"{where}: {exc}") from exc


def _only(table: Any, allowed: set[str], where: str) -> None:
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: expected a table")
    unknown = set(table) - allowed
    if unknown:
        raise ConfigError(f"{where}: unknown keys {', '.join(sorted(unknown))}; "
                          f"valid keys are {', '.join(sorted(allowed))}")
