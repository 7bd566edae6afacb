"""Benchmark of the embedded engine against llama.cpp's own llama-bench, in one run.

    .venv/bin/python -m bench.engine --quick --json

Prints progress to stderr and, as the last line of stdout, one JSON object:

- ``identical``: greedy output of a 1500-token prompt through the KV handoff
  (prefill worker -> state bytes -> decode worker) equals one worker doing both.
- ``engine_prefill_ratio`` / ``engine_decode_ratio``: our tokens/s divided by
  llama-bench's pp512 / tg128 for the same model and thread count, measured in
  interleaved rounds (medians) because this machine's speed drifts. Ours is
  wall-clock through our API (chat template, tokenization, sampling and
  detokenization included), not llama.cpp's internal counters.
- ``handoff_ratio``: (state get + load seconds) / re-prefill seconds, 1500-token
  prompt: what moving the real KV costs against a second server redoing the prompt.
- ``parallel_ratio``: wall time of the code and feedback requests through
  generate_many divided by running them one after the other.
- ``prefix_reuse_ratio``: prefill seconds of a second student whose prompt shares
  a ~1500-token prefix, divided by the cold prefill of the same prompt.
"""

from __future__ import annotations

import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from inference import DisaggregatedClient, EngineConfig, GenerationRequest, RouteConfig
from inference.models import BUILTIN_MODELS

from .llama_bench import ensure_llama_bench, llama_cpp_version, run_llama_bench
from .report import emit, parser

log = logging.getLogger("bench.engine")

SYSTEM = "You are a teaching assistant grading a data-analysis notebook. Answer briefly."
CELL = ("Cell {i}: the student loads orders.csv with pandas, joins customers on customer_id, "
        "groups revenue by region and month, and reports the mean order value ({i}). ")


def _filler(client: DisaggregatedClient, role: str, n_tokens: int, tail: str) -> str:
    backend = client.backend(role)
    body, i = "", 0
    while True:
        text = body + tail
        if len(backend.prompt_tokens(GenerationRequest.chat(role, SYSTEM, text))) >= n_tokens:
            return text
        i += 1
        body += CELL.format(i=i)


def _client(tmp: Path, threads: int) -> DisaggregatedClient:
    routes = {
        "split": RouteConfig("split", prefix_cache_mb=0, fallback=False),
        "one": RouteConfig("one", mode="single", prefix_cache_mb=0),
        "cached": RouteConfig("cached", prefix_cache_mb=512),
        "code": RouteConfig("code", prefix_cache_mb=0),
        "feedback": RouteConfig("feedback", prefix_cache_mb=0),
    }
    return DisaggregatedClient(EngineConfig(routes=routes, threads=threads,
                                            history_db=tmp / "bench-history.db"))


def bench_identity_and_handoff(client: DisaggregatedClient, n_tokens: int) -> dict[str, Any]:
    user = _filler(client, "split", n_tokens, "\nSummarise what this notebook computes.")
    split = client.generate(GenerationRequest.chat("split", SYSTEM, user, max_tokens=64))
    one = client.generate(GenerationRequest.chat("one", SYSTEM, user, max_tokens=64))
    m = split.metrics
    return {
        "identical": split.tokens == one.tokens,
        "identity_prompt_tokens": m.prompt_tokens,
        "identity_output_tokens": len(split.tokens),
        "kv_bytes": m.kv_bytes,
        "handoff_seconds": m.handoff_seconds,
        "reprefill_seconds": one.metrics.prefill_seconds,
        "handoff_ratio": m.handoff_seconds / one.metrics.prefill_seconds,
    }


def _ours_once(client: DisaggregatedClient, prompt_user: str, decode_user: str,
               n_gen: int) -> tuple[float, float, int]:
    """Our prefill and decode tokens/s (wall clock through the public API), decode depth."""
    pre = client.generate(GenerationRequest.chat("one", SYSTEM, prompt_user, max_tokens=1))
    prefill_tps = pre.metrics.prompt_tokens / pre.metrics.ttft_seconds
    dec = client.generate(GenerationRequest.chat("one", None, decode_user, max_tokens=n_gen))
    m = dec.metrics
    decode_wall = m.total_seconds - m.ttft_seconds
    decode_tps = m.decode_evals / decode_wall
    return prefill_tps, decode_tps, m.prompt_tokens


def bench_engine_ratios(client: DisaggregatedClient, model: Path, threads: int,
                        rounds: int) -> dict[str, Any]:
    n_prompt, n_gen = 512, 128
    prompt_user = _filler(client, "one", n_prompt, "\nDone.")
    decode_user = "Write the numbers from 1 to 300 in words, one per line."
    ours_p, ours_d, ref_p, ref_d = [], [], [], []
    # Load the model and contexts; learn how deep in the context our decode runs
    # (chat template + prompt), so llama-bench's decode test runs at that depth too.
    depth = _ours_once(client, prompt_user, decode_user, 8)[2]

    def ours() -> None:
        for _ in range(3):
            p, d, _depth = _ours_once(client, prompt_user, decode_user, n_gen)
            ours_p.append(p)
            ours_d.append(d)

    def ref() -> None:
        for row in run_llama_bench(model, threads, n_prompt, 0, repetitions=3):
            ref_p.append(row.tokens_per_s)
        for row in run_llama_bench(model, threads, 0, n_gen, repetitions=3, depth=depth):
            ref_d.append(row.tokens_per_s)

    for r in range(rounds):  # ABBA order, so a drift in machine speed hits both sides
        for step in ((ours, ref) if r % 2 == 0 else (ref, ours)):
            step()
        log.info("round %d: ours prefill %.1f decode %.1f tok/s | llama-bench pp %.1f tg %.1f",
                 r + 1, ours_p[-1], ours_d[-1], ref_p[-1], ref_d[-1])
    med = statistics.median
    return {
        "ours_prefill_tps": med(ours_p), "ours_decode_tps": med(ours_d),
        "llama_bench_pp512_tps": med(ref_p), "llama_bench_tg128_tps": med(ref_d),
        "engine_prefill_ratio": med(ours_p) / med(ref_p),
        "engine_decode_ratio": med(ours_d) / med(ref_d),
        "decode_depth_tokens": depth,
        "rounds": rounds,
    }


def bench_parallel(client: DisaggregatedClient, n_tokens: int, n_gen: int) -> dict[str, Any]:
    user = _filler(client, "code", n_tokens, "\nWhat is wrong with this analysis?")
    reqs = [GenerationRequest.chat(role, SYSTEM, user, max_tokens=n_gen)
            for role in ("code", "feedback")]
    client.generate_many(reqs)  # warm both routes' contexts
    t0 = time.perf_counter()
    for r in reqs:
        client.generate(r)
    serial = time.perf_counter() - t0
    t0 = time.perf_counter()
    client.generate_many(reqs)
    parallel = time.perf_counter() - t0
    return {"serial_seconds": serial, "parallel_seconds": parallel,
            "parallel_ratio": parallel / serial}


def bench_prefix_reuse(client: DisaggregatedClient, n_tokens: int) -> dict[str, Any]:
    shared = _filler(client, "cached", n_tokens, "")
    a = shared + "\nStudent 017: means = df.groupby('region').revenue.mean()"
    b = shared + "\nStudent 018: out = df.pivot_table(index='region', values='revenue')"
    client.generate(GenerationRequest.chat("cached", SYSTEM, a, max_tokens=1))
    warm = client.generate(GenerationRequest.chat("cached", SYSTEM, b, max_tokens=1)).metrics
    cold = client.generate(GenerationRequest.chat("one", SYSTEM, b, max_tokens=1)).metrics
    return {"prefix_cached_tokens": warm.cached_tokens,
            "prefix_prompt_tokens": warm.prompt_tokens,
            "prefix_reuse_ratio": warm.prefill_seconds / cold.prefill_seconds}


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, "3 rounds instead of 7")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    logging.getLogger("inference").setLevel(logging.WARNING)

    t_start = time.perf_counter()
    ensure_llama_bench()
    model = BUILTIN_MODELS["smollm2-135m"].resolve_path()
    out: dict[str, Any] = {"model": "smollm2-135m", "threads": args.threads,
                           "llama_cpp_python": llama_cpp_version()}
    with tempfile.TemporaryDirectory() as tmp, _client(Path(tmp), args.threads) as client:
        log.info("identity and handoff (1500-token prompt)...")
        out.update(bench_identity_and_handoff(client, 1500))
        log.info("engine vs llama-bench...")
        out.update(bench_engine_ratios(client, model, args.threads, 3 if args.quick else 7))
        log.info("parallel roles...")
        out.update(bench_parallel(client, 400, 48))
        log.info("prefix reuse...")
        out.update(bench_prefix_reuse(client, 1500))
    out["bench_seconds"] = time.perf_counter() - t_start
    emit(out, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
