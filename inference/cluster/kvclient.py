"""The client of our own prefill/decode server (docs/server-protocol.md).

``KVServerTransport`` talks to one server: ``probe`` (/health, /status),
``prefill`` (the prompt's KV stays on that server under a leased handle),
``decode`` (another server pulls that KV straight from the prefill server and
streams the reply) and ``generate`` (one server does both). Bytes of KV never
pass through this process. Errors arrive as the protocol's typed JSON and leave
as ``inference.errors`` types; a connection that breaks under a request (the server
killed with it in flight) is ``BackendUnavailable`` at once, as a refused one is, so
that a decode server is replaced by another that pulls the same KV.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

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
    ContextOverflowError,
    InvalidRequestError,
    KVFormatError,
    KVIncompatibleError,
    KVTransferError,
    SchemaError,
)
from ..prompting import parse_output
from ..types import GenerationRequest, GenerationResult, RequestMetrics
from .http_errors import broken, gone, timed_out

log = logging.getLogger(__name__)

@dataclass(frozen=True, slots=True)
class RemotePrefill:
    """A prompt's KV held by a prefill server under ``handle`` until it is pulled."""

    server: str  # the endpoint's name
    url: str
    handle: str
    first_token: int
    n_tokens: int
    kv_bytes: int
    lease_seconds: float
    identity_hash: str
    metrics: RequestMetrics
    wall_seconds: float  # as this client measured the prefill call


def metrics_from(data: Any) -> RequestMetrics:
    return RequestMetrics.from_dict(data) if isinstance(data, dict) else RequestMetrics()


def _error(resp: httpx.Response, server: str) -> Exception:
    """The typed error for a non-2xx answer of our server."""
    try:
        body = json.loads(resp.read() or b"{}")
        err = body.get("error") or {}
        kind, message = str(err.get("type", "")), str(err.get("message", ""))
    except (ValueError, AttributeError, httpx.HTTPError):
        kind, message = "", resp.text[:200] if resp.is_stream_consumed else ""
    message = f"server {server}: {message or f'HTTP {resp.status_code}'}"
    if resp.status_code == 503:
        retry = resp.headers.get("Retry-After")
        try:
            after = float(retry) if retry else None
        except ValueError:
            after = None
        return BackendUnavailable(message, retry_after=after)
    if kind == "kv_incompatible":
        return KVIncompatibleError(message)
    if kind in KVFormatError.KINDS:
        return KVFormatError(kind, f"{message} ({kind})")
    if kind in ("handle_not_found", "kv_source_unreachable"):
        return KVTransferError(message)
    if kind == "context_overflow":
        return ContextOverflowError(0, 0, 0, message=message)
    if kind == "schema":
        return SchemaError(message)
    if kind == "invalid_request":
        return InvalidRequestError(message)
    if resp.status_code in (401, 403):
        return BackendError(f"{message} (check the server's token)")
    if resp.status_code in (502, 504):
        return BackendUnavailable(message)
    return BackendError(message)


class KVServerTransport(Transport):
    def __init__(self, endpoint: Endpoint, timeouts: Timeouts) -> None:
        super().__init__(endpoint, timeouts)
        t = timeouts
        self._http = httpx.Client(
            base_url=endpoint.url, headers=endpoint.headers,
            timeout=httpx.Timeout(connect=t.connect, read=t.prefill, write=t.prefill,
                                  pool=t.connect),
            limits=httpx.Limits(max_connections=32, max_keepalive_connections=8))

    @property
    def name(self) -> str:
        return self.endpoint.name

    # -- health -----------------------------------------------------------------
    def probe(self) -> Probe:
        t0 = time.perf_counter()
        timeout = httpx.Timeout(self.timeouts.probe, connect=min(self.timeouts.probe,
                                                                 self.timeouts.connect))
        try:
            resp = self._http.get("/health", timeout=timeout)
            if resp.status_code == 503:
                body = _json(resp)
                loading = body.get("status") == "loading"
                return Probe(ok=False, loading=loading, latency_s=time.perf_counter() - t0,
                             error="" if loading else str(body.get("message") or "HTTP 503"))
            if resp.status_code != 200:
                return Probe(ok=False, latency_s=time.perf_counter() - t0,
                             error=f"/health answered HTTP {resp.status_code}")
            latency = time.perf_counter() - t0
            status = self.status(timeout)
            return Probe(ok=True, latency_s=latency, status=status)
        except (httpx.HTTPError, BackendError, ValueError) as exc:
            return Probe(ok=False, latency_s=time.perf_counter() - t0,
                         error=f"{type(exc).__name__}: {exc}",
                         refused=gone(exc, self.endpoint.url, self.timeouts.connect),
                         slow=timed_out(exc))

    def status(self, timeout: httpx.Timeout | None = None) -> ServerStatus:
        resp = self._http.get("/status", timeout=timeout or self.timeouts.probe)
        if resp.status_code != 200:
            raise _error(resp, self.name)
        d = _json(resp)
        ident = d.get("identity") or {}
        return ServerStatus(
            model=str(ident.get("name", "")), identity_hash=str(d.get("identity_hash", "")),
            role=str(d.get("role", "")), version=str(d.get("server_version", "")),
            n_ctx=int(d.get("n_ctx") or 0), slots_total=int(d.get("slots_total") or 0),
            slots_busy=int(d.get("slots_busy") or 0), queue_depth=int(d.get("queue_depth") or 0),
            prefill_tps=float(d.get("prefill_tps") or 0.0),
            decode_tps=float(d.get("decode_tps") or 0.0),
            decode_batch_tps=float(d.get("decode_batch_tps") or 0.0), identity=dict(ident))

    # -- requests ---------------------------------------------------------------
    def prefill(self, request: GenerationRequest) -> RemotePrefill:
        t0 = time.perf_counter()
        with self._translate("prefill"):
            resp = self._http.post("/v1/disagg/prefill", json={"request": request.to_dict()},
                                   timeout=self._timeout(self.timeouts.prefill))
        if resp.status_code != 200:
            raise _error(resp, self.name)
        d = _json(resp)
        try:
            return RemotePrefill(
                server=self.name, url=self.endpoint.url, handle=str(d["handle"]),
                first_token=int(d["first_token"]), n_tokens=int(d["n_tokens"]),
                kv_bytes=int(d["kv_bytes"]), lease_seconds=float(d.get("lease_seconds", 0)),
                identity_hash=str(d.get("identity_hash", "")),
                metrics=metrics_from(d.get("metrics")), wall_seconds=time.perf_counter() - t0)
        except (KeyError, TypeError, ValueError) as exc:
            raise BackendError(f"server {self.name}: prefill answer is malformed: {exc}") from exc

    def decode(self, request: GenerationRequest, pre: RemotePrefill, source: Endpoint,
               on_token: TokenCallback | None = None) -> GenerationResult:
        body = {"request": request.to_dict(), "handle": pre.handle, "source": source.url,
                "source_token": source.token if source.token != self.endpoint.token else None,
                "stream": True}
        # The KV pull happens before the first line: it gets the kv_pull allowance.
        first = self.timeouts.kv_pull + self.timeouts.first_token
        return self._stream("/v1/disagg/decode", body, request, first, on_token)

    def generate(self, request: GenerationRequest,
                 on_token: TokenCallback | None = None) -> GenerationResult:
        body = {"request": request.to_dict(), "stream": True}
        return self._stream("/v1/disagg/generate", body, request,
                            self.timeouts.prefill + self.timeouts.first_token, on_token)

    def release(self, pre: RemotePrefill) -> None:
        """Free a handle nobody will pull (best effort: the lease frees it anyway)."""
        try:
            self._http.delete(f"/v1/kv/{pre.handle}", timeout=self.timeouts.probe)
        except httpx.HTTPError as exc:
            log.debug("server %s: releasing %s failed: %s", self.name, pre.handle, exc)

    def close(self) -> None:
        self._http.close()

    # -- plumbing ---------------------------------------------------------------
    def _timeout(self, read: float) -> httpx.Timeout:
        return httpx.Timeout(connect=self.timeouts.connect, read=read, write=read,
                             pool=self.timeouts.connect)

    @contextmanager
    def _translate(self, what: str) -> Iterator[None]:
        try:
            yield
        except httpx.ConnectError as exc:
            raise BackendUnavailable(f"server {self.name}: cannot connect for {what}: "
                                     f"{exc}") from exc
        except httpx.TimeoutException as exc:
            raise BackendUnavailable(f"server {self.name}: {what} timed out "
                                     f"({type(exc).__name__})") from exc
        except httpx.HTTPError as exc:
            if broken(exc):  # reset or cut off mid-answer: cannot be reached any more
                raise BackendUnavailable(f"server {self.name}: the connection broke during "
                                         f"{what}: {type(exc).__name__}: {exc}") from exc
            raise BackendError(f"server {self.name}: {what} failed: "
                               f"{type(exc).__name__}: {exc}") from exc

    def _stream(self, path: str, body: dict[str, Any], request: GenerationRequest,
                first_s: float, on_token: TokenCallback | None) -> GenerationResult:
        """POST ``body`` and read the NDJSON stream to its ``done`` line."""
        t0 = time.perf_counter()
        with self._translate(path.rsplit("/", 1)[-1]), self._http.stream(
                "POST", path, json=body, timeout=self._timeout(first_s)) as resp:
            if resp.status_code != 200:
                raise _error(resp, self.name)
            with StreamWatchdog(lambda: abort_stream(resp), first_s,
                                self.timeouts.token_gap) as dog:
                try:
                    done = self._read(resp, dog, t0, on_token)
                except httpx.HTTPError as exc:
                    if dog.fired:
                        raise BackendUnavailable(f"server {self.name}: {dog.fired}") from exc
                    raise
            if dog.fired:
                raise BackendUnavailable(f"server {self.name}: {dog.fired}")
        if done is None:
            raise BackendError(f"server {self.name}: the stream ended before its last line")
        line, ttft = done
        return self._result(line, request, t0, ttft)

    def _read(self, resp: httpx.Response, dog: StreamWatchdog, t0: float,
              on_token: TokenCallback | None) -> tuple[dict[str, Any], float] | None:
        ttft = 0.0
        for raw in resp.iter_lines():
            dog.tick()
            if not raw.strip():
                continue
            line = _line(raw, self.name)
            kind = line.get("type")
            if kind == "token":
                if not ttft:
                    ttft = time.perf_counter() - t0
                if on_token is not None:
                    on_token(str(line.get("text", "")))
            elif kind == "done":
                return line, ttft
            elif kind == "error":
                err = line.get("error") or {}
                raise BackendError(f"server {self.name}: {err.get('type', 'error')}: "
                                   f"{err.get('message', '')}")
        return None

    def _result(self, line: dict[str, Any], request: GenerationRequest, t0: float,
                ttft: float) -> GenerationResult:
        m = metrics_from(line.get("metrics"))
        text = str(line.get("text", ""))
        finish = str(line.get("finish_reason") or "stop")
        tokens = tuple(int(t) for t in line.get("tokens") or ())
        kv = line.get("kv") or {}
        if kv:
            m.kv_bytes = int(kv.get("bytes") or m.kv_bytes)
            m.kv_transfer_seconds = float(kv.get("pull_seconds") or m.kv_transfer_seconds)
        m.ttft_seconds = ttft or (time.perf_counter() - t0)
        m.total_seconds = time.perf_counter() - t0
        parsed = None
        if request.json_schema is not None:
            parsed = parse_output(text, request.json_schema, m)
        return GenerationResult(text=text, finish_reason=finish,  # type: ignore[arg-type]
                                metrics=m, parsed=parsed, tokens=tokens)


def _json(resp: httpx.Response) -> dict[str, Any]:
    try:
        data = resp.json()
    except ValueError as exc:
        raise BackendError(f"{resp.request.url}: answer is not JSON") from exc
    if not isinstance(data, dict):
        raise BackendError(f"{resp.request.url}: answer is not a JSON object")
    return data


def _line(raw: str, server: str) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise BackendError(f"server {server}: a stream line is not JSON: {raw[:80]!r}") from exc
    if not isinstance(data, dict):
        raise BackendError(f"server {server}: a stream line is not an object: {raw[:80]!r}")
    return data
