"""Typed values that cross the inference package boundary.

No raw dicts go in or out of the engine: callers build a ``GenerationRequest``
and get a ``GenerationResult`` whose ``metrics`` are what llama.cpp (or the
remote server) measured, never estimates.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from .errors import InvalidRequestError

Role = str
ChatRole = Literal["system", "user", "assistant"]
FinishReason = Literal["stop", "length", "grammar"]
# "context": Ollama's old pair mode, where the decode server re-prefills from token ids.
Method = Literal["disaggregated", "single", "fallback", "context"]
HealthState = Literal["up", "degraded", "down", "loading"]

_CHAT_ROLES = ("system", "user", "assistant")


@dataclass(frozen=True, slots=True)
class ChatMessage:
    role: ChatRole
    content: str

    def __post_init__(self) -> None:
        if self.role not in _CHAT_ROLES:
            raise InvalidRequestError(
                f"chat message role {self.role!r} is not one of {', '.join(_CHAT_ROLES)}"
            )
        if not isinstance(self.content, str):
            raise InvalidRequestError("chat message content must be a string")


@dataclass(frozen=True, slots=True)
class GenerationRequest:
    """One LLM call. ``role`` names a route in the client (``code``, ``feedback``)."""

    role: Role
    messages: tuple[ChatMessage, ...]
    max_tokens: int | None = None  # None: the route's default
    temperature: float | None = None  # None: the route's default; 0 is greedy
    seed: int = 0
    json_schema: dict[str, Any] | None = None
    stop: tuple[str, ...] = ()
    request_id: str = ""

    def __post_init__(self) -> None:
        # Accept lists from callers but store tuples: the request is immutable.
        object.__setattr__(self, "messages", tuple(self.messages))
        object.__setattr__(self, "stop", tuple(self.stop))
        if not self.messages:
            raise InvalidRequestError("request has no messages")
        if not any(m.content.strip() for m in self.messages):
            raise InvalidRequestError("prompt is empty: every message has blank content")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise InvalidRequestError(f"max_tokens must be >= 1, got {self.max_tokens}")
        if self.temperature is not None and not 0.0 <= self.temperature <= 5.0:
            raise InvalidRequestError(f"temperature must be in [0, 5], got {self.temperature}")
        if any(not s for s in self.stop):
            raise InvalidRequestError("stop strings must be non-empty")

    @classmethod
    def chat(cls, role: Role, system: str | None, user: str, **kwargs: Any) -> GenerationRequest:
        """Shorthand for the common system + user prompt."""
        msgs = [ChatMessage("system", system)] if system else []
        msgs.append(ChatMessage("user", user))
        return cls(role=role, messages=tuple(msgs), **kwargs)

    def with_defaults(self, max_tokens: int, temperature: float) -> GenerationRequest:
        """This request with unset generation settings filled from a route's defaults."""
        return dataclasses.replace(
            self,
            max_tokens=self.max_tokens if self.max_tokens is not None else max_tokens,
            temperature=self.temperature if self.temperature is not None else temperature,
        )

    def to_dict(self) -> dict[str, Any]:
        """The request as JSON-ready data (the servers' wire form)."""
        return {
            "role": self.role,
            "messages": [{"role": m.role, "content": m.content} for m in self.messages],
            "max_tokens": self.max_tokens, "temperature": self.temperature, "seed": self.seed,
            "json_schema": self.json_schema, "stop": list(self.stop),
            "request_id": self.request_id,
        }

    @classmethod
    def from_dict(cls, data: Any) -> GenerationRequest:
        """Parse the wire form; InvalidRequestError names what is wrong."""
        if not isinstance(data, dict):
            raise InvalidRequestError("request must be a JSON object")
        unknown = set(data) - {"role", "messages", "max_tokens", "temperature", "seed",
                               "json_schema", "stop", "request_id"}
        if unknown:
            raise InvalidRequestError(f"request has unknown keys {', '.join(sorted(unknown))}")
        msgs = data.get("messages")
        if not isinstance(msgs, list) or not all(
                isinstance(m, dict) and set(m) == {"role", "content"} for m in msgs):
            raise InvalidRequestError("messages must be a list of {role, content} objects")
        schema = data.get("json_schema")
        if schema is not None and not isinstance(schema, dict):
            raise InvalidRequestError("json_schema must be an object or null")
        try:
            return cls(
                role=str(data.get("role") or "server"),
                messages=tuple(ChatMessage(m["role"], m["content"]) for m in msgs),
                max_tokens=_opt(data, "max_tokens", int),
                temperature=_opt(data, "temperature", float),
                seed=int(data.get("seed") or 0), json_schema=schema,
                stop=tuple(str(s) for s in data.get("stop") or ()),
                request_id=str(data.get("request_id") or ""),
            )
        except (TypeError, ValueError) as exc:
            raise InvalidRequestError(f"request is malformed: {exc}") from exc

    @property
    def schema_text(self) -> str | None:
        """The schema as compact JSON, property order kept (the grammar follows it)."""
        if self.json_schema is None:
            return None
        return json.dumps(self.json_schema, separators=(",", ":"))


def _opt(data: dict[str, Any], key: str, kind: type) -> Any:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidRequestError(f"{key} must be a number, got {type(value).__name__}")
    return kind(value)


@dataclass(slots=True)
class RequestMetrics:
    """What one request cost, as measured at the engine or server boundary.

    Token counts and prefill/decode times come from llama.cpp's own performance
    counters (``llama_perf_context``); wall-clock spans (TTFT, handoff, total)
    are ``time.perf_counter`` differences taken around the real calls.
    """

    request_id: str = ""
    role: str = ""
    route: str = ""
    method: Method = "disaggregated"
    model: str = ""
    prefill_worker: str = ""
    decode_worker: str = ""
    prompt_tokens: int = 0
    cached_tokens: int = 0
    prefill_tokens: int = 0  # tokens actually evaluated (prompt - cached)
    prefill_seconds: float = 0.0
    decode_tokens: int = 0  # tokens generated (the reply)
    decode_evals: int = 0  # single-token evaluations on the decode side (llama.cpp's count)
    decode_seconds: float = 0.0
    decode_batch: int = 0  # most sequences decoded together during the reply (batched decode)
    decode_width: float = 0.0  # sequences per step on average during the reply (0: not batched)
    queue_seconds: float = 0.0
    handoff_seconds: float = 0.0
    kv_bytes: int = 0
    kv_transfer_seconds: float = 0.0  # on the wire between two servers (part of handoff)
    attempts: int = 1  # servers tried; > 1 after a failover
    failover: str = ""  # what failed and what served instead, in words
    route_choice: str = ""  # ship | self | single: the router's decision for a remote pair
    predicted_seconds: float = 0.0  # the router's prediction for that choice
    ttft_seconds: float = 0.0
    total_seconds: float = 0.0
    threads: int = 0
    started_at: float = 0.0  # epoch seconds
    finished_at: float = 0.0
    finish_reason: str = ""
    error: str = ""

    @property
    def prefill_tps(self) -> float:
        return self.prefill_tokens / self.prefill_seconds if self.prefill_seconds > 0 else 0.0

    @property
    def decode_tps(self) -> float:
        return self.decode_evals / self.decode_seconds if self.decode_seconds > 0 else 0.0

    @property
    def tpot_seconds(self) -> float:
        """Time per output token after the first (decode seconds / decode evaluations)."""
        return self.decode_seconds / self.decode_evals if self.decode_evals > 0 else 0.0

    @property
    def ok(self) -> bool:
        return not self.error

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out.update(
            prefill_tps=self.prefill_tps,
            decode_tps=self.decode_tps,
            tpot_seconds=self.tpot_seconds,
        )
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RequestMetrics:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True, slots=True)
class TokenCount:
    """How many tokens a prompt takes on a route (``DisaggregatedClient.count_tokens``):
    ``exact`` when counted with the route's own tokenizer and chat template, otherwise
    an upper estimate (a remote server whose tokenizer we cannot run here)."""

    tokens: int
    exact: bool


@dataclass(frozen=True, slots=True)
class GenerationResult:
    text: str
    finish_reason: FinishReason
    metrics: RequestMetrics
    parsed: Any = None  # the decoded JSON value when the request carried a schema
    tokens: tuple[int, ...] = ()
    # Why the first try failed, when this reply is the client's second (its one retry
    # of a reply that failed its JSON schema); "" for a first try.
    retried_after: str = ""


@dataclass(frozen=True, slots=True)
class KVHandle:
    """The state a prefill hands to a decode: the real KV bytes of one sequence.

    ``first_token`` is sampled on the prefill side because llama.cpp's sequence
    state carries no logits; ``fingerprint`` describes the model and KV layout so
    a decode worker can refuse state it cannot load.
    """

    request: GenerationRequest
    prompt_tokens: tuple[int, ...]
    first_token: int
    state: bytes | memoryview
    fingerprint: str
    metrics: RequestMetrics
    t_start: float  # perf_counter at request start, for TTFT

    @property
    def nbytes(self) -> int:
        return len(self.state)


@dataclass(frozen=True, slots=True)
class WorkerHealth:
    name: str
    role: str
    route: str
    kind: str  # "prefill", "decode" or "generate"
    state: HealthState
    model: str = ""
    detail: str = ""
    busy: bool = False
    queue: int = 0
    last_latency_s: float | None = None
    requests: int = 0
    errors: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
