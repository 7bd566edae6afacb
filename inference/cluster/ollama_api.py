"""The client of Ollama servers, through the official ``ollama`` package.

``OllamaTransport.generate`` streams ``/api/chat`` from one server. Ollama reports
its own numbers on the final chunk, in nanoseconds: ``prompt_eval_count`` and
``prompt_eval_duration`` become ``prefill_tokens``/``prefill_seconds``,
``eval_count``/``eval_duration`` become ``decode_tokens``/``decode_seconds``. The
TTFT (first content chunk) and the total are measured here with
``time.perf_counter``. Ollama does not say how many prompt tokens came from its
cache, and its ``prompt_eval_count`` counts them too: ``prefill_tokens`` is that
count and ``cached_tokens`` stays 0 (unknown), so ``prefill_tps`` may overstate the
speed when the cache helped.

``context_pair`` is the old system's pair mode, kept only as a measured
comparison. Ollama's ``context`` is token ids, not KV state: the prefill server
evaluates the prompt (``/api/generate`` with ``system`` + ``prompt``,
``num_predict=1``) and returns the ids of the prompt and its one sampled token;
the decode server gets those ids and must evaluate every one of them again before
it can produce anything. Ollama also appends a new user turn after a context and
treats an empty prompt as "load the model", so the decode request carries a short
``continuation`` turn. The reply is what the decode server produced; the prefill
server's one token stays inside the context. Its metrics say what happened:

- ``method="context"``, ``kv_bytes=0``, ``kv_transfer_seconds=0``: no KV moved;
- ``prompt_tokens``: the prompt as the prefill server counted it;
- ``prefill_tokens``/``prefill_seconds``: the decode server's re-prefill (its
  ``prompt_eval_count``/``prompt_eval_duration``: the context plus the continuation
  turn, so always at least the prompt's tokens);
- ``handoff_seconds``: the whole prefill-server call as measured here (its prompt
  evaluation, one token, the HTTP round trip); that server's own
  ``prompt_eval_duration`` is logged at DEBUG with the request;
- ``decode_*`` from the decode server; ``ttft_seconds`` from the start of the
  pair to the decode server's first token (it includes both prefills).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import httpx
import ollama

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
from ..errors import BackendError, BackendUnavailable, ConfigError
from ..prompting import parse_output
from ..types import GenerationRequest, GenerationResult, RequestMetrics
from .http_errors import gone, status_error, timed_out

log = logging.getLogger(__name__)

CONTINUATION = "Continue."
_NS = 1e-9


class _Slot:
    """The response of one request in flight, for the watchdog to cut."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._response: httpx.Response | None = None
        self._stalled = False

    def attach(self, response: httpx.Response) -> None:
        with self._lock:
            self._response = response
            stalled = self._stalled
        if stalled:
            abort_stream(response)

    def stall(self) -> None:
        with self._lock:
            self._stalled = True
            response = self._response
        if response is not None:
            abort_stream(response)


def _same_model(a: str, b: str) -> bool:
    def full(name: str) -> str:
        return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"
    return bool(a) and bool(b) and full(a) == full(b)


class OllamaTransport(Transport):
    """One Ollama server and one of its models. Thread-safe."""

    def __init__(self, endpoint: Endpoint, timeouts: Timeouts,
                 keep_alive: float | str | None = None) -> None:
        super().__init__(endpoint, timeouts)
        if not endpoint.model:
            raise ConfigError(f"server {endpoint.name!r}: an ollama server needs `model` "
                              "(the name Ollama knows it by, for example qwen2.5:7b)")
        self.keep_alive = keep_alive
        t = timeouts
        self._local = threading.local()
        self._client = ollama.Client(
            host=endpoint.url, headers=endpoint.headers,
            timeout=httpx.Timeout(connect=t.connect, read=max(t.first_token, t.token_gap),
                                  write=t.token_gap, pool=t.first_token),
            event_hooks={"response": [self._on_response]})
        self._probe_http = httpx.Client(base_url=endpoint.url, headers=endpoint.headers)

    @property
    def name(self) -> str:
        return self.endpoint.name

    def close(self) -> None:
        self._client.close()
        self._probe_http.close()

    def _on_response(self, response: httpx.Response) -> None:
        slot = getattr(self._local, "slot", None)
        if slot is not None:
            slot.attach(response)

    # -- health -------------------------------------------------------------------
    def probe(self) -> Probe:
        t0 = time.perf_counter()

        def get(path: str) -> Any:
            left = max(0.05, self.timeouts.probe - (time.perf_counter() - t0))
            resp = self._probe_http.get(path, timeout=httpx.Timeout(
                left, connect=min(left, self.timeouts.connect)))
            if resp.status_code != 200:
                raise BackendError(f"{path} answered HTTP {resp.status_code}")
            return resp.json()

        try:
            version = str(get("/api/version").get("version", ""))
            names = [str(m.get("name") or m.get("model") or "")
                     for m in get("/api/ps").get("models") or []]
            if not any(_same_model(n, self.endpoint.model) for n in names):
                # Not loaded: fine if the server has it (the first request loads it).
                names = [str(m.get("name") or m.get("model") or "")
                         for m in get("/api/tags").get("models") or []]
                if not any(_same_model(n, self.endpoint.model) for n in names):
                    return Probe(ok=False, latency_s=time.perf_counter() - t0,
                                 error=f"model {self.endpoint.model!r} is not on the server "
                                       f"(it has: {', '.join(names) or 'none'})")
            return Probe(ok=True, latency_s=time.perf_counter() - t0,
                         status=ServerStatus(model=self.endpoint.model, version=version))
        except (httpx.HTTPError, BackendError, ValueError, AttributeError) as exc:
            return Probe(ok=False, latency_s=time.perf_counter() - t0,
                         error=f"{type(exc).__name__}: {exc}",
                         refused=gone(exc, self.endpoint.url, self.timeouts.connect),
                         slow=timed_out(exc))

    # -- generation ---------------------------------------------------------------
    def options(self, request: GenerationRequest, num_predict: int | None) -> dict[str, Any]:
        opts: dict[str, Any] = {"seed": request.seed}
        if num_predict is not None:
            opts["num_predict"] = num_predict
        if request.temperature is not None:
            opts["temperature"] = request.temperature
        if request.stop:
            opts["stop"] = list(request.stop)
        return opts

    def generate(self, request: GenerationRequest,
                 on_token: TokenCallback | None = None) -> GenerationResult:
        started_at, t0 = time.time(), time.perf_counter()
        messages = [{"role": m.role, "content": m.content} for m in request.messages]

        def call() -> Iterable[Any]:
            return self._client.chat(
                model=self.endpoint.model, messages=messages, stream=True,
                format=request.json_schema, options=self.options(request, request.max_tokens),
                keep_alive=self.keep_alive)

        text, final, ttft = self.stream(call, lambda p: p.message.content or "", t0, on_token)
        m = _metrics(request, "single", final, ttft, t0, started_at)
        m.prefill_worker = m.decode_worker = self.name
        m.model = str(final.model or self.endpoint.model)
        m.prompt_tokens = m.prefill_tokens = int(final.prompt_eval_count or 0)
        m.prefill_seconds = (final.prompt_eval_duration or 0) * _NS
        return _result(request, text, m)

    def stream(self, call: Callable[[], Iterable[Any]], text_of: Callable[[Any], str],
               t0: float, on_token: TokenCallback | None) -> tuple[str, Any, float]:
        """Run one streamed call: (text, the final chunk, TTFT from ``t0``)."""
        parts: list[str] = []
        ttft, final = 0.0, None
        slot = _Slot()
        self._local.slot = slot
        dog = StreamWatchdog(slot.stall, max(0.001, self.timeouts.first_token
                                             - (time.perf_counter() - t0)),
                             self.timeouts.token_gap)
        try:
            with dog:
                for part in self._guard(call, dog):
                    piece = text_of(part)
                    if piece:
                        if not parts:
                            ttft = time.perf_counter() - t0
                        parts.append(piece)
                        dog.tick()
                        if on_token is not None:
                            on_token(piece)
                    if part.done:
                        final = part
        finally:
            self._local.slot = None
        if dog.fired:
            raise self._stall(bool(parts))
        if final is None:
            raise BackendError(f"server {self.name}: the stream ended before its final "
                               f"chunk after {len(''.join(parts))} characters")
        return "".join(parts), final, ttft

    def _guard(self, call: Callable[[], Iterable[Any]],
               dog: StreamWatchdog | None) -> Iterator[Any]:
        """The call's chunks, its library errors translated (ours pass through)."""
        got = False
        try:
            for part in call():
                got = True
                yield part
        except ollama.ResponseError as exc:
            if exc.status_code < 0:  # an error line after the first byte
                raise BackendError(f"server {self.name}: error in the stream: "
                                   f"{exc.error}") from exc
            raise status_error(self.name, exc.status_code, str(exc.error),
                               max_tokens=None) from exc
        except (httpx.TimeoutException, httpx.TransportError, ConnectionError) as exc:
            if (dog is not None and dog.fired) or isinstance(exc, httpx.ReadTimeout):
                raise self._stall(got) from exc
            if not got:
                raise BackendUnavailable(f"server {self.name} is unreachable: "
                                         f"{type(exc).__name__}: {exc}") from exc
            raise BackendError(f"server {self.name}: the stream was cut: "
                               f"{type(exc).__name__}: {exc}") from exc
        except (ValueError, TypeError, AttributeError) as exc:  # not JSON, or not a chunk
            raise BackendError(f"server {self.name}: garbage in the stream: {exc}") from exc

    def _stall(self, started: bool) -> BackendUnavailable:
        if started:
            return BackendUnavailable(f"server {self.name}: no token within "
                                      f"{self.timeouts.token_gap:g} s")
        return BackendUnavailable(f"server {self.name}: no first token within "
                                  f"{self.timeouts.first_token:g} s")

    def prefill_context(self, request: GenerationRequest) -> Any:
        """/api/generate with num_predict=1: the GenerateResponse carrying ``context``."""
        system = "\n\n".join(m.content for m in request.messages if m.role == "system")
        prompt = "\n\n".join(m.content for m in request.messages if m.role != "system")

        def call() -> Iterable[Any]:
            return [self._client.generate(
                model=self.endpoint.model, prompt=prompt, system=system or None, raw=False,
                stream=False, options=self.options(request, 1), keep_alive=self.keep_alive)]

        final = None
        for part in self._guard(call, None):  # one answer: the read timeout bounds it
            final = part
        if final is None or not final.context:
            raise BackendError(f"server {self.name}: /api/generate returned no context "
                               "(a raw-mode model, or an Ollama without the context field)")
        return final

    def from_context(self, request: GenerationRequest, context: list[int], continuation: str,
                     t0: float, on_token: TokenCallback | None) -> tuple[str, Any, float]:
        """Stream /api/generate after ``context`` (token ids this server re-prefills)."""
        def call() -> Iterable[Any]:
            return self._client.generate(
                model=self.endpoint.model, prompt=continuation, context=context, raw=False,
                stream=True, format=request.json_schema,
                options=self.options(request, request.max_tokens), keep_alive=self.keep_alive)

        return self.stream(call, lambda p: p.response or "", t0, on_token)


def context_pair(prefill: OllamaTransport, decode: OllamaTransport,
                 request: GenerationRequest, on_token: TokenCallback | None = None,
                 continuation: str = CONTINUATION) -> GenerationResult:
    """Ollama's pair mode: token ids, not KV, cross over; the decode server re-prefills."""
    if not _same_model(prefill.endpoint.model, decode.endpoint.model):
        raise ConfigError(f"ollama pair {prefill.name} -> {decode.name}: token ids mean the "
                          f"same only on the same model, not {prefill.endpoint.model!r} and "
                          f"{decode.endpoint.model!r}")
    started_at, t0 = time.time(), time.perf_counter()
    pre = prefill.prefill_context(request)
    handoff = time.perf_counter() - t0

    text, final, ttft = decode.from_context(request, list(pre.context), continuation, t0,
                                            on_token)
    m = _metrics(request, "context", final, ttft, t0, started_at)
    m.prefill_worker, m.decode_worker = prefill.name, decode.name
    m.model = str(final.model or decode.endpoint.model)
    m.prompt_tokens = int(pre.prompt_eval_count or 0)
    m.prefill_tokens = int(final.prompt_eval_count or 0)  # the decode side's re-prefill
    m.prefill_seconds = (final.prompt_eval_duration or 0) * _NS
    m.handoff_seconds = handoff
    log.debug("context pair %s -> %s: %d context ids; prefill server %d tokens in %.3f s, "
              "decode server re-prefilled %d tokens in %.3f s", prefill.name, decode.name,
              len(pre.context), m.prompt_tokens, (pre.prompt_eval_duration or 0) * _NS,
              m.prefill_tokens, m.prefill_seconds)
    return _result(request, text, m)


def _metrics(request: GenerationRequest, method: Any, final: Any, ttft: float, t0: float,
             started_at: float) -> RequestMetrics:
    finish = "length" if final.done_reason == "length" else "stop"
    # Ollama's prompt_eval_count includes tokens its cache held: cached is unknown (0).
    return RequestMetrics(
        request_id=request.request_id, role=request.role, method=method,
        decode_tokens=int(final.eval_count or 0), decode_evals=int(final.eval_count or 0),
        decode_seconds=(final.eval_duration or 0) * _NS, ttft_seconds=ttft,
        total_seconds=time.perf_counter() - t0, started_at=started_at,
        finished_at=time.time(), finish_reason=finish)


def _result(request: GenerationRequest, text: str, m: RequestMetrics) -> GenerationResult:
    parsed = None
    if request.json_schema is not None:
        parsed = parse_output(text, request.json_schema, m)
    return GenerationResult(text=text, finish_reason=m.finish_reason,  # type: ignore[arg-type]
                            metrics=m, parsed=parsed)
