"""JSON bodies of the disagg endpoints <-> typed values (docs/server-protocol.md).

Every malformed body is an ``InvalidRequestError`` (400 ``invalid_request``); a
schema that does not compile is a ``SchemaError``, found before any model work.
"""

from __future__ import annotations

import dataclasses
import secrets
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidRequestError
from ..grammar import check_schema
from ..types import ChatMessage, GenerationRequest, RequestMetrics


@dataclass(frozen=True, slots=True)
class KVTimings:
    bytes: int
    handshake_seconds: float
    pull_seconds: float
    load_seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {"bytes": self.bytes, "handshake_seconds": self.handshake_seconds,
                "pull_seconds": self.pull_seconds, "load_seconds": self.load_seconds}


@dataclass(frozen=True, slots=True)
class Outcome:
    """A finished decode or generate. ``output_error``: the reply failed the request's
    schema (the text is still the model's, for the client to judge)."""

    text: str
    finish_reason: str
    tokens: tuple[int, ...]
    metrics: RequestMetrics
    kv: KVTimings | None = None
    output_error: str = ""

    def done(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "done", "text": self.text, "finish_reason": self.finish_reason,
            "tokens": list(self.tokens), "metrics": self.metrics.to_dict(),
            "kv": self.kv.to_dict() if self.kv is not None else None,
        }
        if self.output_error:
            out["output_error"] = self.output_error
        return out


@dataclass(frozen=True, slots=True)
class PrefillReply:
    handle: str
    first_token: int
    n_tokens: int
    kv_bytes: int
    lease_seconds: float
    identity_hash: str
    metrics: RequestMetrics

    def to_dict(self) -> dict[str, Any]:
        return {"handle": self.handle, "first_token": self.first_token,
                "n_tokens": self.n_tokens, "kv_bytes": self.kv_bytes,
                "lease_seconds": self.lease_seconds, "identity_hash": self.identity_hash,
                "metrics": self.metrics.to_dict()}


@dataclass(frozen=True, slots=True)
class DecodeBody:
    request: GenerationRequest
    handle: str
    source: str
    source_token: str | None
    stream: bool


def as_object(data: Any, what: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise InvalidRequestError(f"{what} must be a JSON object")
    return data


def get_int(data: dict[str, Any], key: str, default: int | None) -> int | None:
    value = data.get(key, default)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidRequestError(f"{key} must be an integer, got {value!r}")
    return value


def get_float(data: dict[str, Any], key: str) -> float | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise InvalidRequestError(f"{key} must be a number, got {value!r}")
    return float(value)


def get_bool(data: dict[str, Any], key: str, default: bool) -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise InvalidRequestError(f"{key} must be true or false, got {value!r}")
    return value


def get_str(data: dict[str, Any], key: str, default: str | None = None) -> str | None:
    value = data.get(key, default)
    if value is not None and not isinstance(value, str):
        raise InvalidRequestError(f"{key} must be a string, got {value!r}")
    return value


def parse_stop(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise InvalidRequestError("stop must be a string or a list of strings")
    return tuple(value)


def make_request(messages: list[ChatMessage], *, role: str, max_tokens: int | None,
                 temperature: float | None, seed: int, json_schema: Any, stop: Any,
                 request_id: str | None) -> GenerationRequest:
    if json_schema is not None:
        if not isinstance(json_schema, dict):
            raise InvalidRequestError("json_schema must be a JSON object or null")
        check_schema(json_schema)
    return GenerationRequest(
        role=role, messages=tuple(messages), max_tokens=max_tokens, temperature=temperature,
        seed=seed, json_schema=json_schema, stop=parse_stop(stop),
        request_id=request_id or secrets.token_hex(4))


def parse_request(data: Any) -> GenerationRequest:
    """The protocol's request object (``GenerationRequest.from_dict``, the one wire form),
    its schema compiled now so a bad one fails before any model work."""
    request = GenerationRequest.from_dict(data)
    if request.json_schema is not None:
        check_schema(request.json_schema)
    if not request.request_id:
        request = dataclasses.replace(request, request_id=secrets.token_hex(4))
    return request


def parse_prefill(body: Any) -> GenerationRequest:
    return parse_request(as_object(body, "body").get("request"))


def parse_generate(body: Any) -> tuple[GenerationRequest, bool]:
    body = as_object(body, "body")
    return parse_request(body.get("request")), get_bool(body, "stream", True)


def parse_decode(body: Any) -> DecodeBody:
    body = as_object(body, "body")
    handle, source = get_str(body, "handle"), get_str(body, "source")
    if not handle or not source:
        raise InvalidRequestError("a decode names the KV `handle` and its `source` server")
    return DecodeBody(parse_request(body.get("request")), handle, source,
                      get_str(body, "source_token"), get_bool(body, "stream", True))
