"""The server's settings as one validated value object, with the defaults of the
command line (docs/server-protocol.md)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import ConfigError
from ..kvwire import DEFAULT_CHUNK_BYTES
from ..models import BUILTIN_MODELS, DEFAULT_MODEL, ModelSpec
from ..prompting import PLAIN_TEMPLATE, check_template

SERVER_ROLES = ("prefill", "decode", "both")
SERVER_VERSION = "1"
MiB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class ServerOptions:
    model: str = DEFAULT_MODEL  # a built-in model name or a path to a GGUF file
    role: str = "both"
    slots: int = 1
    queue: int = 8
    n_ctx: int | None = None  # None: the model's
    threads: int | None = None  # None: every core
    flash_attn: bool = False
    lease_seconds: float = 30.0
    kv_store_mb: int = 1024
    max_kv_mb: int = 512
    # KV pulled and held by decode requests at once (each reserves its announced size)
    kv_memory_mb: int = 1024
    prefix_cache_mb: int = 256
    chunk_bytes: int = DEFAULT_CHUNK_BYTES
    n_batch: int = 256
    # replies decoded together in one context (continuous batching); 1: each in its slot
    decode_batch: int = 4
    kv_host: str = "127.0.0.1"  # where the KV data port listens (the HTTP host)
    kv_port: int = 0  # the KV data port: 0 any free port, -1 none (KV over HTTP only)
    pull_connect_timeout: float = 5.0
    pull_read_timeout: float = 15.0  # a source silent this long mid-stream has stalled
    # the chat template, where the GGUF has none or the operator overrides it: "plain"
    # (the messages' text, one after another), a Jinja template, or a file holding one
    chat_template: str | None = None

    def __post_init__(self) -> None:
        if self.role not in SERVER_ROLES:
            raise ConfigError(f"role {self.role!r} is not one of {', '.join(SERVER_ROLES)}")
        for name, low in (("slots", 1), ("queue", 0), ("kv_store_mb", 1), ("max_kv_mb", 1),
                          ("prefix_cache_mb", 0), ("chunk_bytes", 1), ("n_batch", 1),
                          ("decode_batch", 1)):
            if getattr(self, name) < low:
                raise ConfigError(f"{name} must be >= {low}, got {getattr(self, name)}")
        if self.n_ctx is not None and self.n_ctx < 16:
            raise ConfigError(f"n_ctx must be >= 16, got {self.n_ctx}")
        if self.threads is not None and self.threads < 1:
            raise ConfigError(f"threads must be >= 1, got {self.threads}")
        if self.kv_memory_mb < self.max_kv_mb:
            raise ConfigError(f"kv_memory_mb ({self.kv_memory_mb}) must be >= max_kv_mb "
                              f"({self.max_kv_mb}): a transfer of the largest size must fit")
        if not self.lease_seconds > 0:
            raise ConfigError("lease_seconds must be > 0")

    @property
    def can_prefill(self) -> bool:
        return self.role in ("prefill", "both")

    @property
    def can_decode(self) -> bool:
        return self.role in ("decode", "both")

    @property
    def kv_store_bytes(self) -> int:
        return self.kv_store_mb * MiB

    @property
    def max_kv_bytes(self) -> int:
        return self.max_kv_mb * MiB

    @property
    def kv_memory_bytes(self) -> int:
        return self.kv_memory_mb * MiB

    def model_spec(self) -> ModelSpec:
        """The built-in model of that name, or a spec for a GGUF path; with the chat
        template given (``--chat-template``) in place of the file's."""
        if self.model in BUILTIN_MODELS:
            spec = BUILTIN_MODELS[self.model]
        else:
            path = Path(self.model).expanduser()
            if not path.is_file():
                raise ConfigError(f"--model {self.model!r} is neither a built-in model "
                                  f"({', '.join(sorted(BUILTIN_MODELS))}) nor a file")
            spec = ModelSpec(name=path.stem, path=str(path))
        template = self._chat_template()
        return spec if template is None else replace(spec, chat_template=template)

    def _chat_template(self) -> str | None:
        given = self.chat_template
        if given is None or not given.strip():
            return None
        if "{" not in given and given != PLAIN_TEMPLATE:
            path = Path(given).expanduser()
            if not path.is_file():
                raise ConfigError(f"--chat-template {given!r} is not 'plain', a Jinja "
                                  "template, or a file")
            try:
                given = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise ConfigError(f"--chat-template {path}: cannot read it: {exc}") from exc
        check_template(given)  # a template that does not compile is refused here
        return given
