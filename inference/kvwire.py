"""KV state on the wire between two servers: model identity and the framed byte stream.

A sequence's KV state (``llama_state_seq_get_data``) carries no model identity, and
llama.cpp checks only geometry when it loads one. ``ModelIdentity`` is the envelope:
what the GGUF file is (sha256), its shapes, the KV types, the V layout (transposed
unless flash attention is on) and the state format version. Two servers move KV only
when their ``identity_hash`` agree.

The stream (format version 1, see docs/server-protocol.md):

    "GKV1" | u32 LE header length H | H bytes JSON header
    repeat: u32 LE length L (1..C) | L bytes | u32 LE crc32 of those bytes
    u32 LE 0 | u32 LE crc32 of all B bytes

``write_frames`` yields it chunk by chunk; ``read_frames`` reads it from any iterable
of byte chunks, holds at most the announced ``B`` bytes (refused before reading when
over the limit) and raises ``KVFormatError`` / ``KVIncompatibleError``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import socket
import struct
import threading
import zlib
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import InvalidRequestError, KVFormatError, KVIncompatibleError

if TYPE_CHECKING:
    from .backends._llama import LoadedModel

MAGIC = b"GKV1"
FORMAT_VERSION = 1
DEFAULT_CHUNK_BYTES = 1 << 20
MAX_HEADER_BYTES = 32 << 20  # JSON header: identity + token ids (a 1M-token prompt fits)
_U32 = struct.Struct("<I")

# The fields whose equality lets KV move (docs/server-protocol.md, /status).
HASHED_FIELDS = ("gguf_sha256", "n_layer", "n_embd", "kv_type_k", "kv_type_v", "v_trans",
                 "state_version")


@dataclass(frozen=True, slots=True)
class ModelIdentity:
    """What a server serves, as far as its KV state is concerned."""

    name: str
    file: str
    gguf_sha256: str
    size_bytes: int
    n_layer: int
    n_embd: int
    n_vocab: int
    kv_type_k: str
    kv_type_v: str
    flash_attn: bool
    v_trans: bool
    state_version: int
    llama_cpp: str

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> ModelIdentity:
        """Parse an identity from JSON; unknown keys are ignored (a newer peer)."""
        if not isinstance(data, dict):
            raise InvalidRequestError("identity must be a JSON object")
        values: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            if f.name not in data:
                raise InvalidRequestError(f"identity lacks the field {f.name!r}")
            value = data[f.name]
            kind = {"str": str, "int": int, "bool": bool}[str(f.type)]
            if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                raise InvalidRequestError(
                    f"identity field {f.name!r} must be a {kind.__name__}, got {value!r}")
            values[f.name] = value
        return cls(**values)

    @property
    def identity_hash(self) -> str:
        desc = json.dumps({k: getattr(self, k) for k in HASHED_FIELDS}, sort_keys=True)
        return hashlib.sha256(desc.encode()).hexdigest()[:16]

    @property
    def label(self) -> str:
        return f"{self.name} (sha256 {self.gguf_sha256[:12]})"

    def mismatch(self, other: ModelIdentity) -> str | None:
        """None when KV moves between the two; otherwise what differs, naming both."""
        diffs = [f"{k} {getattr(self, k)!r} vs {getattr(other, k)!r}"
                 for k in HASHED_FIELDS if getattr(self, k) != getattr(other, k)]
        if not diffs:
            return None
        if self.gguf_sha256 != other.gguf_sha256:
            diffs[0] = "a different GGUF file"
        return (f"KV of {self.label} cannot load into {other.label}: "
                + "; ".join(diffs))


# -- identity of a loaded model ---------------------------------------------

_sha_cache: dict[tuple[str, int, int], str] = {}
_sha_lock = threading.Lock()

# ggml_type values llama.cpp accepts for the KV cache (ggml.h).
_GGML_TYPES = {0: "f32", 1: "f16", 2: "q4_0", 3: "q4_1", 6: "q5_0", 7: "q5_1", 8: "q8_0",
               20: "iq4_nl", 30: "bf16"}


def file_sha256(path: Path) -> str:
    """sha256 of a file, computed once per (path, size, mtime) in this process."""
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    with _sha_lock:
        cached = _sha_cache.get(key)
    if cached is not None:
        return cached
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(1 << 22):
            digest.update(block)
    value = digest.hexdigest()
    with _sha_lock:
        _sha_cache[key] = value
    return value


def identity_of(model: LoadedModel, flash_attn: bool) -> ModelIdentity:
    """The identity of ``model`` served by contexts with default (f16) KV types."""
    import llama_cpp as C

    params = C.llama_context_default_params()
    return ModelIdentity(
        name=model.name, file=model.path.name, gguf_sha256=file_sha256(model.path),
        size_bytes=model.size_bytes, n_layer=model.n_layer, n_embd=model.n_embd,
        n_vocab=model.n_vocab,
        kv_type_k=_GGML_TYPES.get(int(params.type_k), f"ggml_type_{int(params.type_k)}"),
        kv_type_v=_GGML_TYPES.get(int(params.type_v), f"ggml_type_{int(params.type_v)}"),
        flash_attn=bool(flash_attn), v_trans=not flash_attn,
        state_version=int(C.LLAMA_STATE_SEQ_VERSION),
        llama_cpp=getattr(C, "__version__", "unknown"),
    )


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
    state: bytes | bytearray
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

    state = bytearray(nbytes)
    view = memoryview(state)
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
    return ReceivedKV(tokens=tokens, first_token=first, state=state, nbytes=nbytes,
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
    "ModelIdentity",
    "ReceivedKV",
    "file_sha256",
    "identity_of",
    "read_frames",
    "write_frames",
]
