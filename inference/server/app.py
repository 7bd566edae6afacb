"""The HTTP face of the server (docs/server-protocol.md): FastAPI routes over a
``ServerEngine``. No model work here: each route parses, calls the engine (in a
thread), and shapes the answer; every error leaves as the protocol's error JSON."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, Request
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse, Response, StreamingResponse

from ..errors import InferenceError, InvalidRequestError
from ..kvidentity import ModelIdentity
from . import openai
from .asgi import Guard, Run
from .engine import ServerEngine
from .errors import ErrorReply, LoadingError, OverloadedError, error_reply
from .prom import CONTENT_TYPE
from .wire import Outcome, as_object, parse_decode, parse_generate, parse_prefill

log = logging.getLogger(__name__)
MAX_BODY_BYTES = 32 * 1024 * 1024
PREFILL_ROLES = ("prefill", "both")
DECODE_ROLES = ("decode", "both")
NDJSON = "application/x-ndjson"


def _line(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode() + b"\n"


def _sse(obj: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


# A request nests a few levels; a JSON schema in response_format a dozen or so. Deeper
# bodies are refused with 400 before anything walks them recursively.
MAX_JSON_DEPTH = 64


async def _json_body(request: Request) -> Any:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise InvalidRequestError(f"request body over {MAX_BODY_BYTES} bytes")
    raw = await request.body()
    if len(raw) > MAX_BODY_BYTES:
        raise InvalidRequestError(f"request body over {MAX_BODY_BYTES} bytes")
    try:
        value = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidRequestError(f"the body is not JSON: {exc}") from exc
    except RecursionError as exc:
        raise InvalidRequestError(f"the body nests deeper than {MAX_JSON_DEPTH} levels") \
            from exc
    if _depth(value) > MAX_JSON_DEPTH:
        raise InvalidRequestError(f"the body nests deeper than {MAX_JSON_DEPTH} levels")
    return value


def _depth(value: Any) -> int:
    """How deep arrays and objects nest in ``value`` (without recursion)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            if level <= MAX_JSON_DEPTH:
                stack.extend((v, level + 1) for v in
                             (item.values() if isinstance(item, dict) else item))
    return deepest


def create_app(engine: ServerEngine, token: str | None) -> FastAPI:
    """The app serving ``engine``; with a ``token``, every route requires it."""
    app = FastAPI(title="grader inference server", docs_url=None, redoc_url=None,
                  openapi_url=None)
    metrics = engine.metrics

    def account(exc: BaseException) -> ErrorReply:
        reply = error_reply(exc)
        if isinstance(exc, OverloadedError):
            metrics.rejected.labels(exc.reason).inc()
        elif isinstance(exc, LoadingError):
            metrics.rejected.labels("loading").inc()
        if reply.type.startswith("kv_"):
            metrics.kv_errors.labels(reply.type).inc()
        if reply.type == "internal":
            log.error("internal error: %s", reply.message, exc_info=exc)
        else:
            log.info("%s (%d): %s", reply.type, reply.status, reply.message)
        return reply

    def reply_json(reply: ErrorReply) -> JSONResponse:
        return JSONResponse(reply.body(), reply.status, headers=reply.headers())

    @app.exception_handler(InferenceError)
    async def inference_error(_request: Request, exc: InferenceError) -> JSONResponse:
        return reply_json(account(exc))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return reply_json(ErrorReply("invalid_request", exc.status_code, str(exc.detail)))

    @app.exception_handler(Exception)
    async def any_error(_request: Request, exc: Exception) -> JSONResponse:
        return reply_json(account(exc))

    async def ndjson(run: Run[Outcome], stream: bool) -> Response:
        if not stream:
            return JSONResponse((await run.result()).done())
        first = await run.next()
        if first[0] == "error":
            raise first[1]

        async def lines() -> AsyncIterator[bytes]:
            kind, value = first
            try:
                while True:
                    if kind == "token":
                        yield _line({"type": "token", "text": value})
                    elif kind == "done":
                        yield _line(value.done())
                        return
                    else:
                        yield _line({"type": "error", **account(value).body()})
                        return
                    kind, value = await run.next()
            finally:
                run.cancel()

        return StreamingResponse(lines(), media_type=NDJSON)

    @app.get("/health")
    async def health() -> JSONResponse:
        status, body = engine.health()
        return JSONResponse(body, status)

    @app.get("/status")
    async def status() -> JSONResponse:
        return JSONResponse(engine.status())

    @app.get("/metrics")
    async def prometheus() -> Response:
        return Response(metrics.exposition(), media_type=CONTENT_TYPE)

    @app.post("/v1/disagg/prefill")
    async def prefill(request: Request) -> JSONResponse:
        engine.check_role("/v1/disagg/prefill", PREFILL_ROLES)
        req = parse_prefill(await _json_body(request))
        reply = await run_in_threadpool(engine.prefill, req)
        return JSONResponse(reply.to_dict())

    @app.post("/v1/kv/{handle}/handshake")
    async def handshake(handle: str, request: Request) -> JSONResponse:
        engine.check_role("/v1/kv/{handle}/handshake", PREFILL_ROLES)
        body = as_object(await _json_body(request), "body")
        peer = ModelIdentity.from_dict(body.get("identity"))
        return JSONResponse(engine.handshake(handle, peer))

    @app.get("/v1/kv/{handle}")
    async def kv_get(handle: str) -> StreamingResponse:
        engine.check_role("/v1/kv/{handle}", PREFILL_ROLES)
        frames = engine.kv_stream(handle)
        return StreamingResponse(frames, media_type="application/octet-stream")

    @app.delete("/v1/kv/{handle}")
    async def kv_delete(handle: str) -> JSONResponse:
        engine.check_role("/v1/kv/{handle}", PREFILL_ROLES)
        engine.delete_kv(handle)
        return JSONResponse({"handle": handle, "deleted": True})

    @app.post("/v1/disagg/decode")
    async def decode(request: Request) -> Response:
        engine.check_role("/v1/disagg/decode", DECODE_ROLES)
        body = parse_decode(await _json_body(request))
        return await ndjson(Run(lambda on_token: engine.decode(body, on_token)), body.stream)

    @app.post("/v1/disagg/generate")
    async def generate(request: Request) -> Response:
        req, stream = parse_generate(await _json_body(request))
        return await ndjson(Run(lambda on_token: engine.generate(req, on_token)), stream)

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> Response:
        call = openai.parse_chat(await _json_body(request))
        run: Run[Outcome] = Run(lambda on_token: engine.generate(call.request, on_token))
        model = engine.spec.name
        if not call.stream:
            return JSONResponse(openai.completion(call, model, await run.result()))
        first = await run.next()
        if first[0] == "error":
            raise first[1]

        async def events() -> AsyncIterator[bytes]:
            kind, value = first
            try:
                yield _sse(openai.chunk(call, model, {"role": "assistant", "content": ""}))
                while True:
                    if kind == "token":
                        yield _sse(openai.chunk(call, model, {"content": value}))
                    elif kind == "done":
                        for last in openai.last_chunks(call, model, value):
                            yield _sse(last)
                        yield b"data: [DONE]\n\n"
                        return
                    else:
                        yield _sse({"type": "error", **account(value).body()})
                        return
                    kind, value = await run.next()
            finally:
                run.cancel()

        return StreamingResponse(events(), media_type="text/event-stream")

    app.add_middleware(Guard, token=token, routes=app.router.routes,
                       count=lambda endpoint, code: metrics.requests.labels(
                           endpoint, str(code)).inc())
    return app
