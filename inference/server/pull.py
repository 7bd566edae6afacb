"""The decode side of a KV move: handshake with the prefill server, then pull and check
the stream (``kvwire.read_frames``). Every httpx error is translated here."""

from __future__ import annotations

import contextlib
import json
import logging
import re
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

from ..errors import InvalidRequestError, KVFormatError, KVIncompatibleError
from ..kvidentity import ModelIdentity
from ..kvwire import FORMAT_VERSION, ReceivedKV, read_frames
from .dataplane import SOCKET_BUFFER, TICKET_HEX, TICKET_MAGIC
from .errors import HandleNotFoundError, KVSourceUnreachable

log = logging.getLogger(__name__)

_HANDLE = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
_ERROR_BODY_LIMIT = 64 * 1024
_HANDSHAKE_LIMIT = 64 * 1024  # a handshake reply is ~300 bytes of JSON


@dataclass(frozen=True, slots=True)
class Handshake:
    nbytes: int
    n_tokens: int
    chunk_bytes: int
    seconds: float
    data_port: int | None = None  # the source's KV data plane, if it has one
    ticket: str = ""


@dataclass(frozen=True, slots=True)
class Pulled:
    kv: ReceivedKV
    seconds: float


def check_source(source: str, handle: str) -> str:
    parts = urlsplit(source)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidRequestError(f"source {source!r} is not an http(s) URL with a host")
    if not _HANDLE.match(handle):
        raise InvalidRequestError(f"handle {handle!r} is not a KV handle")
    return source.rstrip("/")


class KVPuller:
    """One pooled httpx client for every pull of this server (thread-safe)."""

    def __init__(self, max_bytes: int, connect_timeout: float, read_timeout: float) -> None:
        self.max_bytes = max_bytes
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._client = httpx.Client(timeout=httpx.Timeout(read_timeout, connect=connect_timeout))

    def close(self) -> None:
        self._client.close()

    def handshake(self, source: str, handle: str, token: str | None,
                  identity: ModelIdentity) -> Handshake:
        url = f"{check_source(source, handle)}/v1/kv/{handle}/handshake"
        t0 = time.perf_counter()
        try:
            with self._client.stream("POST", url, json={"identity": identity.to_dict()},
                                     headers=_auth(token)) as resp:
                raw = _read_at_most(resp, _HANDSHAKE_LIMIT)
        except httpx.HTTPError as exc:
            raise KVSourceUnreachable(f"KV source {source} unreachable: "
                                      f"{type(exc).__name__}: {exc}") from exc
        if resp.status_code != 200:
            _raise_for(resp.status_code, raw[:_ERROR_BODY_LIMIT], source, handle)
        if len(raw) > _HANDSHAKE_LIMIT:
            raise KVSourceUnreachable(f"KV source {source} answered the handshake with more "
                                      f"than {_HANDSHAKE_LIMIT} bytes; not read further")
        try:
            body = json.loads(raw)
            version = body.get("format_version")
            nbytes, n_tokens, chunk = body["nbytes"], body["n_tokens"], body["chunk_bytes"]
        except (ValueError, AttributeError, KeyError, TypeError, RecursionError) as exc:
            raise KVSourceUnreachable(f"KV source {source} answered the handshake with "
                                      f"something else than the protocol's JSON") from exc
        if version != FORMAT_VERSION:
            raise KVFormatError("kv_version", f"KV source {source} speaks KV format "
                                f"{version!r}; this server reads {FORMAT_VERSION}")
        if not all(isinstance(v, int) and v >= 0 for v in (nbytes, n_tokens, chunk)):
            raise KVSourceUnreachable(f"KV source {source}: malformed handshake reply")
        if nbytes > self.max_bytes:
            raise KVFormatError("kv_too_large", f"KV source {source} offers {nbytes} bytes; "
                                f"this server accepts at most {self.max_bytes} (--max-kv-mb)")
        port, ticket = body.get("data_port"), body.get("ticket")
        data = (port, str(ticket)) if isinstance(port, int) and 0 < port < 65536 and isinstance(
            ticket, str) and len(ticket) == TICKET_HEX else (None, "")
        return Handshake(nbytes, n_tokens, chunk, time.perf_counter() - t0, *data)

    def pull(self, source: str, handle: str, token: str | None, identity: ModelIdentity,
             hs: Handshake) -> Pulled:
        """Over the source's KV data port when it offered one and it can be reached,
        else over HTTP."""
        if hs.data_port is not None:
            host = urlsplit(source).hostname or ""
            t0 = time.perf_counter()
            try:
                sock = socket.create_connection((host, hs.data_port),
                                                timeout=self._connect_timeout)
            except OSError as exc:
                log.info("KV data port %s:%d unreachable (%s); pulling over HTTP", host,
                         hs.data_port, exc)
            else:
                with sock:
                    sock.settimeout(self._read_timeout)
                    with contextlib.suppress(OSError):
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SOCKET_BUFFER)
                    try:
                        sock.sendall(TICKET_MAGIC + hs.ticket.encode("ascii"))
                        kv = read_frames(sock, identity, self.max_bytes, announced=hs.nbytes)
                    except OSError as exc:
                        raise KVFormatError("kv_truncated", f"the KV stream from {host}:"
                                            f"{hs.data_port} broke off: {type(exc).__name__}: "
                                            f"{exc}") from exc
                return Pulled(kv, time.perf_counter() - t0)
        return self._pull_http(source, handle, token, identity, hs.nbytes)

    def _pull_http(self, source: str, handle: str, token: str | None, identity: ModelIdentity,
                   announced: int) -> Pulled:
        url = f"{check_source(source, handle)}/v1/kv/{handle}"
        t0 = time.perf_counter()
        try:
            with self._client.stream("GET", url, headers=_auth(token)) as resp:
                if resp.status_code != 200:
                    _raise_for(resp.status_code, _read_at_most(resp, _ERROR_BODY_LIMIT),
                               source, handle)
                kv = read_frames(_cut_is_truncation(resp.iter_bytes(), source), identity,
                                 self.max_bytes, announced=announced)
        except httpx.HTTPError as exc:  # opening the stream failed
            raise KVSourceUnreachable(f"KV source {source} unreachable: "
                                      f"{type(exc).__name__}: {exc}") from exc
        return Pulled(kv, time.perf_counter() - t0)


def _read_at_most(resp: httpx.Response, limit: int) -> bytes:
    """The body, or its first ``limit`` + 1 bytes where it is longer (the rest unread)."""
    body = bytearray()
    for part in resp.iter_bytes():
        body += part
        if len(body) > limit:
            return bytes(body[:limit + 1])
    return bytes(body)


def _cut_is_truncation(chunks: Iterator[bytes], source: str) -> Iterator[bytes]:
    try:
        yield from chunks
    except httpx.HTTPError as exc:
        raise KVFormatError("kv_truncated", f"the KV stream from {source} broke off: "
                            f"{type(exc).__name__}: {exc}") from exc


def _auth(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def _raise_for(status: int, raw: bytes, source: str, handle: str) -> None:
    kind, message = "", raw[:300].decode("utf-8", "replace")
    try:
        err = json.loads(raw)["error"]
        kind, message = str(err.get("type", "")), str(err.get("message", ""))
    except (ValueError, KeyError, TypeError, AttributeError):
        pass
    if kind == "kv_incompatible" or status == 409:
        raise KVIncompatibleError(f"KV source {source} refused the handshake: {message}")
    if kind == "handle_not_found":
        raise HandleNotFoundError(handle, f" on the KV source {source}")
    if kind in KVFormatError.KINDS:
        raise KVFormatError(kind, f"KV source {source}: {message}")
    raise KVSourceUnreachable(f"KV source {source} answered {status}"
                              f"{' ' + kind if kind else ''}: {message}")
