"""A TCP proxy that makes a link slow, cut or dead on purpose (benchmarks and tests).

    with ThrottlingProxy("127.0.0.1", server_port, rate_bytes_per_s=2e6) as proxy:
        httpx.get(proxy.url + "/health")      # through a 2 MB/s link
        proxy.cut_after(10_000)               # next transfers stop after 10 kB downstream
        proxy.hang()                          # accept, never forward

One token bucket per direction, shared by all connections (a link, not a socket);
"downstream" is target -> client. ``latency_s`` delays the first chunk of a burst in
each direction (a chunk that arrives after the direction was idle that long), which is
how a fixed link latency shows on request/response traffic without capping a stream.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time

log = logging.getLogger(__name__)

CHUNK = 16 * 1024
SLICE_S = 0.05  # longest uninterrupted sleep, so rate changes and close() act quickly


class _Bucket:
    """Token bucket that may go into debt: a sender spends, then waits it off."""

    def __init__(self, rate: float | None) -> None:
        self._lock = threading.Lock()
        self._rate = rate
        self._tokens = 0.0
        self._last = time.monotonic()

    def set_rate(self, rate: float | None) -> None:
        with self._lock:
            self._refill()
            self._rate = rate
            if rate is None:
                self._tokens = 0.0

    def _refill(self) -> None:
        now = time.monotonic()
        if self._rate is not None:
            burst = max(float(CHUNK), self._rate * 0.01)
            self._tokens = min(burst, self._tokens + (now - self._last) * self._rate)
        self._last = now

    def take(self, n: int, stop: threading.Event) -> None:
        with self._lock:
            if self._rate is None:
                return
            self._refill()
            self._tokens -= n
        while True:
            with self._lock:
                self._refill()
                rate, deficit = self._rate, -self._tokens
            if rate is None or deficit <= 0:
                return
            if stop.wait(min(deficit / rate, SLICE_S)):
                return


class _Conn:
    def __init__(self, client: socket.socket) -> None:
        self.client = client
        self.target: socket.socket | None = None
        self.sent_down = 0
        self.lock = threading.Lock()

    def close(self) -> None:
        with self.lock:
            for sock in (self.client, self.target):
                if sock is None:
                    continue
                with contextlib.suppress(OSError):  # already disconnected
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()

    def cut(self) -> None:
        """End downstream cleanly (FIN after the bytes sent) and drop the target."""
        with self.lock, contextlib.suppress(OSError):  # gone already: it is cut either way
            self.client.shutdown(socket.SHUT_WR)
            if self.target is not None:
                self.target.shutdown(socket.SHUT_RDWR)


class ThrottlingProxy:
    """Listens on 127.0.0.1 (any free port) and forwards to ``target_host:target_port``."""

    def __init__(self, target_host: str, target_port: int,
                 rate_bytes_per_s: float | None = None, latency_s: float = 0.0) -> None:
        self.target = (target_host, target_port)
        self.latency_s = latency_s
        self._buckets = {"up": _Bucket(rate_bytes_per_s), "down": _Bucket(rate_bytes_per_s)}
        self._cut_after: int | None = None
        self._flowing = threading.Event()
        self._flowing.set()
        self._stop = threading.Event()
        self._conns: set[_Conn] = set()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self._listener.settimeout(0.1)
        self.port: int = self._listener.getsockname()[1]
        self._acceptor = threading.Thread(target=self._accept_loop, name="proxy-accept",
                                          daemon=True)
        self._acceptor.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def set_rate(self, rate_bytes_per_s: float | None) -> None:
        """Change both directions' rate now (None: unthrottled)."""
        for bucket in self._buckets.values():
            bucket.set_rate(rate_bytes_per_s)

    def cut_after(self, nbytes: int | None) -> None:
        """Close each connection's downstream after ``nbytes`` (None: never)."""
        self._cut_after = nbytes

    def hang(self, on: bool = True) -> None:
        """Accept connections but forward nothing, in either direction, until
        ``hang(False)``."""
        if on:
            self._flowing.clear()
        else:
            self._flowing.set()

    def close(self) -> None:
        self._stop.set()
        self._flowing.set()
        self._acceptor.join()
        self._listener.close()
        with self._lock:
            conns, threads = list(self._conns), list(self._threads)
        for conn in conns:
            conn.close()
        for thread in threads:
            thread.join(timeout=2.0)

    def __enter__(self) -> ThrottlingProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _accept_loop(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            conn = _Conn(client)
            thread = threading.Thread(target=self._serve, args=(conn,), name="proxy-up",
                                      daemon=True)
            with self._lock:
                self._conns.add(conn)
                self._threads = [t for t in self._threads if t.is_alive()] + [thread]
            thread.start()

    def _wait_flowing(self) -> bool:
        while not self._flowing.wait(SLICE_S):
            if self._stop.is_set():
                return False
        return not self._stop.is_set()

    def _serve(self, conn: _Conn) -> None:
        try:
            if not self._wait_flowing():
                return
            try:
                target = socket.create_connection(self.target, timeout=5.0)
            except OSError as exc:
                log.info("proxy: cannot reach %s:%s: %s", *self.target, exc)
                return
            target.settimeout(None)
            with conn.lock:
                conn.target = target
            down = threading.Thread(target=self._pump, args=(conn, target, conn.client, "down"),
                                    name="proxy-down", daemon=True)
            with self._lock:
                self._threads.append(down)
            down.start()
            self._pump(conn, conn.client, target, "up")
            down.join()
        finally:
            conn.close()
            with self._lock:
                self._conns.discard(conn)

    def _pump(self, conn: _Conn, src: socket.socket, dst: socket.socket, direction: str) -> None:
        bucket = self._buckets[direction]
        last = 0.0
        try:
            while True:
                data = src.recv(CHUNK)
                if not data:
                    dst.shutdown(socket.SHUT_WR)
                    return
                if not self._wait_flowing():
                    return
                if self.latency_s and time.monotonic() - last > self.latency_s \
                        and self._stop.wait(self.latency_s):
                    return
                bucket.take(len(data), self._stop)
                limit = self._cut_after if direction == "down" else None
                if limit is not None and conn.sent_down + len(data) >= limit:
                    dst.sendall(data[:max(0, limit - conn.sent_down)])
                    conn.sent_down = limit
                    conn.cut()
                    return
                dst.sendall(data)
                last = time.monotonic()
                if direction == "down":
                    conn.sent_down += len(data)
        except OSError:
            conn.close()  # either side went away: wake the other direction too
