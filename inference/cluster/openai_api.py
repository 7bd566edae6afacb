"""The client of OpenAI-compatible servers: vLLM, SGLang, Dynamo, llama-server,
``python -m llama_cpp.server`` and our own server's ``/v1/chat/completions``.

``OpenAITransport`` streams ``/v1/chat/completions`` (SSE) from one server and
measures at this boundary, the way vLLM's serving benchmark does: TTFT is the
first content chunk (``time.perf_counter``), token counts come from ``usage``,
and TPOT is ``(latency - TTFT) / (output_tokens - 1)``. Where the server sends
llama-server's ``timings`` (``prompt_n``, ``prompt_ms``, ``predicted_n``,
``predicted_ms``, ``cache_n``) those are used for the prefill and decode figures.
Otherwise the figures are client-side estimates and say so by what they hold:
``prefill_seconds`` is the TTFT (it includes the network and any queueing) and
``decode_seconds`` is latency - TTFT over ``decode_evals = output_tokens - 1``.
A server that streams no ``usage`` at all (llama_cpp.server 0.3.36 ignores
``stream_options``) leaves the token counts at 0: unknown, not guessed from the
number of chunks (a chunk may hold several tokens), so no speed is derived from them.

JSON schema requests: ``response_format`` names the form the server understands.
``json_schema`` (the default) sends OpenAI's ``{"type": "json_schema",
"json_schema": {"name", "schema", "strict"}}`` (vLLM, SGLang, llama-server, ours).
``json_object`` sends ``{"type": "json_object", "schema": ...}``, the only form
``llama_cpp.server`` accepts (its request type is ``Literal["text", "json_object"]``
and ``llama_chat_format._grammar_for_response_format`` compiles ``schema`` to a
grammar; ``json_schema`` there is a 500). ``none`` sends no constraint and relies
on the prompt. The reply is validated with ``parse_output`` in every case.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

from ..endpoint import (
    Endpoint,
    Probe,
    ServerStatus,
    StreamWatchdog,
    Timeouts,
    TokenCallback,
    Transport,
    abort_stream,
)
from ..errors import (
    BackendError,
    BackendUnavailable,
    ConfigError,
    InferenceError,
)
from ..prompting import parse_output
from ..types import GenerationRequest, GenerationResult, RequestMetrics
from .http_errors import (
    error_fields,
    gone,
    is_overflow,
    overflow_error,
    retry_after,
    status_error,
    timed_out,
)

log = logging.getLogger(__name__)

ResponseFormat = Literal["json_schema", "json_object", "none"]
RESPONSE_FORMATS = ("json_schema", "json_object", "none")

@dataclass(slots=True)
class _Stream:
    """What one SSE stream has said so far."""

    parts: list[str] = field(default_factory=list)
    model: str = ""
    finish: str = ""
    usage: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, Any] = field(default_factory=dict)
    t_first: float = 0.0
    done: bool = False


class OpenAITransport(Transport):
    """One OpenAI-compatible server. Thread-safe (one ``httpx.Client``)."""

    def __init__(self, endpoint: Endpoint, timeouts: Timeouts,
                 response_format: ResponseFormat = "json_schema") -> None:
        super().__init__(endpoint, timeouts)
        if response_format not in RESPONSE_FORMATS:
            raise ConfigError(f"server {endpoint.name!r}: response_format {response_format!r} "
                             f"is not one of {', '.join(RESPONSE_FORMATS)}")
        self.response_format = response_format
        t = timeouts
        # Reads wait at most first_token (before any byte) or the gap; the watchdog
        # enforces both precisely once the response has begun.
        self._http = httpx.Client(
            base_url=endpoint.url, headers=endpoint.headers,
            timeout=httpx.Timeout(connect=t.connect, read=max(t.first_token, t.token_gap),
                                  write=t.token_gap, pool=t.first_token))
        self._has_health: bool | None = None  # learnt on the first probe

    @property
    def name(self) -> str:
        return self.endpoint.name

    def close(self) -> None:
        self._http.close()

    # -- health -------------------------------------------------------------------
    def probe(self) -> Probe:
        t0 = time.perf_counter()

        def timeout() -> httpx.Timeout:
            left = max(0.05, self.timeouts.probe - (time.perf_counter() - t0))
            return httpx.Timeout(left, connect=min(left, self.timeouts.connect))

        try:
            if self._has_health is not False:
                resp = self._http.get("/health", timeout=timeout())
                if resp.status_code == 404:
                    self._has_health = False
                else:
                    self._has_health = True
                    if resp.status_code != 200:
                        message, _, _ = error_fields(_json_or_text(resp))
                        loading = resp.status_code == 503 and "loading" in message.lower()
                        return Probe(ok=False, loading=loading,
                                     latency_s=time.perf_counter() - t0,
                                     error="loading" if loading else
                                     f"/health answered HTTP {resp.status_code}: {message}")
            resp = self._http.get("/v1/models", timeout=timeout())
            latency = time.perf_counter() - t0
            if resp.status_code == 200:
                return Probe(ok=True, latency_s=latency,
                             status=ServerStatus(model=self._served_model(resp.json())))
            if self._has_health:  # ours answers /health but has no model list
                return Probe(ok=True, latency_s=latency, status=ServerStatus())
            return Probe(ok=False, latency_s=latency,
                         error=f"/v1/models answered HTTP {resp.status_code}")
        except (httpx.HTTPError, ValueError) as exc:
            return Probe(ok=False, latency_s=time.perf_counter() - t0,
                         error=f"{type(exc).__name__}: {exc}",
                         refused=gone(exc, self.endpoint.url, self.timeouts.connect),
                         slow=timed_out(exc))

    def _served_model(self, payload: Any) -> str:
        data = payload.get("data") if isinstance(payload, dict) else None
        ids = [str(d.get("id", "")) for d in data or [] if isinstance(d, dict)]
        if self.endpoint.model in ids:
            return self.endpoint.model
        return ids[0] if ids else ""

    # -- generation ---------------------------------------------------------------
    def request_body(self, request: GenerationRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.endpoint.model or "default",
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "seed": request.seed,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.max_tokens is not None:
            body["max_tokens"] = request.max_tokens
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.stop:
            body["stop"] = list(request.stop)
        schema = request.json_schema
        if schema is not None and self.response_format == "json_schema":
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "reply", "schema": schema, "strict": True}}
        elif schema is not None and self.response_format == "json_object":
            body["response_format"] = {"type": "json_object", "schema": schema}
        return body

    def generate(self, request: GenerationRequest,
                 on_token: TokenCallback | None = None) -> GenerationResult:
        started_at, t0 = time.time(), time.perf_counter()
        st = _Stream()
        dog: StreamWatchdog | None = None
        try:
            with self._http.stream("POST", "/v1/chat/completions",
                                   json=self.request_body(request)) as resp:
                if resp.status_code != 200:
                    raise self._status_error(resp, request)
                first = max(0.001, self.timeouts.first_token - (time.perf_counter() - t0))
                with StreamWatchdog(lambda: abort_stream(resp), first,
                                    self.timeouts.token_gap) as dog:
                    self._read(resp, st, dog, t0, request, on_token)
        except (httpx.TimeoutException, httpx.TransportError) as exc:
            raise self._transport_error(exc, st, dog) from exc
        if dog is not None and dog.fired:
            raise self._stall(st)
        if not st.done:
            raise BackendError(f"server {self.name}: the stream ended before [DONE] "
                               f"after {len(''.join(st.parts))} characters")
        return self._result(request, st, t0, started_at)

    def _read(self, resp: httpx.Response, st: _Stream, dog: StreamWatchdog, t0: float,
              request: GenerationRequest, on_token: TokenCallback | None) -> None:
        event = ""
        for raw in resp.iter_lines():
            line = raw.strip()
            if not line:
                event = ""
                continue
            if line.startswith(":"):  # SSE comment: keep-alive ping
                continue
            key, _, value = line.partition(":")
            value = value.strip()
            if key == "event":
                event = value
                continue
            if key == "error" or event == "error":
                raise self._payload_error(_loads(value, self.name), request)
            if key != "data" or event not in ("", "message"):
                continue
            if value == "[DONE]":
                st.done = True
                return
            self._chunk(_loads(value, self.name), st, dog, t0, request, on_token)

    def _chunk(self, obj: Any, st: _Stream, dog: StreamWatchdog, t0: float,
               request: GenerationRequest, on_token: TokenCallback | None) -> None:
        if not isinstance(obj, dict):
            raise BackendError(f"server {self.name}: stream chunk is not a JSON object")
        if obj.get("error"):
            raise self._payload_error(obj, request)
        st.model = str(obj.get("model") or st.model)
        if isinstance(obj.get("usage"), dict):
            st.usage = obj["usage"]
        if isinstance(obj.get("timings"), dict):
            st.timings = obj["timings"]
        for choice in obj.get("choices") or ():  # [] or null in the usage chunk
            delta = choice.get("delta") or {}
            content = delta.get("content")
            if content:
                if not st.parts:
                    st.t_first = time.perf_counter() - t0
                st.parts.append(content)
                dog.tick()
                if on_token is not None:
                    on_token(content)
            elif delta.get("reasoning_content"):
                dog.tick()  # a token all the same, though not the reply's
            if choice.get("finish_reason"):
                st.finish = str(choice["finish_reason"])

    def _result(self, request: GenerationRequest, st: _Stream, t0: float,
                started_at: float) -> GenerationResult:
        total = time.perf_counter() - t0
        text = "".join(st.parts)
        finish = "length" if st.finish == "length" else "stop"
        m = RequestMetrics(
            request_id=request.request_id, role=request.role, method="single",
            model=st.model or self.endpoint.model, prefill_worker=self.name,
            decode_worker=self.name, ttft_seconds=st.t_first, total_seconds=total,
            started_at=started_at, finished_at=time.time(), finish_reason=finish)
        u, tm = st.usage, st.timings
        details = u.get("prompt_tokens_details") or {}
        m.prompt_tokens = int(u.get("prompt_tokens") or 0)
        m.cached_tokens = int(details.get("cached_tokens") or 0)
        out = int(u.get("completion_tokens") or 0)  # 0: the server did not say
        if "prompt_n" in tm and "predicted_n" in tm:  # llama-server measured these
            m.cached_tokens = int(tm.get("cache_n") or m.cached_tokens)
            m.prefill_tokens = int(tm["prompt_n"])
            m.prefill_seconds = float(tm.get("prompt_ms") or 0.0) / 1000.0
            m.decode_tokens = out or int(tm["predicted_n"])
            m.decode_evals = int(tm["predicted_n"])
            m.decode_seconds = float(tm.get("predicted_ms") or 0.0) / 1000.0
            m.prompt_tokens = m.prompt_tokens or m.prefill_tokens + m.cached_tokens
        else:  # client-side estimates: see the module docstring
            m.prefill_tokens = max(0, m.prompt_tokens - m.cached_tokens)
            m.prefill_seconds = st.t_first
            m.decode_tokens = out
            m.decode_evals = max(0, out - 1)
            m.decode_seconds = max(0.0, total - st.t_first) if out > 1 else 0.0
        log.debug("server %s: %s prompt=%d out=%d ttft=%.3fs total=%.3fs timings=%s",
                  self.name, request.request_id, m.prompt_tokens, m.decode_tokens,
                  m.ttft_seconds, total, "server" if tm else "client")
        parsed = None
        if request.json_schema is not None:
            parsed = parse_output(text, request.json_schema, m)
        return GenerationResult(text=text, finish_reason=finish,  # type: ignore[arg-type]
                                metrics=m, parsed=parsed)

    # -- errors -------------------------------------------------------------------
    def _status_error(self, resp: httpx.Response, request: GenerationRequest) -> InferenceError:
        resp.read()
        message, kind, err = error_fields(_json_or_text(resp))
        return status_error(self.name, resp.status_code, message, kind=kind,
                            after=retry_after(resp.headers.get("Retry-After")),
                            max_tokens=request.max_tokens, body=err)

    def _payload_error(self, payload: Any, request: GenerationRequest) -> InferenceError:
        """An error the server wrote into the stream after it had begun."""
        message, kind, err = error_fields(payload)
        if is_overflow(message, kind):
            return overflow_error(f"server {self.name}: {message}", message,
                                  request.max_tokens, err)
        code = err.get("code")
        if isinstance(code, int) and code >= 400:
            return status_error(self.name, code, message, kind=kind,
                                max_tokens=request.max_tokens, body=err)
        return BackendError(f"server {self.name}: error in the stream: {message}")

    def _stall(self, st: _Stream) -> BackendUnavailable:
        if st.parts:
            return BackendUnavailable(f"server {self.name}: no token within "
                                      f"{self.timeouts.token_gap:g} s")
        return BackendUnavailable(f"server {self.name}: no first token within "
                                  f"{self.timeouts.first_token:g} s")

    def _transport_error(self, exc: Exception, st: _Stream,
                         dog: StreamWatchdog | None) -> InferenceError:
        if (dog is not None and dog.fired) or isinstance(exc, httpx.ReadTimeout):
            return self._stall(st)
        if dog is None:  # nothing came back: the server cannot be reached or dropped us
            return BackendUnavailable(f"server {self.name} is unreachable: "
                                      f"{type(exc).__name__}: {exc}")
        return BackendError(f"server {self.name}: the stream was cut: "
                            f"{type(exc).__name__}: {exc}")


def _loads(value: str, server: str) -> Any:
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise BackendError(f"server {server}: the stream is not JSON: {value[:80]!r}") from exc


def _json_or_text(resp: httpx.Response) -> Any:
    try:
        return resp.json()
    except ValueError:
        return resp.text[:500]
