"""Heterogeneous prefill/decode: prefill on the GPU, decode on the CPU, in one process.

    .venv/bin/python -m bench.gpu_pair --quick --json        # here: no GPU, see below
    python3 -m bench.gpu_pair --model SmolLM2-135M-Instruct.Q4_1.gguf --threads 8 \\
        --llama-log llama.log --tokens-out tokens.json --json  # with a CUDA llama-cpp-python

Four placements of one request (a ~1500-token chat prompt, 256 greedy tokens),
each through the engine's own ``inference.backends._llama`` helpers (contexts of
4096 cells with a unified KV cache, prompts evaluated in 256-token batches, the
first token sampled on the prefill side as the engine does):

- ``cpu``: prefill and decode on one CPU context;
- ``gpu``: prefill and decode on one GPU context (every layer and the KV offloaded);
- ``gpu_cpu``: prefill on the GPU context, sequence 0's KV copied out with
  ``llama_state_seq_get_data``, loaded into a CPU context with
  ``llama_state_seq_set_data``, decode there;
- ``cpu_gpu``: the reverse.

One warm-up round, then ``--repeats`` rounds (medians); within a round the
placements run one after the other. Figures: TTFT (prefill and the first
token's sampling), prefill and decode tok/s (decode: wall clock of the 255
single-token steps), for the pairs the state's bytes and the get/set seconds;
``*_agree_*``: how many leading tokens of two placements' outputs are equal
(all of them when identical); ``*_deterministic``: every round gave the same tokens.
Decoding does not stop at end-of-generation, so every placement yields the same
count; ``*_first_eog`` says where the model would have stopped (-1: it did not).

Without a GPU build (``llama_supports_gpu_offload()`` false) the "GPU" contexts run
on the CPU too, and the pair is the CPU-to-CPU handoff ``bench.engine`` measures;
``gpu_offload`` in the output says which it was.
"""

from __future__ import annotations

import json
import logging
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import llama_cpp as C

from inference.backends._llama import Context, LoadedModel, Sampler, llama_cpp_version
from inference.errors import KVTransferError
from inference.models import BUILTIN_MODELS
from inference.prompting import render_chat
from inference.types import ChatMessage

from .engine import CELL, SYSTEM
from .report import emit, parser

log = logging.getLogger("bench.gpu_pair")

TAIL = "\nSummarise what this notebook computes, cell by cell, and what each cell's result means."
PLACEMENTS = ("cpu", "gpu", "gpu_cpu", "cpu_gpu")


def load_model(path: Path, on_gpu: bool) -> LoadedModel:
    """The GGUF with every layer on the GPU (n_gpu_layers=-1) or none (0)."""
    return LoadedModel(path, path.stem, n_gpu_layers=-1 if on_gpu else 0)


def new_context(model: LoadedModel, on_gpu: bool, n_ctx: int, n_batch: int, threads: int,
                flash_attn: int) -> Context:
    """A context as the engine makes them; a CPU one never offloads a batch to the GPU."""
    return Context(model, n_ctx, n_batch=n_batch, threads=threads, flash_attn=flash_attn,
                   op_offload=on_gpu)


def chat_prompt(model: LoadedModel, n_tokens: int) -> list[int]:
    """The smallest prompt of bench.engine's synthetic notebook cells with >= n_tokens tokens."""
    body, i = "", 0
    while True:
        messages = (ChatMessage("system", SYSTEM), ChatMessage("user", body + TAIL))
        tokens = model.tokenize(render_chat(messages, model.chat_template, model.bos_text,
                                            model.eos_text))
        if len(tokens) >= n_tokens:
            return tokens
        i += 1
        body += CELL.format(i=i)


@dataclass(slots=True)
class Run:
    """One request on one placement."""

    tokens: list[int]
    ttft_seconds: float
    decode_seconds: float
    kv_bytes: int = 0
    get_seconds: float = 0.0
    set_seconds: float = 0.0


@dataclass(slots=True)
class Placement:
    name: str
    prefill: Context
    decode: Context
    runs: list[Run] = field(default_factory=list)

    @property
    def moves_state(self) -> bool:
        return self.prefill is not self.decode


def run_once(p: Placement, prompt: list[int], n_gen: int, sampler: Sampler) -> Run:
    """Prefill, sample the first token, move the state if the pair is split, decode."""
    p.prefill.clear()
    t0 = time.perf_counter()
    p.prefill.eval(prompt)
    first = sampler.sample(p.prefill)  # reads the logits: waits for the device
    ttft = time.perf_counter() - t0
    run = Run([first], ttft, 0.0)
    if p.moves_state:
        if p.prefill.fingerprint != p.decode.fingerprint:
            raise KVTransferError(f"{p.name}: the two contexts' KV layouts differ "
                                  f"({p.prefill.fingerprint} != {p.decode.fingerprint})")
        t0 = time.perf_counter()
        state = p.prefill.get_state()
        t1 = time.perf_counter()
        p.decode.set_state(state, prompt)
        run.set_seconds = time.perf_counter() - t1
        run.get_seconds = t1 - t0
        run.kv_bytes = len(state)
    ctx, token = p.decode, first
    t0 = time.perf_counter()
    while len(run.tokens) < n_gen:
        ctx.eval([token])
        token = sampler.sample(ctx)
        run.tokens.append(token)
    run.decode_seconds = time.perf_counter() - t0
    return run


def agree(a: list[int], b: list[int]) -> int:
    """How many leading tokens of a and b are equal."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def first_eog(model: LoadedModel, tokens: list[int]) -> int:
    return next((i for i, t in enumerate(tokens) if model.is_eog(t)), -1)


def figures(places: dict[str, Placement], model: LoadedModel, n_prompt: int,
            n_gen: int) -> dict[str, Any]:
    med = statistics.median
    out: dict[str, Any] = {}
    for name, p in places.items():
        runs = p.runs
        ttft = med(r.ttft_seconds for r in runs)
        out[f"{name}_ttft_s"] = ttft
        out[f"{name}_prefill_tps"] = n_prompt / ttft
        out[f"{name}_decode_tps"] = (n_gen - 1) / med(r.decode_seconds for r in runs)
        if p.moves_state:
            get_s, set_s = med(r.get_seconds for r in runs), med(r.set_seconds for r in runs)
            out[f"{name}_kv_bytes"] = runs[0].kv_bytes
            out[f"{name}_get_s"] = get_s
            out[f"{name}_set_s"] = set_s
            out[f"{name}_first_token_out_s"] = med(
                r.ttft_seconds + r.get_seconds + r.set_seconds for r in runs)
        out[f"{name}_deterministic"] = all(r.tokens == runs[0].tokens for r in runs)
        out[f"{name}_first_eog"] = first_eog(model, runs[0].tokens)
    tok = {name: p.runs[0].tokens for name, p in places.items()}
    for a, b in (("gpu_cpu", "cpu"), ("gpu_cpu", "gpu"), ("cpu", "gpu"),
                 ("cpu_gpu", "cpu"), ("cpu_gpu", "gpu")):
        out[f"{a}_agree_{b}"] = agree(tok[a], tok[b])
    return out


def measure(model_path: Path, n_prompt: int, n_gen: int, threads: int, repeats: int,
            n_ctx: int, n_batch: int, flash_attn: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The figures, and each placement's tokens and text from its first timed round."""
    gpu_model = load_model(model_path, on_gpu=True)
    cpu_model = load_model(model_path, on_gpu=False)
    contexts: list[Context] = []
    try:
        def ctx(model: LoadedModel, on_gpu: bool) -> Context:
            contexts.append(new_context(model, on_gpu, n_ctx, n_batch, threads, flash_attn))
            return contexts[-1]

        cpu_a, cpu_b = ctx(cpu_model, False), ctx(cpu_model, False)
        gpu_a, gpu_b = ctx(gpu_model, True), ctx(gpu_model, True)
        places = {
            "cpu": Placement("cpu", cpu_a, cpu_a),
            "gpu": Placement("gpu", gpu_a, gpu_a),
            "gpu_cpu": Placement("gpu_cpu", gpu_b, cpu_b),
            "cpu_gpu": Placement("cpu_gpu", cpu_b, gpu_b),
        }
        prompt = chat_prompt(cpu_model, n_prompt)
        cpu_a.check_fits(len(prompt), n_gen)
        with Sampler(cpu_model, 0.0, 0, None) as sampler:
            for r in range(repeats + 1):  # round 0 warms up: kernels, graphs, caches
                for p in places.values():
                    run = run_once(p, prompt, n_gen, sampler)
                    log.info("round %d %-7s ttft %.4f s, decode %.1f tok/s%s", r, p.name,
                             run.ttft_seconds, (n_gen - 1) / run.decode_seconds,
                             f", state {run.kv_bytes / 1e6:.1f} MB get {run.get_seconds:.4f}"
                             f" s set {run.set_seconds:.4f} s" if p.moves_state else "")
                    if r > 0:
                        p.runs.append(run)
        out = figures(places, cpu_model, len(prompt), n_gen)
        out["prompt_tokens"] = len(prompt)
        detail = {name: {"tokens": p.runs[0].tokens,
                         "text": b"".join(cpu_model.piece(t) for t in p.runs[0].tokens)
                         .decode("utf-8", "replace")}
                  for name, p in places.items()}
        return out, detail
    finally:
        for c in contexts:
            c.close()
        gpu_model.close()
        cpu_model.close()


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, "1 timed round instead of 3, 64 tokens instead of 256")
    ap.add_argument("--model", type=Path, default=None,
                    help="GGUF file (default: the installed SmolLM2-135M-Instruct Q4_1)")
    ap.add_argument("--threads", type=int, default=min(8, os.cpu_count() or 1),
                    help="threads of every context (default: min(8, cores))")
    ap.add_argument("--prompt-tokens", type=int, default=1500)
    ap.add_argument("--gen-tokens", type=int, default=None, help="default 256 (64 with --quick)")
    ap.add_argument("--repeats", type=int, default=None, help="default 3 (1 with --quick)")
    ap.add_argument("--n-ctx", type=int, default=4096)
    ap.add_argument("--n-batch", type=int, default=256)
    ap.add_argument("--flash-attn", type=int, default=-1, choices=(-1, 0, 1),
                    help="llama.cpp's flash_attn_type: -1 auto (the engine's default), 0 off, 1 on")
    ap.add_argument("--llama-log", type=Path, default=None,
                    help="write llama.cpp's own log here (device placement, buffers)")
    ap.add_argument("--tokens-out", type=Path, default=None,
                    help="write each placement's token ids and text here (JSON)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    llama_log = logging.getLogger("inference.llama_cpp")
    if args.llama_log is not None:
        handler = logging.FileHandler(args.llama_log, mode="w", encoding="utf-8")
        llama_log.addHandler(handler)
        llama_log.setLevel(logging.DEBUG)
        llama_log.propagate = False
    else:
        llama_log.setLevel(logging.WARNING)
    n_gen = args.gen_tokens or (64 if args.quick else 256)
    repeats = args.repeats or (1 if args.quick else 3)
    if n_gen < 2 or repeats < 1 or args.prompt_tokens < 1:
        ap.error("--gen-tokens must be >= 2, --repeats and --prompt-tokens >= 1")
    model_path = args.model or BUILTIN_MODELS["smollm2-135m"].resolve_path()

    t_start = time.perf_counter()
    out: dict[str, Any] = {
        "model": model_path.name, "llama_cpp_python": llama_cpp_version(),
        "gpu_offload": bool(C.llama_supports_gpu_offload()), "threads": args.threads,
        "n_batch": args.n_batch, "flash_attn": args.flash_attn, "gen_tokens": n_gen,
        "repeats": repeats,
    }
    if not out["gpu_offload"]:
        log.warning("this llama-cpp-python has no GPU backend: the 'gpu' contexts run on the CPU")
    figs, detail = measure(model_path, args.prompt_tokens, n_gen, args.threads, repeats,
                           args.n_ctx, args.n_batch, args.flash_attn)
    out.update(figs)
    if args.tokens_out is not None:
        args.tokens_out.write_text(json.dumps(detail, indent=1), encoding="utf-8")
    out["bench_seconds"] = time.perf_counter() - t_start
    emit(out, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
