"""The OpenAI-compatible ``/v1/chat/completions``: request parsing and response shapes,
with llama-server's ``timings`` next to ``usage``."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidRequestError
from ..types import ChatMessage, GenerationRequest, RequestMetrics
from .wire import Outcome, as_object, get_bool, get_float, get_int, make_request

_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}


@dataclass(frozen=True, slots=True)
class ChatCall:
    request: GenerationRequest
    stream: bool
    include_usage: bool
    id: str = field(default_factory=lambda: "chatcmpl-" + secrets.token_hex(12))
    created: int = field(default_factory=lambda: int(time.time()))


def _content(value: Any, i: int) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content parts: only text is served
        texts = []
        for part in value:
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(
                    part.get("text"), str):
                raise InvalidRequestError(f"messages[{i}]: only text content parts are "
                                          "supported")
            texts.append(part["text"])
        return "".join(texts)
    raise InvalidRequestError(f"messages[{i}].content must be a string or text parts")


def _messages(value: Any) -> list[ChatMessage]:
    if not isinstance(value, list) or not value:
        raise InvalidRequestError("messages must be a non-empty list")
    out = []
    for i, msg in enumerate(value):
        msg = as_object(msg, f"messages[{i}]")
        role = _ROLES.get(msg.get("role"))  # type: ignore[arg-type]
        if role is None:
            raise InvalidRequestError(f"messages[{i}].role {msg.get('role')!r} is not one of "
                                      f"{', '.join(_ROLES)}")
        out.append(ChatMessage(role, _content(msg.get("content"), i)))  # type: ignore[arg-type]
    return out


def _schema(fmt: Any) -> dict[str, Any] | None:
    if fmt is None:
        return None
    fmt = as_object(fmt, "response_format")
    kind = fmt.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "object"}
    if kind == "json_schema":
        schema = as_object(fmt.get("json_schema"), "response_format.json_schema").get("schema")
        return as_object(schema, "response_format.json_schema.schema")
    raise InvalidRequestError(f"response_format.type {kind!r} is not one of text, "
                              "json_object, json_schema")


def parse_chat(body: Any) -> ChatCall:
    body = as_object(body, "body")
    if body.get("n", 1) != 1:
        raise InvalidRequestError("only n = 1 is supported")
    max_tokens = get_int(body, "max_completion_tokens", None)
    if max_tokens is None:
        max_tokens = get_int(body, "max_tokens", None)
    options = as_object(body.get("stream_options") or {}, "stream_options")
    request = make_request(
        _messages(body.get("messages")), role="chat", max_tokens=max_tokens,
        temperature=get_float(body, "temperature"), seed=get_int(body, "seed", 0) or 0,
        json_schema=_schema(body.get("response_format")), stop=body.get("stop"),
        request_id=None)
    return ChatCall(request, get_bool(body, "stream", False),
                    get_bool(options, "include_usage", False))


def usage(m: RequestMetrics) -> dict[str, Any]:
    return {"prompt_tokens": m.prompt_tokens, "completion_tokens": m.decode_tokens,
            "total_tokens": m.prompt_tokens + m.decode_tokens,
            "prompt_tokens_details": {"cached_tokens": m.cached_tokens}}


def timings(m: RequestMetrics) -> dict[str, Any]:
    prompt_ms, predicted_ms = m.prefill_seconds * 1000, m.decode_seconds * 1000
    return {
        "cache_n": m.cached_tokens, "prompt_n": m.prefill_tokens, "prompt_ms": prompt_ms,
        "prompt_per_token_ms": prompt_ms / m.prefill_tokens if m.prefill_tokens else 0.0,
        "prompt_per_second": m.prefill_tps,
        "predicted_n": m.decode_tokens, "predicted_ms": predicted_ms,
        "predicted_per_token_ms": predicted_ms / m.decode_evals if m.decode_evals else 0.0,
        "predicted_per_second": m.decode_tps,
    }


def _finish(reason: str) -> str:
    return "length" if reason == "length" else "stop"


def completion(call: ChatCall, model: str, out: Outcome) -> dict[str, Any]:
    return {
        "id": call.id, "object": "chat.completion", "created": call.created, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": out.text},
                     "finish_reason": _finish(out.finish_reason)}],
        "usage": usage(out.metrics), "timings": timings(out.metrics),
    }


def chunk(call: ChatCall, model: str, delta: dict[str, Any],
          finish: str | None = None) -> dict[str, Any]:
    return {"id": call.id, "object": "chat.completion.chunk", "created": call.created,
            "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def last_chunks(call: ChatCall, model: str, out: Outcome) -> list[dict[str, Any]]:
    """The finishing chunk (with ``timings``, as llama-server sends it) and, when asked
    for, the usage chunk with empty ``choices``."""
    final = chunk(call, model, {}, _finish(out.finish_reason))
    final["timings"] = timings(out.metrics)
    chunks = [final]
    if call.include_usage:
        chunks.append({"id": call.id, "object": "chat.completion.chunk",
                       "created": call.created, "model": model, "choices": [],
                       "usage": usage(out.metrics)})
    return chunks
