"""KV state on the wire between two servers: model identity and the framed byte stream.

Every stream's header carries the sender's ``ModelIdentity`` (``inference.kvidentity``):
the receiver refuses KV of another model, KV type or layout before reading it.

The stream (format version 1, see docs/server-protocol.md):

    "GKV1" | u32 LE header length H | H bytes JSON header
    repeat: u32 LE length L (1..C) | L bytes | u32 LE crc32 of those bytes
    u32 LE 0 | u32 LE crc32 of all B bytes

``write_frames`` yields it chunk by chunk; ``read_frames`` reads it from any iterable
of byte chunks, holds at most the announced ``B`` bytes (refused before reading when
over the limit) and raises ``KVFormatError`` / ``KVIncompatibleError``.
"""

from __future__ import annotations

import json
import mmap
import socket
import struct
import zlib
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from .errors import InvalidRequestError, KVFormatError, KVIncompatibleError
from .kvidentity import ModelIdentity

MAGIC = b"GKV1"
FORMAT_VERSION = 1
DEFAULT_CHUNK_BYTES = 1 << 20
MAX_HEADER_BYTES = 32 << 20  # JSON header: identity + token ids (a 1M-token prompt fits)
_U32 = struct.Struct("<I")

# -- writing ------------------------------------------------------------------

def frame_header(identity: ModelIdentity, tokens: Iterable[int], first_token: int,
                 nbytes: int, chunk_bytes: int) -> dict[str, Any]:
    return {"format_version": FORMAT_VERSION, "identity": identity.to_dict(),
            "identity_hash": identity.identity_hash, "tokens": list(tokens),
            "first_token": first_token, "nbytes": nbytes, "chunk_bytes": chunk_bytes}


def chunk_checksums(state: bytes | memoryview, chunk_bytes: int = DEFAULT_CHUNK_BYTES
                    ) -> tuple[bytes, ...]:
    """The crc32 of each chunk, as the stream carries them: computed once when a state
    is stored, so that every pull of it only copies bytes."""
    view = memoryview(state).cast("B")
    return tuple(_U32.pack(zlib.crc32(view[i:i + chunk_bytes]))
                 for i in range(0, len(view), chunk_bytes))


def write_frames(identity: ModelIdentity, tokens: Iterable[int], first_token: int,
                 state: bytes | memoryview, chunk_bytes: int = DEFAULT_CHUNK_BYTES,
                 checksums: tuple[bytes, ...] | None = None) -> Iterator[bytes]:
    """The stream for one sequence's state: header, then one item per chunk, then the
    trailer. Never copies the state whole. ``checksums``: from ``chunk_checksums`` with
    the same chunk size, if the caller has them."""
    if chunk_bytes < 1:
        raise ValueError("chunk_bytes must be >= 1")
    view = memoryview(state).cast("B")
    if checksums is not None and len(checksums) != -(-len(view) // chunk_bytes):
        raise ValueError("checksums do not match the state's chunks")
    header = json.dumps(frame_header(identity, tokens, first_token, len(view), chunk_bytes),
                        separators=(",", ":")).encode()
    yield MAGIC + _U32.pack(len(header)) + header
    total = 0
    for i, start in enumerate(range(0, len(view), chunk_bytes)):
        piece = view[start:start + chunk_bytes]
        crc = checksums[i] if checksums is not None else _U32.pack(zlib.crc32(piece))
        total = zlib.crc32(crc, total)  # the trailer checks the chunks' checksums
        yield _U32.pack(len(piece))
        yield piece
        yield crc
    yield _U32.pack(0) + _U32.pack(total)


# -- reading ------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ReceivedKV:
    """A sequence state read off the wire and checked."""

    tokens: tuple[int, ...]
    first_token: int
    state: bytes | bytearray | memoryview
    nbytes: int
    identity: ModelIdentity
    wire_bytes: int  # everything read, framing included
    chunks: int


class _Reader:
    """Exact reads over an iterable of byte chunks of any size, or a socket.

    Each byte is copied once, from the chunk it arrived in (or the socket's buffer)
    into its place in the state: no growing buffer, no slices of slices."""

    def __init__(self, chunks: Iterable[bytes] | socket.socket) -> None:
        self._sock = chunks if isinstance(chunks, socket.socket) else None
        self._it = iter(()) if self._sock is not None else iter(chunks)  # type: ignore[arg-type]
        self._cur = memoryview(b"")
        self.consumed = 0

    def _next(self) -> bool:
        """Make ``_cur`` non-empty; False at the end of the stream."""
        while not self._cur:
            if self._sock is not None:
                more = self._sock.recv(1 << 16)
                if not more:
                    return False
            else:
                try:
                    more = next(self._it)
                except StopIteration:
                    return False
            self._cur = memoryview(more).cast("B")
        return True

    def read(self, n: int, what: str) -> bytes:
        out = bytearray(n)
        self.read_into(memoryview(out), what)
        return bytes(out)

    def read_into(self, target: memoryview, what: str) -> None:
        pos, n = 0, len(target)
        while pos < n:
            if not self._cur and self._sock is not None and n - pos >= 1 << 16:
                got = self._sock.recv_into(target[pos:])  # straight into place
                if not got:
                    self._truncated(what, pos)
                pos += got
                self.consumed += got
                continue
            if not self._next():
                self._truncated(what, pos)
            take = min(len(self._cur), n - pos)
            target[pos:pos + take] = self._cur[:take]
            self._cur = self._cur[take:]
            pos += take
            self.consumed += take

    def _truncated(self, what: str, pos: int) -> None:
        raise KVFormatError("kv_truncated", f"the KV stream ended inside {what} "
                            f"(after {self.consumed} bytes)")

    def u32(self, what: str) -> int:
        return int(_U32.unpack(self.read(4, what))[0])

    def at_end(self) -> bool:
        return not self._next()


def read_frames(chunks: Iterable[bytes] | socket.socket, expected: ModelIdentity,
                max_bytes: int, announced: int | None = None) -> ReceivedKV:
    """Read and check one KV stream. ``expected``: this side's identity; ``announced``:
    the byte count the handshake gave, if any. Raises KVFormatError (kind kv_version,
    kv_corrupt, kv_truncated, kv_too_large) or KVIncompatibleError."""
    r = _Reader(chunks)
    magic = r.read(4, "the magic")
    if magic != MAGIC:
        raise KVFormatError("kv_version", f"not a KV stream of format {MAGIC!r} "
                            f"(magic {magic!r})")
    header_len = r.u32("the header length")
    if header_len > MAX_HEADER_BYTES:
        raise KVFormatError("kv_too_large", f"KV header of {header_len} bytes exceeds "
                            f"{MAX_HEADER_BYTES}")
    header = _parse_header(r.read(header_len, "the header"))
    nbytes, chunk_bytes = header["nbytes"], header["chunk_bytes"]
    if nbytes > max_bytes:
        raise KVFormatError("kv_too_large", f"KV of {nbytes} bytes announced; this server "
                            f"accepts at most {max_bytes}")
    identity = _header_identity(header, expected)
    if announced is not None and nbytes != announced:
        raise KVIncompatibleError(f"the KV stream announces {nbytes} bytes but the "
                                  f"handshake announced {announced}")
    tokens, first = _header_tokens(header, identity)

    # Anonymous pages, committed as the bytes arrive: a source that announces 500 MB
    # and then stalls makes this process hold what it sent, not what it announced.
    view = memoryview(mmap.mmap(-1, nbytes) if nbytes else bytearray())
    got, n_chunks, total_crc = 0, 0, 0
    # Chunks are checked on a second thread while the next one arrives (zlib releases
    # the GIL): the checksums cost no time on the wire's critical path.
    with ThreadPoolExecutor(1, thread_name_prefix="kv-crc") as checker:
        checks: list[tuple[int, int, bytes, Future[int]]] = []
        while True:
            length = r.u32("a chunk length")
            if length == 0:
                break
            if length > chunk_bytes:
                raise KVFormatError("kv_corrupt", f"chunk of {length} bytes exceeds the "
                                    f"announced chunk size {chunk_bytes}")
            if got + length > nbytes:
                raise KVFormatError("kv_too_large", f"the stream sends more than the "
                                    f"announced {nbytes} bytes")
            part = view[got:got + length]
            r.read_into(part, f"chunk {n_chunks}")
            crc = r.read(4, f"the checksum of chunk {n_chunks}")
            checks.append((n_chunks, got, crc, checker.submit(zlib.crc32, part)))
            total_crc = zlib.crc32(crc, total_crc)
            got += length
            n_chunks += 1
        for i, start, crc, future in checks:
            if _U32.pack(future.result()) != crc:
                raise KVFormatError("kv_corrupt", f"checksum mismatch in chunk {i} "
                                    f"(bytes {start}..)")
    trailer = r.u32("the trailer checksum")
    if got != nbytes:
        raise KVFormatError("kv_truncated", f"the stream ended after {got} of the "
                            f"announced {nbytes} bytes")
    if trailer != total_crc:
        raise KVFormatError("kv_corrupt", "the trailer's checksum of the chunk checksums "
                            "does not match")
    if not r.at_end():
        raise KVFormatError("kv_corrupt", "bytes after the KV trailer")
    return ReceivedKV(tokens=tokens, first_token=first, state=view, nbytes=nbytes,
                      identity=identity, wire_bytes=r.consumed, chunks=n_chunks)


def _parse_header(raw: bytes) -> dict[str, Any]:
    try:
        header = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise KVFormatError("kv_corrupt", f"KV header is not JSON: {exc}") from exc
    if not isinstance(header, dict):
        raise KVFormatError("kv_corrupt", "KV header is not a JSON object")
    version = header.get("format_version")
    if version != FORMAT_VERSION:
        raise KVFormatError("kv_version", f"KV format version {version!r}; this server "
                            f"reads version {FORMAT_VERSION}")
    for key in ("nbytes", "chunk_bytes", "first_token"):
        value = header.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise KVFormatError("kv_corrupt", f"KV header field {key!r} is not a "
                                f"non-negative integer: {value!r}")
    if header["chunk_bytes"] < 1:
        raise KVFormatError("kv_corrupt", "KV header announces a chunk size of 0")
    return header


def _header_identity(header: dict[str, Any], expected: ModelIdentity) -> ModelIdentity:
    try:
        identity = ModelIdentity.from_dict(header.get("identity"))
    except InvalidRequestError as exc:
        raise KVFormatError("kv_corrupt", f"KV header identity: {exc}") from exc
    problem = identity.mismatch(expected)
    if problem is not None:
        raise KVIncompatibleError(problem)
    if header.get("identity_hash") != expected.identity_hash:
        raise KVIncompatibleError(
            f"KV header identity_hash {header.get('identity_hash')!r} does not match "
            f"{expected.identity_hash!r} of {expected.label}")
    return identity


def _header_tokens(header: dict[str, Any], identity: ModelIdentity) -> tuple[tuple[int, ...],
                                                                               int]:
    tokens = header.get("tokens")
    n_vocab = identity.n_vocab
    if not isinstance(tokens, list) or not tokens or not all(
            isinstance(t, int) and not isinstance(t, bool) and 0 <= t < n_vocab
            for t in tokens):
        raise KVFormatError("kv_corrupt", "KV header tokens are not a non-empty list of "
                            f"token ids below {n_vocab}")
    first = header["first_token"]
    if first >= n_vocab:
        raise KVFormatError("kv_corrupt", f"first token {first} is not below {n_vocab}")
    return tuple(tokens), first


__all__ = [
    "DEFAULT_CHUNK_BYTES",
    "FORMAT_VERSION",
    "MAGIC",
    "ReceivedKV",
    "chunk_checksums",
    "read_frames",
    "write_frames",
]
