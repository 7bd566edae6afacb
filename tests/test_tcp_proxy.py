"""The throttling proxy in front of real servers: stdlib `http.server` and a byte sink,
each a real process on 127.0.0.1."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench.tcp_proxy import ThrottlingProxy

BIG = 512 * 1024

SINK = r"""
import socket, sys
srv = socket.create_server(("127.0.0.1", 0))
print(srv.getsockname()[1], flush=True)
while True:
    conn, _ = srv.accept()
    total = 0
    while chunk := conn.recv(65536):
        total += len(chunk)
    conn.sendall(str(total).encode())
    conn.close()
"""


def _start(args: list[str], pattern: str) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    match = re.search(pattern, line)
    if match is None:
        proc.kill()
        proc.wait()
        raise RuntimeError(f"server did not start: {line!r}")
    return proc, int(match.group(1))


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.kill()
    proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


@pytest.fixture(scope="module")
def http_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    root: Path = tmp_path_factory.mktemp("www")
    (root / "big.bin").write_bytes(bytes(range(256)) * (BIG // 256))
    (root / "small.txt").write_text("hello through the proxy\n")
    proc, port = _start([sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1",
                         "--directory", str(root)], r"port (\d+)")
    try:
        yield port
    finally:
        _stop(proc)


@pytest.fixture
def sink_port() -> Iterator[int]:
    proc, port = _start([sys.executable, "-u", "-c", SINK], r"(\d+)")
    try:
        yield port
    finally:
        _stop(proc)


def _get(url: str) -> tuple[bytes, float]:
    started = time.perf_counter()
    with httpx.Client(trust_env=False, timeout=30) as client:
        response = client.get(url)
    response.raise_for_status()
    return response.content, time.perf_counter() - started


def _raw_get(port: int, path: str, timeout: float = 10.0) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.sendall(f"GET {path} HTTP/1.0\r\nHost: x\r\n\r\n".encode())
    return sock


def _read_all(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def test_forwards_both_ways_unthrottled(http_port: int) -> None:
    with ThrottlingProxy("127.0.0.1", http_port) as proxy:
        assert proxy.url == f"http://127.0.0.1:{proxy.port}"
        body, _ = _get(proxy.url + "/small.txt")
        assert body == b"hello through the proxy\n"
        big, _ = _get(proxy.url + "/big.bin")
        assert big == bytes(range(256)) * (BIG // 256)


def test_throttles_downstream_near_the_set_rate(http_port: int) -> None:
    rate = 2e6
    with ThrottlingProxy("127.0.0.1", http_port, rate_bytes_per_s=rate) as proxy:
        body, seconds = _get(proxy.url + "/big.bin")
    assert len(body) == BIG
    measured = BIG / seconds
    # A throttle can only slow things down; the bound above is the one that matters.
    assert measured <= rate * 2.5, f"{measured / 1e6:.2f} MB/s through a 2 MB/s proxy"
    assert measured >= rate / 3, f"{measured / 1e6:.2f} MB/s: far below the set 2 MB/s"


def test_set_rate_applies_at_runtime(http_port: int) -> None:
    with ThrottlingProxy("127.0.0.1", http_port) as proxy:
        _, fast = _get(proxy.url + "/big.bin")
        proxy.set_rate(1e6)
        _, slow = _get(proxy.url + "/big.bin")
        proxy.set_rate(None)
        _, fast_again = _get(proxy.url + "/big.bin")
    assert slow >= 0.3, f"512 KB at 1 MB/s took {slow:.3f} s"
    assert slow > 2 * max(fast, fast_again)


def test_throttles_upstream(sink_port: int) -> None:
    payload = b"x" * (300 * 1024)
    with ThrottlingProxy("127.0.0.1", sink_port, rate_bytes_per_s=1e6) as proxy:
        started = time.perf_counter()
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as sock:
            sock.sendall(payload)
            sock.shutdown(socket.SHUT_WR)
            answer = _read_all(sock)
        seconds = time.perf_counter() - started
    assert int(answer) == len(payload)
    assert seconds >= 0.3 / 2.5, f"300 KB upstream at 1 MB/s took only {seconds:.3f} s"


def test_cut_after_truncates_the_download(http_port: int) -> None:
    with ThrottlingProxy("127.0.0.1", http_port) as proxy:
        proxy.cut_after(10_000)
        with _raw_get(proxy.port, "/big.bin") as sock:
            received = _read_all(sock)
        proxy.cut_after(None)
        with _raw_get(proxy.port, "/big.bin") as sock:
            whole = _read_all(sock)
    assert len(received) == 10_000
    assert received.startswith(b"HTTP/1.0 200")
    assert len(whole) > BIG


def test_hang_accepts_but_forwards_nothing_until_released(http_port: int) -> None:
    with ThrottlingProxy("127.0.0.1", http_port) as proxy:
        proxy.hang()
        with _raw_get(proxy.port, "/small.txt", timeout=0.5) as sock:
            with pytest.raises(TimeoutError):
                sock.recv(100)
            proxy.hang(False)
            sock.settimeout(10)
            answer = _read_all(sock)
    assert answer.startswith(b"HTTP/1.0 200")
    assert answer.endswith(b"hello through the proxy\n")


def test_latency_delays_each_exchange(http_port: int) -> None:
    with ThrottlingProxy("127.0.0.1", http_port) as plain:
        _get(plain.url + "/small.txt")
        _, base = _get(plain.url + "/small.txt")
    with ThrottlingProxy("127.0.0.1", http_port, latency_s=0.2) as slow:
        _, delayed = _get(slow.url + "/small.txt")
    assert delayed >= 0.35, f"request + response through a 0.2 s link took {delayed:.3f} s"
    assert delayed > base + 0.3


def test_close_ends_open_connections(http_port: int) -> None:
    proxy = ThrottlingProxy("127.0.0.1", http_port)
    proxy.hang()
    sock = _raw_get(proxy.port, "/small.txt", timeout=5)
    try:
        started = time.perf_counter()
        proxy.close()
        assert time.perf_counter() - started < 3
        assert sock.recv(100) == b""
    finally:
        sock.close()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", proxy.port), timeout=1).close()
