"""ASGI plumbing: bearer auth + one log line and one counter per request, and the
bridge from a blocking engine call (in its own thread) to a streamed response."""

from __future__ import annotations

import asyncio
import hmac
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from starlette.responses import JSONResponse
from starlette.routing import Match, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .errors import ErrorReply

log = logging.getLogger("inference.server")
T = TypeVar("T")
TokenCallback = Callable[[str], None]


class Guard:
    """Refuses requests without the bearer token (when one is set), then counts and logs
    every request by its route template and status."""

    def __init__(self, app: ASGIApp, token: str | None, routes: list[Any],
                 count: Callable[[str, int], None]) -> None:
        self.app = app
        self._expected = token.encode() if token else None
        self._routes = routes
        self._count = count

    def _endpoint(self, scope: Scope) -> str:
        for route in self._routes:
            if isinstance(route, Route) and route.matches(scope)[0] is Match.FULL:
                return route.path
        return "other"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        status = 500

        async def send_and_note(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            if self._expected is not None and not self._authorized(scope):
                reply = ErrorReply("unauthorized", 401, "missing or wrong bearer token")
                response = JSONResponse(reply.body(), reply.status,
                                        headers={"WWW-Authenticate": "Bearer"})
                await response(scope, receive, send_and_note)
            else:
                await self.app(scope, receive, send_and_note)
        finally:
            endpoint = self._endpoint(scope)
            self._count(endpoint, status)
            log.info("%s %s %d %.3fs", scope["method"], scope["path"], status,
                     time.perf_counter() - t0)

    def _authorized(self, scope: Scope) -> bool:
        """``Authorization: Bearer TOKEN``; the scheme's name in any case (RFC 6750 and
        RFC 9110: schemes are case-insensitive), the token exactly."""
        assert self._expected is not None
        got = b""
        for name, value in scope["headers"]:
            if name == b"authorization":
                got = value
                break
        scheme, _, credentials = got.strip().partition(b" ")
        if scheme.lower() != b"bearer":
            credentials = b""
        return hmac.compare_digest(credentials.strip(), self._expected)


class Cancelled(Exception):
    """Raised inside a token callback when the client has gone: stops the decode."""


class Run(Generic[T]):
    """Runs ``work(on_token)`` in a thread of its own; its tokens, its result or its error
    arrive as events ``("token", str) | ("done", T) | ("error", BaseException)``."""

    def __init__(self, work: Callable[[TokenCallback], T]) -> None:
        self._loop = asyncio.get_running_loop()
        self._events: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self._cancel = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(work,), name="request",
                                        daemon=True)
        self._thread.start()

    def _put(self, event: tuple[str, Any]) -> None:
        try:
            self._loop.call_soon_threadsafe(self._events.put_nowait, event)
        except RuntimeError:  # the event loop has closed: the server is shutting down
            self._cancel.set()

    def _on_token(self, text: str) -> None:
        if self._cancel.is_set():
            raise Cancelled("the client went away")
        self._put(("token", text))

    def _run(self, work: Callable[[TokenCallback], T]) -> None:
        try:
            result = work(self._on_token)
        except BaseException as exc:  # handed to the request's coroutine, never dropped
            self._put(("error", exc))
            return
        self._put(("done", result))

    async def next(self) -> tuple[str, Any]:
        return await self._events.get()

    async def result(self) -> T:
        """Wait for the end, skipping tokens; raise the work's error."""
        while True:
            kind, value = await self.next()
            if kind == "done":
                return value  # type: ignore[no-any-return]
            if kind == "error":
                raise value

    def cancel(self) -> None:
        self._cancel.set()
