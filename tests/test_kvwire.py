"""The KV wire format: round trips and one typed error for each way a stream is bad."""

from __future__ import annotations

import dataclasses
import json
import os
import struct
import zlib
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inference.errors import InvalidRequestError, KVFormatError, KVIncompatibleError
from inference.kvidentity import ModelIdentity
from inference.kvwire import MAGIC, read_frames, write_frames

SMOL = ModelIdentity(
    name="smollm2-135m", file="SmolLM2-135M-Instruct.Q4_1.gguf", gguf_sha256="ab" * 32,
    size_bytes=98_362_432, n_layer=30, n_embd=576, n_vocab=49152, kv_type_k="f16",
    kv_type_v="f16", flash_attn=False, v_trans=True, state_version=3, llama_cpp="0.3.36")
GEMMA = dataclasses.replace(SMOL, name="gemma3-270m", file="gemma-3-270m-q4_k_m.gguf",
                            gguf_sha256="cd" * 32, n_layer=18, n_embd=640, n_vocab=262144)
STATE = os.urandom(10_000)
TOKENS = [1, 2, 3, 400, 49151]
CHUNK = 1024


def frames(state: bytes = STATE, identity: ModelIdentity = SMOL, chunk: int = CHUNK) -> bytes:
    return b"".join(write_frames(identity, TOKENS, 7, state, chunk))


def pieces(data: bytes, size: int) -> Iterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i:i + size]


def header_end(data: bytes) -> int:
    return 8 + struct.unpack("<I", data[4:8])[0]


def kind_of(data: bytes | Iterator[bytes], max_bytes: int = 1 << 20, **kw: object) -> str:
    chunks = data if not isinstance(data, bytes) else pieces(data, 999)
    with pytest.raises(KVFormatError) as info:
        read_frames(chunks, SMOL, max_bytes, **kw)  # type: ignore[arg-type]
    return info.value.kind


def test_round_trip_in_odd_pieces() -> None:
    data = frames()
    for size in (1, 7, 1000, len(data)):
        got = read_frames(pieces(data, size), SMOL, max_bytes=1 << 20, announced=len(STATE))
        assert got.state == STATE
        assert got.tokens == tuple(TOKENS)
        assert got.first_token == 7
        assert got.nbytes == len(STATE)
        assert got.chunks == -(-len(STATE) // CHUNK)
        assert got.wire_bytes == len(data)
        assert got.identity == SMOL


@settings(max_examples=40, deadline=None)
@given(state=st.binary(min_size=1, max_size=5000), chunk=st.integers(1, 700),
       split=st.integers(1, 900))
def test_any_state_any_chunking_round_trips(state: bytes, chunk: int, split: int) -> None:
    data = frames(state, chunk=chunk)
    assert read_frames(pieces(data, split), SMOL, max_bytes=len(state)).state == state


def test_a_flipped_byte_in_a_chunk_is_corrupt() -> None:
    data = bytearray(frames())
    data[header_end(data) + 4 + 100] ^= 0x01
    assert kind_of(bytes(data)) == "kv_corrupt"


def test_a_wrong_total_checksum_is_corrupt() -> None:
    data = bytearray(frames())
    data[-1] ^= 0xFF
    assert kind_of(bytes(data)) == "kv_corrupt"


def test_a_chunk_longer_than_announced_chunk_size_is_corrupt() -> None:
    data = frames(chunk=CHUNK)
    # Same bytes, but the header claims chunks of at most 100 bytes.
    start = header_end(data)
    header = json.loads(data[8:start])
    header["chunk_bytes"] = 100
    raw = json.dumps(header).encode()
    assert kind_of(MAGIC + struct.pack("<I", len(raw)) + raw + data[start:]) == "kv_corrupt"


def test_garbage_after_the_trailer_is_corrupt() -> None:
    assert kind_of(frames() + b"x") == "kv_corrupt"


@pytest.mark.parametrize("cut", [3, 20, 5000, -9, -4, -1])
def test_a_stream_cut_anywhere_is_truncated(cut: int) -> None:
    data = frames()
    assert kind_of(data[:cut]) == "kv_truncated"


def test_an_end_marker_before_all_bytes_is_truncated() -> None:
    data = frames()
    start = header_end(data)
    first_chunk = data[start:start + 4 + CHUNK + 4]
    crc = zlib.crc32(STATE[:CHUNK])
    stream = data[:start] + first_chunk + struct.pack("<II", 0, crc)
    assert kind_of(stream) == "kv_truncated"


def test_another_magic_is_a_version_error() -> None:
    assert kind_of(b"GKV2" + frames()[4:]) == "kv_version"
    assert kind_of(b"ggsq" + frames()[4:]) == "kv_version"


def test_another_format_version_is_a_version_error() -> None:
    data = frames()
    start = header_end(data)
    header = json.loads(data[8:start])
    header["format_version"] = 2
    raw = json.dumps(header).encode()
    assert kind_of(MAGIC + struct.pack("<I", len(raw)) + raw + data[start:]) == "kv_version"


def test_an_oversized_announcement_is_refused_before_reading_it() -> None:
    data = frames()
    start = header_end(data)
    consumed = []

    def stream() -> Iterator[bytes]:
        yield data[:start]
        consumed.append("body")  # reading on would reach the state
        yield data[start:]

    assert kind_of(stream(), max_bytes=len(STATE) - 1) == "kv_too_large"
    assert consumed == []


def test_more_bytes_than_announced_are_refused() -> None:
    data = frames()
    start = header_end(data)
    header = json.loads(data[8:start])
    header["nbytes"] = 100  # claims 100 bytes, then sends a chunk of 1024
    raw = json.dumps(header).encode()
    assert kind_of(MAGIC + struct.pack("<I", len(raw)) + raw + data[start:]) == "kv_too_large"


def test_a_header_that_is_not_json_is_corrupt() -> None:
    assert kind_of(MAGIC + struct.pack("<I", 5) + b"{nope" + b"\0" * 8) == "kv_corrupt"


def test_token_ids_outside_the_vocabulary_are_corrupt() -> None:
    data = b"".join(write_frames(SMOL, [1, 49152], 7, STATE, CHUNK))
    assert kind_of(data) == "kv_corrupt"


def test_another_model_is_incompatible_and_named() -> None:
    data = b"".join(write_frames(GEMMA, TOKENS, 7, STATE, CHUNK))
    with pytest.raises(KVIncompatibleError) as info:
        read_frames(pieces(data, 999), SMOL, max_bytes=1 << 20)
    msg = str(info.value)
    assert "gemma3-270m" in msg
    assert "smollm2-135m" in msg
    assert "cdcdcdcdcdcd" in msg
    assert "abababababab" in msg


def test_a_handshake_size_that_the_stream_contradicts_is_incompatible() -> None:
    with pytest.raises(KVIncompatibleError):
        read_frames(pieces(frames(), 999), SMOL, max_bytes=1 << 20, announced=5)


def test_mismatch_names_both_models_and_the_difference() -> None:
    assert SMOL.mismatch(dataclasses.replace(SMOL, name="renamed", llama_cpp="9")) is None
    msg = SMOL.mismatch(GEMMA)
    assert msg is not None
    assert "smollm2-135m (sha256 abababababab)" in msg
    assert "gemma3-270m (sha256 cdcdcdcdcdcd)" in msg
    assert "n_layer 30 vs 18" in msg
    layout = SMOL.mismatch(dataclasses.replace(SMOL, flash_attn=True, v_trans=False))
    assert layout is not None
    assert "v_trans True vs False" in layout


def test_identity_hash_covers_what_must_match() -> None:
    assert len(SMOL.identity_hash) == 16
    same = dataclasses.replace(SMOL, name="x", file="y.gguf", llama_cpp="0.4")
    assert same.identity_hash == SMOL.identity_hash
    for change in ({"gguf_sha256": "ef" * 32}, {"n_layer": 31}, {"n_embd": 1},
                   {"kv_type_k": "q8_0"}, {"kv_type_v": "q8_0"}, {"v_trans": False},
                   {"state_version": 2}):
        assert dataclasses.replace(SMOL, **change).identity_hash != SMOL.identity_hash


def test_identity_dict_round_trip_and_bad_dicts() -> None:
    assert ModelIdentity.from_dict(json.loads(json.dumps(SMOL.to_dict()))) == SMOL
    assert ModelIdentity.from_dict({**SMOL.to_dict(), "future": 1}) == SMOL
    bad = SMOL.to_dict()
    del bad["n_layer"]
    with pytest.raises(InvalidRequestError, match="n_layer"):
        ModelIdentity.from_dict(bad)
    with pytest.raises(InvalidRequestError, match="v_trans"):
        ModelIdentity.from_dict({**SMOL.to_dict(), "v_trans": 1})


def test_unknown_error_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown"):
        KVFormatError("kv_whatever", "x")
