"""KV on a plain TCP connection: the data plane beside the HTTP control plane.

HTTP (uvicorn + h11) moves bytes at a fraction of what the loopback or a LAN can
carry, so a prefill server also listens on a KV port, as vLLM's NIXL side channel
and exo's KV stream do. The authenticated HTTP handshake hands the decode server a
single-use ticket for one handle; the decode server connects, sends ``GKVT`` and
the ticket, and reads the same framed stream (``kvwire``) that ``GET /v1/kv/{h}``
serves. A wrong, used or expired ticket gets the connection closed with nothing
sent. Where the port cannot be reached (a firewall, a proxy), the decode server
pulls over HTTP instead.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator

log = logging.getLogger(__name__)

TICKET_MAGIC = b"GKVT"
TICKET_HEX = 64  # 32 random bytes, hex
_HELLO = len(TICKET_MAGIC) + TICKET_HEX
_SEND_TIMEOUT_S = 120.0
_HELLO_TIMEOUT_S = 5.0  # the ticket comes at once, or the connection is closed
MAX_CONNECTIONS = 64  # beyond it a new connection is closed at once, nothing read
SOCKET_BUFFER = 4 << 20  # bytes in flight per direction: fewer wake-ups per MB


class KVDataServer:
    """Serves ``stream(handle)`` to whoever presents a ticket for that handle."""

    def __init__(self, host: str, port: int, stream: Callable[[str], Iterator[bytes]],
                 ticket_seconds: float) -> None:
        self._stream = stream
        self._ticket_seconds = ticket_seconds
        self._tickets: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()
        self._listener = socket.create_server((host, port), backlog=32)
        self.port = int(self._listener.getsockname()[1])
        self._closed = False
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self._thread = threading.Thread(target=self._accept, name="kv-data", daemon=True)
        self._thread.start()

    def ticket(self, handle: str) -> str:
        """A single-use ticket to pull ``handle`` over the data port."""
        value = secrets.token_hex(TICKET_HEX // 2)
        now = time.monotonic()
        with self._lock:
            for t in [t for t, (_, exp) in self._tickets.items() if exp <= now]:
                del self._tickets[t]
            self._tickets[value] = (handle, now + self._ticket_seconds)
        return value

    def _redeem(self, value: str) -> str | None:
        with self._lock:
            entry = self._tickets.pop(value, None)
        if entry is None or entry[1] <= time.monotonic():
            return None
        return entry[0]

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, peer = self._listener.accept()
            except OSError:
                return  # closed
            if not self._slots.acquire(blocking=False):
                log.warning("KV data connection from %s refused: %d connections open", peer,
                            MAX_CONNECTIONS)
                conn.close()
                continue
            threading.Thread(target=self._serve, args=(conn, peer), name="kv-send",
                             daemon=True).start()

    def _serve(self, conn: socket.socket, peer: object) -> None:
        try:
            self._serve_one(conn, peer)
        finally:
            self._slots.release()

    def _serve_one(self, conn: socket.socket, peer: object) -> None:
        with conn:
            conn.settimeout(_HELLO_TIMEOUT_S)
            with contextlib.suppress(OSError):
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SOCKET_BUFFER)
            try:
                hello = _recv_exact(conn, _HELLO)
            except OSError as exc:
                log.info("KV data connection from %s: no ticket (%s)", peer, exc)
                return
            conn.settimeout(_SEND_TIMEOUT_S)
            handle = None
            if hello is not None and hello.startswith(TICKET_MAGIC):
                handle = self._redeem(hello[len(TICKET_MAGIC):].decode("ascii", "replace"))
            if handle is None:
                log.warning("KV data connection from %s refused: no valid ticket", peer)
                return
            try:
                for piece in self._stream(handle):
                    conn.sendall(piece)
            except Exception as exc:  # the peer sees a cut stream: kv_truncated there
                log.warning("KV %s over the data port to %s broke off: %s: %s", handle, peer,
                            type(exc).__name__, exc)
                return
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._listener.close()


def _recv_exact(conn: socket.socket, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        more = conn.recv(n - len(buf))
        if not more:
            return None
        buf += more
    return bytes(buf)
