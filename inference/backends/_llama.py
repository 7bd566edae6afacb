"""A thin, typed layer over llama.cpp's C API (through llama-cpp-python's ctypes).

We use the low-level API rather than ``llama_cpp.Llama`` because disaggregation
needs direct control of one sequence's KV memory (state get/set, removal of a
suffix), the sampler chain (so a grammar can be advanced by a token sampled on
another worker), the thread count per call, and llama.cpp's own perf counters.

Imported only when an embedded route is built (see ``backends.__init__``).
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import llama_cpp as C
import numpy as np

from ..errors import (
    BackendError,
    ContextOverflowError,
    KVTransferError,
    ModelLoadError,
    SchemaError,
)
from ..models import check_gguf
from .compute import compute

log = logging.getLogger(__name__)
_llama_log = logging.getLogger("inference.llama_cpp")

# ggml_log_level: NONE=0, DEBUG=1, INFO=2, WARN=3, ERROR=4, CONT=5 (continues the last line).
# llama.cpp's INFO is load-time chatter: it goes to DEBUG; warnings and errors stay visible.
_LEVELS = {0: logging.DEBUG, 1: logging.DEBUG, 2: logging.DEBUG, 3: logging.WARNING,
           4: logging.ERROR}
_last_level = logging.DEBUG
_init_lock = threading.Lock()
_initialised = False


@C.llama_log_callback
def _log_callback(level: int, text: bytes, _user: ctypes.c_void_p) -> None:
    global _last_level
    py_level = _last_level if level == 5 else _LEVELS.get(level, logging.DEBUG)
    _last_level = py_level
    msg = text.decode("utf-8", "replace").rstrip()
    if msg and _llama_log.isEnabledFor(py_level):
        _llama_log.log(py_level, "%s", msg)


def _ensure_backend() -> None:
    global _initialised
    with _init_lock:
        if not _initialised:
            C.llama_log_set(_log_callback, ctypes.c_void_p(0))
            C.llama_backend_init()
            _initialised = True


class LoadedModel:
    """One GGUF loaded once; any number of contexts share its weights."""

    def __init__(self, path: Path, name: str = "", n_gpu_layers: int | None = None) -> None:
        """``n_gpu_layers``: layers on the GPU of a GPU build (-1: all, 0: none); None keeps
        llama.cpp's default (all of them on a GPU build; nothing changes on a CPU build)."""
        _ensure_backend()
        check_gguf(path, name)
        self.path = path
        self.name = name or path.stem
        params = C.llama_model_default_params()
        params.use_mmap = True
        if n_gpu_layers is not None:
            params.n_gpu_layers = n_gpu_layers
        self._ptr = C.llama_model_load_from_file(str(path).encode(), params)
        if not self._ptr:
            raise ModelLoadError(f"model {self.name!r}: llama.cpp could not load {path} "
                                 "(corrupt or unsupported GGUF)")
        self.vocab = C.llama_model_get_vocab(self._ptr)
        self.n_vocab = C.llama_vocab_n_tokens(self.vocab)
        self.n_ctx_train = C.llama_model_n_ctx_train(self._ptr)
        self.n_layer = C.llama_model_n_layer(self._ptr)
        self.n_embd = C.llama_model_n_embd(self._ptr)
        self.size_bytes = path.stat().st_size
        self._pieces: dict[int, bytes] = {}
        self.chat_template = self.meta("tokenizer.chat_template")
        self.bos_text = self._special_text(C.llama_vocab_bos(self.vocab))
        self.eos_text = self._special_text(C.llama_vocab_eos(self.vocab))
        self.add_bos = bool(C.llama_vocab_get_add_bos(self.vocab))

    @property
    def ptr(self):
        return self._ptr

    def meta(self, key: str) -> str | None:
        buf = ctypes.create_string_buffer(1 << 16)
        n = C.llama_model_meta_val_str(self._ptr, key.encode(), buf, len(buf))
        if n < 0:
            return None
        if n >= len(buf):  # a very long template: ask again with room for it
            buf = ctypes.create_string_buffer(n + 1)
            C.llama_model_meta_val_str(self._ptr, key.encode(), buf, len(buf))
        return buf.value.decode("utf-8", "replace")

    def _special_text(self, token: int) -> str:
        if token < 0:
            return ""
        return self.piece(token, special=True).decode("utf-8", "replace")

    def tokenize(self, text: str) -> list[int]:
        raw = text.encode("utf-8")
        add_special = self.add_bos and not (self.bos_text and text.startswith(self.bos_text))
        cap = len(raw) + 8
        buf = (C.llama_token * cap)()
        n = C.llama_tokenize(self.vocab, raw, len(raw), buf, cap, add_special, True)
        if n < 0:
            cap = -n
            buf = (C.llama_token * cap)()
            n = C.llama_tokenize(self.vocab, raw, len(raw), buf, cap, add_special, True)
        if n < 0:
            raise BackendError(f"tokenization failed ({n})")
        return list(buf[:n])

    def piece(self, token: int, special: bool = False) -> bytes:
        if not special:
            cached = self._pieces.get(token)
            if cached is not None:
                return cached
        buf = ctypes.create_string_buffer(64)
        n = C.llama_token_to_piece(self.vocab, token, buf, len(buf), 0, special)
        if n < 0:
            buf = ctypes.create_string_buffer(-n)
            n = C.llama_token_to_piece(self.vocab, token, buf, len(buf), 0, special)
        out = buf.raw[:n]
        if not special:
            self._pieces[token] = out
        return out

    def is_eog(self, token: int) -> bool:
        return bool(C.llama_vocab_is_eog(self.vocab, token))

    def close(self) -> None:
        if self._ptr:
            C.llama_model_free(self._ptr)
            self._ptr = None


@dataclass(frozen=True, slots=True)
class Perf:
    """llama.cpp's own counters for one context since the last reset."""

    prompt_ms: float
    eval_ms: float
    n_prompt: int
    n_eval: int

    @property
    def seconds(self) -> float:
        return (self.prompt_ms + self.eval_ms) / 1000.0

    @property
    def tokens(self) -> int:
        return self.n_prompt + self.n_eval


class Sampler:
    """A llama.cpp sampler chain: optional grammar, then greedy or seeded sampling.

    Plain greedy decoding (no grammar, temperature 0) skips the chain and takes
    the argmax of the logits directly: the chain copies all n_vocab candidates
    for every token, which costs about 1% of SmolLM2's decode time. Both pick
    the first of equal maxima, so the output is the same.
    """

    def __init__(self, model: LoadedModel, temperature: float, seed: int,
                 grammar: str | None, top_k: int = 40, top_p: float = 0.95) -> None:
        self._n_vocab = model.n_vocab
        self._ptr = None
        if grammar is None and temperature <= 0.0:
            return
        params = C.llama_sampler_chain_default_params()
        params.no_perf = True
        self._ptr = C.llama_sampler_chain_init(params)
        if grammar is not None:
            g = C.llama_sampler_init_grammar(model.vocab, grammar.encode(), b"root")
            if not g:
                self.close()
                raise SchemaError("llama.cpp rejected the grammar built from the JSON schema")
            C.llama_sampler_chain_add(self._ptr, g)
        if temperature <= 0.0:
            C.llama_sampler_chain_add(self._ptr, C.llama_sampler_init_greedy())
        else:
            C.llama_sampler_chain_add(self._ptr, C.llama_sampler_init_top_k(top_k))
            C.llama_sampler_chain_add(self._ptr, C.llama_sampler_init_top_p(top_p, 1))
            C.llama_sampler_chain_add(self._ptr, C.llama_sampler_init_temp(temperature))
            C.llama_sampler_chain_add(self._ptr, C.llama_sampler_init_dist(seed & 0xFFFFFFFF))

    def sample(self, ctx: Context | Any, idx: int = -1) -> int:
        """Sample from the logits of batch row ``idx`` (the last evaluated position by
        default) and accept the token."""
        if self._ptr is None:
            logits = C.llama_get_logits_ith(ctx.ptr, idx)
            if not logits:
                raise BackendError("llama.cpp returned no logits for the last position")
            return int(np.ctypeslib.as_array(logits, shape=(self._n_vocab,)).argmax())
        return int(C.llama_sampler_sample(self._ptr, ctx.ptr, idx))

    def accept(self, token: int) -> None:
        """Advance the chain's state (grammar, penalties) by a token sampled elsewhere."""
        if self._ptr is not None:
            C.llama_sampler_accept(self._ptr, token)

    def close(self) -> None:
        if self._ptr:
            C.llama_sampler_free(self._ptr)
            self._ptr = None

    def __enter__(self) -> Sampler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Context:
    """One llama.cpp context serving one sequence (seq 0) at a time.

    Not thread-safe: the worker that owns it serialises access.
    """

    def __init__(self, model: LoadedModel, n_ctx: int, n_batch: int = 512,
                 threads: int = 2, flash_attn: int = -1, op_offload: bool | None = None) -> None:
        """``op_offload``: whether a GPU build may run this CPU-resident model's large
        batches on the GPU (None: llama.cpp's default, which is yes)."""
        self.model = model
        params = C.llama_context_default_params()
        if op_offload is not None:
            params.op_offload = op_offload
        params.n_ctx = n_ctx
        params.n_batch = n_batch
        params.n_ubatch = n_batch
        params.n_seq_max = 1
        params.n_threads = threads
        params.n_threads_batch = threads
        params.no_perf = False
        params.kv_unified = True  # a sequence's state loads across contexts only then
        params.flash_attn_type = flash_attn
        self._ptr = C.llama_init_from_model(model.ptr, params)
        if not self._ptr:
            raise ModelLoadError(
                f"model {model.name!r}: could not create a context of {n_ctx} tokens")
        self.n_ctx = C.llama_n_ctx(self._ptr)
        self.n_batch = n_batch
        self._mem = C.llama_get_memory(self._ptr)
        self._threads = threads
        self.tokens: list[int] = []  # what seq 0 holds, position by position
        self._one = (C.llama_token * 1)()  # reused for single-token decode steps
        self.fingerprint = kv_fingerprint(model, flash_attn)

    @property
    def ptr(self):
        return self._ptr

    def set_threads(self, n: int) -> None:
        if n != self._threads:
            C.llama_set_n_threads(self._ptr, n, n)
            self._threads = n

    def check_fits(self, n_prompt: int, max_tokens: int) -> None:
        if n_prompt + max_tokens > self.n_ctx:
            raise ContextOverflowError(n_prompt, max_tokens, self.n_ctx)

    def eval(self, tokens: list[int]) -> None:
        """Append ``tokens`` to seq 0, in chunks of n_batch; logits for the last one."""
        if len(tokens) == 1:  # the decode loop's hot path: no new array per token
            self._one[0] = tokens[0]
            self._decode(self._one, 1)
            self.tokens.append(tokens[0])
            return
        for start in range(0, len(tokens), self.n_batch):
            chunk = tokens[start:start + self.n_batch]
            self._decode((C.llama_token * len(chunk))(*chunk), len(chunk))
            self.tokens.extend(chunk)

    def _decode(self, arr: ctypes.Array[ctypes.c_int32], n: int) -> None:
        rc = compute(C.llama_decode, self._ptr, C.llama_batch_get_one(arr, n))
        if rc != 0:
            raise BackendError(f"llama_decode failed with code {rc} at position "
                               f"{len(self.tokens)} of context {self.n_ctx}")

    def truncate(self, n_keep: int) -> None:
        """Drop every position >= n_keep from seq 0."""
        if n_keep >= len(self.tokens):
            return
        if n_keep == 0:
            self.clear()
            return
        if not C.llama_memory_seq_rm(self._mem, 0, n_keep, -1):
            self.clear()  # the model's memory cannot drop a suffix: start over
            return
        del self.tokens[n_keep:]

    def clear(self) -> None:
        C.llama_memory_clear(self._mem, True)
        self.tokens = []

    def get_state(self) -> bytes:
        """Copy seq 0's KV state out (llama_state_seq_get_data)."""
        size = C.llama_state_seq_get_size(self._ptr, 0)
        buf = (ctypes.c_uint8 * size)()
        n = C.llama_state_seq_get_data(self._ptr, buf, size, 0)
        if n != size:
            raise KVTransferError(f"llama_state_seq_get_data wrote {n} of {size} bytes")
        return bytes(buf)

    def set_state(self, state: bytes | memoryview, tokens: list[int] | tuple[int, ...]) -> None:
        """Replace seq 0 with a state from get_state (on this or another context)."""
        self.clear()
        if not set_seq_state(self._ptr, state, 0):
            self.clear()
            raise KVTransferError("llama_state_seq_set_data refused the KV state "
                                  "(model, KV type or context layout differ)")
        self.tokens = list(tokens)

    def perf_reset(self) -> None:
        C.llama_perf_context_reset(self._ptr)

    def perf(self) -> Perf:
        C.llama_synchronize(self._ptr)  # llama.cpp books a batch's time when it syncs
        p = C.llama_perf_context(self._ptr)
        # llama.cpp reports max(1, n) for each count; a phase with no time had no tokens.
        return Perf(p.t_p_eval_ms, p.t_eval_ms,
                    p.n_p_eval if p.t_p_eval_ms > 0 else 0, p.n_eval if p.t_eval_ms > 0 else 0)

    def close(self) -> None:
        if self._ptr:
            C.llama_free(self._ptr)
            self._ptr = None


def set_seq_state(ctx_ptr, state: bytes | memoryview, seq: int) -> bool:
    """Load a sequence state (``llama_state_seq_get_data`` of any context with the same
    fingerprint) into sequence ``seq`` of a context; False when llama.cpp refuses it."""
    data = state.cast("B") if isinstance(state, memoryview) else state
    buf = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
    return C.llama_state_seq_set_data(ctx_ptr, buf, len(data), seq) != 0


def kv_fingerprint(model: LoadedModel, flash_attn: int) -> str:
    """What must match for one context's sequence state to load into another."""
    desc = (f"{model.path.name}|{model.size_bytes}|layers={model.n_layer}|embd={model.n_embd}"
            f"|vocab={model.n_vocab}|kv=f16|fa={flash_attn}|unified=1")
    return hashlib.sha256(desc.encode()).hexdigest()[:16]


def llama_cpp_version() -> str:
    return getattr(C, "__version__", "unknown")
