"""Batched decoding (issue 21): our aggregate decode tok/s against llama-batched-bench.

Our aggregate decode tokens/s with 1, 2, 4 and 8 sequences at once against
llama.cpp's own ``llama-batched-bench``, in one run.

    .venv/bin/python -m bench.batch --quick     # ~1.5 minutes on 2 cores once set up

Both sides use the bundled SmolLM2-135M-Instruct GGUF, the same thread count and
the same prompt and generation lengths. For each size N, ours and llama.cpp's are
measured back to back, alternating which goes first (ABBA), for a few rounds;
medians are compared, because this machine's speed drifts.

How each side is measured, and what ``ours_decode_tps_N`` (the batched steps' own
time, as ``S_TG``), ``ours_e2e_tps_N`` and ``ours_span_tps_N`` count: bench/README.md
("Batched decoding").

The last line of stdout is one JSON object: ``batch_ratio_min`` (the smallest, over
the sizes, of ours / llama.cpp), the figures per size, ``batch_speedup_4`` (ours at
4 over ours at 1) beside llama.cpp's own ``llama_speedup_4``, and
``busy_core_decode_ratio``: our decode tok/s at N=1 while a process of this
benchmark spins on one core, over the same without it (ABBA rounds, medians).
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inference import DisaggregatedClient, EngineConfig, GenerationRequest, RouteConfig
from inference.models import BUILTIN_MODELS

from .llama_bench import ensure_llama_bench, llama_cpp_version
from .report import emit, parser

log = logging.getLogger("bench.batch")

ROLE = "batch"
SYSTEM = "You are a helpful assistant. Do exactly what the user asks, in full."
CELL = ("Cell {i} of student {s}: loads orders_{s}.csv with pandas, joins customers on "
        "customer_id, groups revenue by region and month ({i}). ")
ASK = ("\nForget the notebook above. Write every whole number from {a} to {b} in words, "
       "one per line, without skipping any.")


# -- llama.cpp's side -------------------------------------------------------------
@dataclass(frozen=True)
class LlamaRow:
    pl: int
    pp: int
    tg: int
    t_tg: float
    speed_tg: float  # S_TG: pl * tg / t_tg
    speed_pp: float
    t: float  # t_pp + t_tg

    @property
    def e2e_tg(self) -> float:
        """The generated tokens over the whole run, prefill included."""
        return self.pl * self.tg / self.t


def run_batched_bench(model: Path, threads: int, n_prompt: int, n_gen: int,
                      sizes: list[int], n_batch: int) -> dict[int, LlamaRow]:
    """One llama-batched-bench run; its rows by batch size."""
    exe = ensure_llama_bench("llama-batched-bench")
    # Prompts not shared: every sequence needs pp + tg cells of the unified buffer.
    # A size whose cells exceed -c is skipped by llama-batched-bench without a word.
    n_ctx = max(4096, max(sizes) * (n_prompt + n_gen) + 256)
    cmd = [str(exe), "-m", str(model), "-t", str(threads), "-c", str(n_ctx),
           "-b", str(n_batch), "-ub", str(n_batch), "-npp", str(n_prompt),
           "-ntg", str(n_gen), "-npl", ",".join(map(str, sizes)), "-kvu",
           "--output-format", "jsonl"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise RuntimeError(f"llama-batched-bench failed ({proc.returncode}): "
                           f"{proc.stderr[-2000:]}")
    rows: dict[int, LlamaRow] = {}
    for line in (proc.stdout + "\n" + proc.stderr).splitlines():
        line = line.strip()
        if line.startswith("{") and '"speed_tg"' in line:
            r = json.loads(line)
            rows[r["pl"]] = LlamaRow(r["pl"], r["pp"], r["tg"], r["t_tg"], r["speed_tg"],
                                     r["speed_pp"], r["t"])
    missing = [n for n in sizes if n not in rows]
    if missing:
        raise RuntimeError(f"llama-batched-bench gave no row for sizes {missing} "
                           f"(command: {' '.join(cmd)}):\n{proc.stdout[-1500:]}")
    return rows


def llama_build() -> str:
    """What llama-batched-bench says it is: ``0.5.0-dev (build 1, commit 0c1e570)``."""
    exe = ensure_llama_bench("llama-batched-bench")
    proc = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60)
    m = re.search(r"version: (.+)", proc.stdout + proc.stderr)
    return m.group(1).strip() if m else "unknown"


# -- our side ---------------------------------------------------------------------
def _client(tmp: Path, threads: int) -> DisaggregatedClient:
    """A disaggregated route (the engine's default: the batched decoder is its decode
    side), prefix reuse off."""
    route = RouteConfig(ROLE, mode="disaggregated", prefix_cache_mb=0, fallback=False)
    return DisaggregatedClient(EngineConfig(routes={ROLE: route}, threads=threads,
                                            history_db=tmp / "bench-history.db"))


def make_prompts(client: DisaggregatedClient, count: int, n_tokens: int) -> list[str]:
    """``count`` distinct user messages whose chat prompts are ~``n_tokens`` tokens,
    each asking for a long list (so the reply runs to max_tokens)."""
    backend = client.backend(ROLE)

    def size(text: str) -> int:
        return len(backend.prompt_tokens(  # type: ignore[attr-defined]
            GenerationRequest.chat(ROLE, SYSTEM, text)))

    out = []
    for s in range(count):
        ask = ASK.format(a=1 + 37 * s, b=400 + 37 * s)
        body, i = "", 0
        while size(body + CELL.format(i=i + 1, s=101 + s) + ask) <= n_tokens:
            i += 1
            body += CELL.format(i=i, s=101 + s)
        while size(body + ask) < n_tokens:  # the last few tokens, a word at a time
            body += f"{i} "
        out.append(body + ask)
    return out


@dataclass(frozen=True)
class OneRun:
    n: int
    decode_tps: float  # tokens of the batched steps / the steps' own seconds
    e2e_tps: float  # tokens after the first / first start -> last return
    span_tps: float  # the same tokens / union of the decode spans
    sum_tps: float  # sum of each request's decode tok/s (its metrics)
    tokens: list[int]  # tokens of each reply
    prompt_tokens: list[int]
    decode_batch: int  # most sequences decoded together, where the engine says (0: not)


def _union(spans: list[tuple[float, float]]) -> float:
    total, end = 0.0, float("-inf")
    for a, b in sorted(spans):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def _step_counters(client: DisaggregatedClient) -> tuple[int, float]:
    """The route's decode worker's batched steps so far: tokens, seconds."""
    batch = getattr(client.backend(ROLE), "batch", None)
    if batch is None:
        raise RuntimeError(f"route {ROLE!r} decodes serially (no batched decoder): "
                           "nothing to compare with llama-batched-bench")
    w = batch.worker
    return w.step_tokens, w.step_seconds


def run_ours(client: DisaggregatedClient, prompts: list[str], n_gen: int) -> OneRun:
    """All prompts at once, one thread each, released together by a barrier."""
    n = len(prompts)
    tokens0, seconds0 = _step_counters(client)
    barrier = threading.Barrier(n)
    starts, firsts, ends = [0.0] * n, [0.0] * n, [0.0] * n
    results: list[Any] = [None] * n
    errors: list[BaseException] = []

    def one(i: int) -> None:
        req = GenerationRequest.chat(ROLE, SYSTEM, prompts[i], max_tokens=n_gen,
                                     temperature=0.0, stop=())

        def on_token(_piece: str) -> None:
            if not firsts[i]:
                firsts[i] = time.perf_counter()

        barrier.wait()
        starts[i] = time.perf_counter()
        try:
            results[i] = client.generate(req, on_token)
        except BaseException as exc:  # re-raised in the calling thread
            errors.append(exc)
        ends[i] = time.perf_counter()

    threads = [threading.Thread(target=one, args=(i,), name=f"batch-{i}") for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    tokens = [len(r.tokens) for r in results]
    after_first = sum(max(0, k - 1) for k in tokens)
    # A reply that streamed nothing (a first token that is end-of-generation) has
    # no decode span; its first-token time is its end.
    spans = [(firsts[i] or ends[i], ends[i]) for i in range(n)]
    decode_wall = _union(spans)
    e2e_wall = max(ends) - min(starts)
    tokens1, seconds1 = _step_counters(client)
    step_seconds = seconds1 - seconds0
    return OneRun(
        n=n,
        decode_tps=(tokens1 - tokens0) / step_seconds if step_seconds > 0 else 0.0,
        e2e_tps=after_first / e2e_wall,
        span_tps=after_first / decode_wall if decode_wall > 0 else 0.0,
        sum_tps=sum(r.metrics.decode_tps for r in results),
        tokens=tokens,
        prompt_tokens=[r.metrics.prompt_tokens for r in results],
        decode_batch=max(int(getattr(r.metrics, "decode_batch", 0) or 0) for r in results),
    )


# -- the busy core ------------------------------------------------------------------
def _spin(ready: Any) -> None:
    ready.set()
    while True:
        pass


class Spinner:
    """A process of ours that keeps one core busy while it lives."""

    def __enter__(self) -> Spinner:
        mp = multiprocessing.get_context("spawn")
        ready = mp.Event()
        self.proc = mp.Process(target=_spin, args=(ready,), daemon=True, name="spinner")
        self.proc.start()
        if not ready.wait(60):
            raise RuntimeError("the spinning process did not start")
        time.sleep(0.2)
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.join(10)


def bench_busy_core(client: DisaggregatedClient, prompts: list[str], n_gen: int,
                    rounds: int) -> dict[str, Any]:
    quiet, busy = [], []
    for r in range(rounds):
        for spin in ((False, True) if r % 2 == 0 else (True, False)):
            if spin:
                with Spinner():
                    busy.append(run_ours(client, prompts[:1], n_gen).decode_tps)
            else:
                quiet.append(run_ours(client, prompts[:1], n_gen).decode_tps)
    med = statistics.median
    log.info("busy core: quiet %s, busy %s tok/s", [round(x, 1) for x in quiet],
             [round(x, 1) for x in busy])
    return {"ours_quiet_decode_tps_1": med(quiet), "ours_busy_decode_tps_1": med(busy),
            "busy_core_decode_ratio": med(busy) / med(quiet)}


# -- the run --------------------------------------------------------------------------
def _table(sizes: list[int], out: dict[str, Any]) -> str:
    head = (f"{'N':>3} | {'ours decode':>11} | {'llama S_TG':>10} | {'ratio':>5} | "
            f"{'ours e2e':>8} | {'llama e2e':>9} | {'ratio':>5} | {'ours span':>9} | "
            f"{'ours sum':>8} | {'tokens/reply':>12} | {'batch':>5}")
    lines = [head, "-" * len(head)]
    for n in sizes:
        lines.append(
            f"{n:>3} | {out[f'ours_decode_tps_{n}']:>11.1f} | {out[f'llama_tg_tps_{n}']:>10.1f} | "
            f"{out[f'batch_ratio_{n}']:>5.2f} | {out[f'ours_e2e_tps_{n}']:>8.1f} | "
            f"{out[f'llama_e2e_tps_{n}']:>9.1f} | {out[f'e2e_ratio_{n}']:>5.2f} | "
            f"{out[f'ours_span_tps_{n}']:>9.1f} | {out[f'ours_sum_tps_{n}']:>8.1f} | "
            f"{out[f'ours_tokens_min_{n}']:>5d}-{out[f'ours_tokens_max_{n}']:<6d} | "
            f"{out[f'ours_decode_batch_{n}']:>5d}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, "generate 32 tokens instead of 128 per reply, one round "
                         "instead of 3")
    ap.add_argument("--threads", type=int, default=2, help="both sides (default 2)")
    ap.add_argument("--sizes", default="1,2,4,8",
                    help="concurrent sequences, comma-separated (default 1,2,4,8)")
    ap.add_argument("--prompt-tokens", type=int, default=300,
                    help="prompt tokens per sequence, chat template included (default 300)")
    ap.add_argument("--gen-tokens", type=int, default=None,
                    help="tokens generated per sequence (default 128, 32 with --quick)")
    ap.add_argument("--rounds", type=int, default=None,
                    help="ABBA rounds per size (default 3, 1 with --quick)")
    ap.add_argument("--n-batch", type=int, default=256,
                    help="llama-batched-bench -b/-ub: our prefill batch (default 256)")
    args = ap.parse_args(argv)
    sizes = sorted({int(x) for x in args.sizes.split(",") if x.strip()})
    if not sizes or sizes[0] < 1:
        ap.error("--sizes must list positive integers")
    n_gen = args.gen_tokens or (32 if args.quick else 128)
    rounds = args.rounds or (1 if args.quick else 3)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    logging.getLogger("inference").setLevel(logging.WARNING)

    t_start = time.perf_counter()
    model = BUILTIN_MODELS["smollm2-135m"].resolve_path()
    out: dict[str, Any] = {"model": "smollm2-135m", "threads": args.threads,
                           "llama_cpp_python": llama_cpp_version(), "mode": "disaggregated",
                           "sizes": sizes, "gen_tokens": n_gen, "rounds": rounds}
    ours: dict[int, list[OneRun]] = {n: [] for n in sizes}
    ref: dict[int, list[LlamaRow]] = {n: [] for n in sizes}
    build = llama_build()
    with tempfile.TemporaryDirectory() as tmp, \
            _client(Path(tmp), args.threads) as client:
        prompts = make_prompts(client, max(sizes), args.prompt_tokens)
        log.info("warming up (%d requests at once, 4 tokens)...", max(sizes))
        warm = run_ours(client, prompts, 4)
        n_prompt = round(statistics.median(warm.prompt_tokens))
        out["prompt_tokens"] = n_prompt
        log.info("prompts of %d-%d tokens; llama-batched-bench -npp %d -ntg %d",
                 min(warm.prompt_tokens), max(warm.prompt_tokens), n_prompt, n_gen)

        def llama(n: int) -> None:
            rows = run_batched_bench(model, args.threads, n_prompt, n_gen, [n], args.n_batch)
            ref[n].append(rows[n])

        def ours_run(n: int) -> None:
            ours[n].append(run_ours(client, prompts[:n], n_gen))

        for r in range(rounds):
            for k, n in enumerate(sizes):
                # Who goes first alternates from size to size and from round to round.
                steps = (ours_run, llama) if (r + k) % 2 == 0 else (llama, ours_run)
                for step in steps:
                    step(n)
                o, lr = ours[n][-1], ref[n][-1]
                log.info("round %d, N=%d: ours %.1f tok/s (e2e %.1f, span %.1f, sum %.1f, "
                         "tokens %s) | llama-batched-bench S_TG %.1f (e2e %.1f)", r + 1, n,
                         o.decode_tps, o.e2e_tps, o.span_tps, o.sum_tps, o.tokens,
                         lr.speed_tg, lr.e2e_tg)
        log.info("busy core...")
        out.update(bench_busy_core(client, prompts, n_gen, max(2, rounds)))

    med = statistics.median
    ratios = {}
    for n in sizes:
        runs = ours[n]
        out[f"ours_decode_tps_{n}"] = med(x.decode_tps for x in runs)
        out[f"ours_e2e_tps_{n}"] = med(x.e2e_tps for x in runs)
        out[f"ours_span_tps_{n}"] = med(x.span_tps for x in runs)
        out[f"ours_sum_tps_{n}"] = med(x.sum_tps for x in runs)
        out[f"ours_tokens_min_{n}"] = min(min(x.tokens) for x in runs)
        out[f"ours_tokens_max_{n}"] = max(max(x.tokens) for x in runs)
        out[f"ours_decode_batch_{n}"] = max(x.decode_batch for x in runs)
        out[f"llama_tg_tps_{n}"] = med(x.speed_tg for x in ref[n])
        out[f"llama_e2e_tps_{n}"] = med(x.e2e_tg for x in ref[n])
        out[f"e2e_ratio_{n}"] = out[f"ours_e2e_tps_{n}"] / out[f"llama_e2e_tps_{n}"]
        # Every round's figure, to see how much the machine drifted.
        out[f"ours_decode_tps_runs_{n}"] = [round(x.decode_tps, 1) for x in runs]
        out[f"llama_tg_tps_runs_{n}"] = [round(x.speed_tg, 1) for x in ref[n]]
        ratios[n] = out[f"ours_decode_tps_{n}"] / out[f"llama_tg_tps_{n}"]
        out[f"batch_ratio_{n}"] = ratios[n]
    out["batch_ratio_min"] = min(ratios.values())
    out["e2e_ratio_min"] = min(out[f"e2e_ratio_{n}"] for n in sizes)
    if 1 in sizes and 4 in sizes:
        out["batch_speedup_4"] = out["ours_decode_tps_4"] / out["ours_decode_tps_1"]
        out["llama_speedup_4"] = out["llama_tg_tps_4"] / out["llama_tg_tps_1"]
    out["all_replies_full_length"] = all(out[f"ours_tokens_min_{n}"] == n_gen for n in sizes)
    out["llama_cpp_build"] = build
    out["bench_seconds"] = time.perf_counter() - t_start
    if not args.json:
        print(_table(sizes, out))
        print(f"ours decode: tokens of the batched steps / their own seconds; llama S_TG: "
              f"llama-batched-bench -kvu, {n_prompt}-token prompts, {n_gen} tokens, "
              f"{args.threads} threads ({build}); e2e: generated tokens / the whole run, "
              f"prefill included; span: ours over the wall time with any sequence "
              f"decoding; sum: of per-request decode tok/s")
        print(f"batch_ratio_min {out['batch_ratio_min']:.3f}; busy_core_decode_ratio "
              f"{out['busy_core_decode_ratio']:.3f} (N=1: {out['ours_busy_decode_tps_1']:.1f} "
              f"with a core spinning / {out['ours_quiet_decode_tps_1']:.1f} tok/s quiet)")
    head = ("model", "threads", "llama_cpp_python", "llama_cpp_build", "batch_ratio_min",
            "e2e_ratio_min", "batch_speedup_4", "llama_speedup_4", "busy_core_decode_ratio")
    emit({**{k: out[k] for k in head if k in out}, **out}, True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
