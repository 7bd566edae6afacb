"""Which model a KV state belongs to: the envelope that decides whether KV may move.

A sequence's KV state (``llama_state_seq_get_data``) carries no model identity, and
llama.cpp checks only geometry when it loads one. ``ModelIdentity`` says what the
GGUF file is (sha256), its shapes, the KV types, the V layout (transposed unless flash
attention is on) and the state format version. Two servers move KV only when their
``identity_hash`` agree; ``mismatch`` names what differs. ``identity_of`` reads it
from a loaded model; ``inference.kvwire`` carries it in every stream's header.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import InvalidRequestError

if TYPE_CHECKING:
    from .backends._llama import LoadedModel

# The fields whose equality lets KV move (docs/server-protocol.md, /status).
HASHED_FIELDS = ("gguf_sha256", "n_layer", "n_embd", "kv_type_k", "kv_type_v", "v_trans",
                 "state_version")


@dataclass(frozen=True, slots=True)
class ModelIdentity:
    """What a server serves, as far as its KV state is concerned."""

    name: str
    file: str
    gguf_sha256: str
    size_bytes: int
    n_layer: int
    n_embd: int
    n_vocab: int
    kv_type_k: str
    kv_type_v: str
    flash_attn: bool
    v_trans: bool
    state_version: int
    llama_cpp: str

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> ModelIdentity:
        """Parse an identity from JSON; unknown keys are ignored (a newer peer)."""
        if not isinstance(data, dict):
            raise InvalidRequestError("identity must be a JSON object")
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            if f.name not in data:
                raise InvalidRequestError(f"identity lacks the field {f.name!r}")
            value = data[f.name]
            kind = {"str": str, "int": int, "bool": bool}[str(f.type)]
            if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                raise InvalidRequestError(
                    f"identity field {f.name!r} must be a {kind.__name__}, got {value!r}")
            values[f.name] = value
        return cls(**values)

    @property
    def identity_hash(self) -> str:
        desc = json.dumps({k: getattr(self, k) for k in HASHED_FIELDS}, sort_keys=True)
        return hashlib.sha256(desc.encode()).hexdigest()[:16]

    @property
    def label(self) -> str:
        return f"{self.name} (sha256 {self.gguf_sha256[:12]})"

    def mismatch(self, other: ModelIdentity) -> str | None:
        """None when KV moves between the two; otherwise what differs, naming both."""
        diffs = [f"{k} {getattr(self, k)!r} vs {getattr(other, k)!r}"
                 for k in HASHED_FIELDS if getattr(self, k) != getattr(other, k)]
        if not diffs:
            return None
        if self.gguf_sha256 != other.gguf_sha256:
            diffs[0] = "a different GGUF file"
        return (f"KV of {self.label} cannot load into {other.label}: "
                + "; ".join(diffs))


_sha_cache: dict[tuple[str, int, int], str] = {}
_sha_lock = threading.Lock()

# ggml_type values llama.cpp accepts for the KV cache (ggml.h).
_GGML_TYPES = {0: "f32", 1: "f16", 2: "q4_0", 3: "q4_1", 6: "q5_0", 7: "q5_1", 8: "q8_0",
               20: "iq4_nl", 30: "bf16"}


def file_sha256(path: Path) -> str:
    """sha256 of a file, computed once per (path, size, mtime) in this process."""
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    with _sha_lock:
        cached = _sha_cache.get(key)
    if cached is not None:
        return cached
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(1 << 22):
            digest.update(block)
    value = digest.hexdigest()
    with _sha_lock:
        _sha_cache[key] = value
    return value


def identity_of(model: LoadedModel, flash_attn: bool) -> ModelIdentity:
    """The identity of ``model`` served by contexts with default (f16) KV types."""
    import llama_cpp as C

    params = C.llama_context_default_params()
    return ModelIdentity(
        name=model.name, file=model.path.name, gguf_sha256=file_sha256(model.path),
        size_bytes=model.size_bytes, n_layer=model.n_layer, n_embd=model.n_embd,
        n_vocab=model.n_vocab,
        kv_type_k=_GGML_TYPES.get(int(params.type_k), f"ggml_type_{int(params.type_k)}"),
        kv_type_v=_GGML_TYPES.get(int(params.type_v), f"ggml_type_{int(params.type_v)}"),
        flash_attn=bool(flash_attn), v_trans=not flash_attn,
        state_version=int(C.LLAMA_STATE_SEQ_VERSION),
        llama_cpp=getattr(C, "__version__", "unknown"),
    )


__all__ = ["HASHED_FIELDS", "ModelIdentity", "file_sha256", "identity_of"]
