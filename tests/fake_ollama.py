"""A small Ollama server for tests: Ollama's documented HTTP API over real llama.cpp.

    python -m tests.fake_ollama --port 0 [--model PATH] [--name smollm2]

Serves one GGUF (SmolLM2 by default) under ``--name`` (also ``NAME:latest``), one
request at a time, and logs ``fake-ollama listening on http://127.0.0.1:PORT`` to
stderr. What it speaks, as Ollama does (docs/api.md, server/routes.go):

- ``GET /api/version``, ``GET /api/tags``, ``GET /api/ps``;
- ``POST /api/chat`` and ``POST /api/generate``, NDJSON when ``stream`` is true or
  absent, one object when false; ``options.num_predict/temperature/seed/stop``;
  ``format`` as ``"json"`` or a JSON schema (compiled to a grammar by
  ``inference.grammar.schema_to_grammar``); durations in nanoseconds;
- ``/api/generate``: the prompt is ``detokenize(context) + template(system, prompt)``
  (``raw`` skips both), re-prefilled in full (no cache: ``prompt_eval_count`` counts
  every token of it), and the final object's ``context`` is the prompt's token ids
  followed by the reply's; an empty prompt only "loads" (``done_reason: "load"``);
- errors as ``{"error": "..."}``: 404 for an unknown model, 400 for a bad body;
- the test-only model ``FAIL_MODEL`` streams two tokens, then an error line under
  status 200, as Ollama reports a failure after the first byte.
"""

from __future__ import annotations

import argparse
import codecs
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from inference.backends._llama import Context, LoadedModel, Sampler
from inference.errors import InferenceError
from inference.grammar import schema_to_grammar
from inference.prompting import render_chat
from inference.types import ChatMessage

log = logging.getLogger("fake_ollama")

FAIL_MODEL = "fail-midstream"
VERSION = "0.12.0-fake"
N_CTX = 2048


class BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        self.status = status
        super().__init__(message)


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _full(name: str) -> str:
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


class FakeOllama:
    def __init__(self, path: Path, name: str, threads: int = 2) -> None:
        self.path = path
        self.name = _full(name)
        self.model = LoadedModel(path, name)
        self.ctx = Context(self.model, N_CTX, threads=threads)
        self.lock = threading.Lock()
        # Warm up, as a loaded Ollama model is: llama.cpp's first batch and first
        # single-token step each cost far more than later ones.
        warm = self.model.tokenize("warm up " * 12)
        self.ctx.eval(warm)
        self.ctx.eval(warm[:1])
        self.ctx.clear()

    # -- the model -------------------------------------------------------------------
    def check_model(self, body: dict[str, Any]) -> bool:
        """True for the test-only failing model; BadRequest for an unknown one."""
        name = body.get("model")
        if not isinstance(name, str) or not name:
            raise BadRequest(400, "model is required")
        if name == FAIL_MODEL:
            return True
        if _full(name) != self.name:
            raise BadRequest(404, f"model '{name}' not found")
        return False

    def render(self, messages: list[dict[str, Any]]) -> str:
        try:
            msgs = [ChatMessage(m["role"], m.get("content", "")) for m in messages]
        except (KeyError, TypeError, InferenceError) as exc:
            raise BadRequest(400, f"invalid messages: {exc}") from exc
        return render_chat(msgs, self.model.chat_template, self.model.bos_text,
                           self.model.eos_text)

    def detokenize(self, tokens: list[int]) -> str:
        if not all(isinstance(t, int) and 0 <= t < self.model.n_vocab for t in tokens):
            raise BadRequest(400, "context holds an invalid token id")
        return b"".join(self.model.piece(t, special=True) for t in tokens).decode(
            "utf-8", "replace")

    def run(self, prompt: str, body: dict[str, Any], fail: bool) -> Iterator[dict[str, Any]]:
        """Token events {"text"}, then one {"done": ...} event with Ollama's numbers."""
        opts = body.get("options") or {}
        fmt = body.get("format")
        grammar = None
        if fmt == "json":
            grammar = schema_to_grammar('{"type": "object"}')
        elif isinstance(fmt, dict):
            grammar = schema_to_grammar(json.dumps(fmt))
        stops = [s for s in opts.get("stop") or [] if s]
        t_start = time.perf_counter()
        with self.lock:
            tokens = self.model.tokenize(prompt)
            limit = int(opts.get("num_predict") or -1)
            if limit < 0:
                limit = N_CTX - len(tokens)
            if len(tokens) + limit > N_CTX:
                raise BadRequest(400, f"input length ({len(tokens)} tokens) plus num_predict "
                                      f"exceeds the context length ({N_CTX} tokens)")
            self.ctx.clear()
            sampler = Sampler(self.model, float(opts.get("temperature", 0.8)),
                              int(opts.get("seed", 0)), grammar)
            with sampler:
                self.ctx.eval(tokens)
                t_prompt = time.perf_counter()
                out: list[int] = []
                utf8 = codecs.getincrementaldecoder("utf-8")("replace")
                text, sent, reason = "", 0, "length"
                hold = max((len(s) for s in stops), default=1) - 1
                while len(out) < limit:
                    token = sampler.sample(self.ctx)
                    if self.model.is_eog(token):
                        reason = "stop"
                        break
                    out.append(token)
                    text += utf8.decode(self.model.piece(token))
                    hits = [i for s in stops if (i := text.find(s)) >= 0]
                    if hits:
                        text, reason = text[:min(hits)], "stop"
                        break
                    if len(text) - hold > sent:
                        yield {"text": text[sent:len(text) - hold]}
                        sent = len(text) - hold
                    if fail and len(out) >= 2:
                        yield {"error": "fake failure: the runner stopped mid-stream"}
                        return
                    self.ctx.eval([token])
                t_end = time.perf_counter()
        if len(text) > sent:
            yield {"text": text[sent:]}
        yield {"done": {
            "done_reason": reason,
            "total_duration": int((time.perf_counter() - t_start) * 1e9),
            "load_duration": 0,
            "prompt_eval_count": len(tokens),
            "prompt_eval_duration": int((t_prompt - t_start) * 1e9),
            "eval_count": len(out),
            "eval_duration": int((t_end - t_prompt) * 1e9),
        }, "context": tokens + out}

    # -- the API ---------------------------------------------------------------------
    def model_entry(self) -> dict[str, Any]:
        return {"name": self.name, "model": self.name, "size": self.path.stat().st_size,
                "digest": f"{abs(hash(self.path)):064x}"[:64], "modified_at": _now(),
                "details": {"format": "gguf", "family": "llama", "parameter_size": "135M",
                            "quantization_level": "Q4_1"}}

    async def version(self, _: Request) -> Response:
        return JSONResponse({"version": VERSION})

    async def tags(self, _: Request) -> Response:
        return JSONResponse({"models": [self.model_entry()]})

    async def ps(self, _: Request) -> Response:
        expires = (datetime.now(UTC) + timedelta(minutes=5)).isoformat()
        return JSONResponse({"models": [{**self.model_entry(), "expires_at": expires,
                                         "size_vram": 0}]})

    async def chat(self, request: Request) -> Response:
        try:
            body = await _body(request)
            fail = self.check_model(body)
            prompt = self.render(body.get("messages") or [])
        except BadRequest as exc:
            return JSONResponse({"error": str(exc)}, status_code=exc.status)

        def line(ev: dict[str, Any], model: str) -> dict[str, Any]:
            msg = {"role": "assistant", "content": ev.get("text", "")}
            if "done" in ev:
                return {"model": model, "created_at": _now(), "message": msg, "done": True,
                        **ev["done"]}
            return {"model": model, "created_at": _now(), "message": msg, "done": False}

        return await self.respond(prompt, body, fail, line, "message")

    async def generate(self, request: Request) -> Response:
        try:
            body = await _body(request)
            fail = self.check_model(body)
            raw, user = bool(body.get("raw")), str(body.get("prompt") or "")
            if not user:
                return JSONResponse({"model": body["model"], "created_at": _now(),
                                     "response": "", "done": True, "done_reason": "load"})
            if raw:
                prompt = user
            else:
                msgs = ([{"role": "system", "content": body["system"]}]
                        if body.get("system") else [])
                prefix = self.detokenize(list(body.get("context") or []))
                prompt = prefix + self.render([*msgs, {"role": "user", "content": user}])
        except BadRequest as exc:
            return JSONResponse({"error": str(exc)}, status_code=exc.status)

        def line(ev: dict[str, Any], model: str) -> dict[str, Any]:
            out = {"model": model, "created_at": _now(), "response": ev.get("text", ""),
                   "done": "done" in ev}
            if "done" in ev:
                out.update(ev["done"])
                if not raw:
                    out["context"] = ev["context"]
            return out

        return await self.respond(prompt, body, fail, line, "response")

    async def respond(self, prompt: str, body: dict[str, Any], fail: bool, line: Any,
                      field: str) -> Response:
        """Model work runs in worker threads (one at a time, under the lock), never on
        the event loop, so requests queue as Ollama's do and probes stay answered."""
        model = str(body["model"])
        events = self.run(prompt, body, fail)
        if body.get("stream", True) is False:
            try:
                evs = await run_in_threadpool(list, events)
            except (BadRequest, InferenceError) as exc:
                return JSONResponse({"error": str(exc)}, status_code=getattr(exc, "status", 500))
            if evs and "error" in evs[-1]:
                return JSONResponse({"error": evs[-1]["error"]}, status_code=500)
            final = line(evs[-1], model)
            text = "".join(e.get("text", "") for e in evs)
            if field == "message":
                final["message"]["content"] = text
            else:
                final["response"] = text
            return JSONResponse(final)
        try:
            # Errors before the first byte keep their status.
            first = await run_in_threadpool(next, events)
        except (BadRequest, InferenceError) as exc:
            return JSONResponse({"error": str(exc)}, status_code=getattr(exc, "status", 500))

        def stream() -> Iterator[bytes]:
            ev: dict[str, Any] | None = first
            while ev is not None:
                if "error" in ev:
                    yield (json.dumps({"error": ev["error"]}) + "\n").encode()
                    return
                yield (json.dumps(line(ev, model)) + "\n").encode()
                ev = next(events, None)

        return StreamingResponse(stream(), media_type="application/x-ndjson")


async def _body(request: Request) -> dict[str, Any]:
    try:
        body = json.loads(await request.body() or b"{}")
    except json.JSONDecodeError as exc:
        raise BadRequest(400, f"invalid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise BadRequest(400, "the body must be a JSON object")
    return body


def build_app(fake: FakeOllama) -> Starlette:
    return Starlette(routes=[
        Route("/api/version", fake.version), Route("/api/tags", fake.tags),
        Route("/api/ps", fake.ps), Route("/api/chat", fake.chat, methods=["POST"]),
        Route("/api/generate", fake.generate, methods=["POST"]),
    ])


def main(argv: list[str] | None = None) -> None:
    from inference.models import BUILTIN_MODELS

    ap = argparse.ArgumentParser(prog="python -m tests.fake_ollama")
    ap.add_argument("--port", type=int, default=11434)
    ap.add_argument("--model", type=Path, default=None)
    ap.add_argument("--name", default="smollm2")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    path = args.model or BUILTIN_MODELS["smollm2-135m"].resolve_path()
    fake = FakeOllama(path, args.name, args.threads)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    log.info("fake-ollama listening on http://127.0.0.1:%d", sock.getsockname()[1])
    server = uvicorn.Server(uvicorn.Config(build_app(fake), log_level="warning"))
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
