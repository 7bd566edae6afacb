"""A class through a server (issue 21): ours against llama-server and llama-cpp-python's.

Three OpenAI-compatible servers, one at a time, on 127.0.0.1, the same model
(SmolLM2-135M-Instruct Q4_1) and threads; the same clients send them the same
requests, and each server's total throughput and time to first token are compared.

    .venv/bin/python -m bench.serve --quick     # ~3 minutes on 2 cores once set up

- ours: ``python -m inference.server --role both --decode-batch 4`` (a slot prefills,
  the replies decode together in one batched context), prefix reuse off.
- llama.cpp: ``llama-server -np 4`` (4 slots, continuous batching, its default), built
  from the vendored sources of the installed llama-cpp-python (``bench.llama_bench``),
  ``-c`` 4 x 1024 cells, flash attention off as ours, prompt cache off per request.
- llama-cpp-python: ``python -m llama_cpp.server`` (one request at a time: its own
  server has no batching), ``n_ctx`` 2048, ``--interrupt_requests False`` (by default
  a new request cuts the stream of the one being served).

The workload: ``--clients`` threads (4) share ``--requests`` (12) distinct chat
prompts of ~``--prompt-tokens`` (300) tokens each asking for a long list, streamed
(``stream: true``), greedy, ``max_tokens`` ``--gen-tokens`` (128); a client sends its
next request when its last one ended. Per server: ``tps`` = the completion tokens
of all requests (each reply's text tokenized with the model's own vocabulary: one
ruler for the three; what each server reported is kept as ``reported_tokens``) /
the wall time from the first request sent to the last reply ended; ``ttft_p50`` and
``ttft_p95``: send -> first streamed text. Each server gets one warm-up request
first; with ``--rounds`` above 1 the order of the servers alternates and medians are
taken.

The last line is JSON: ``serve_ratio_llama_server`` (ours / llama-server, target
>= 0.9), ``serve_ratio_llama_cpp_python`` (ours / llama-cpp-python's, target >= 2)
and every server's figures.
"""

from __future__ import annotations

import json
import logging
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from inference.models import BUILTIN_MODELS
from inference.server.launch import free_port, start_server

from .llama_bench import ensure_llama_bench, llama_cpp_version
from .report import emit, parser

log = logging.getLogger("bench.serve")

SYSTEM = "You are a helpful assistant. Do exactly what the user asks, in full."
CELL = ("Cell {i} of student {s}: loads orders_{s}.csv with pandas, joins customers on "
        "customer_id, groups revenue by region and month ({i}). ")
ASK = ("\nForget the notebook above. Write every whole number from {a} to {b} in words, "
       "one per line, without skipping any.")
SERVERS = ("ours", "llama-server", "llama-cpp-python")


class Vocab:
    """The model's tokenizer (vocabulary only): one ruler for every server's replies."""

    def __init__(self, model: Path) -> None:
        import llama_cpp

        self._llm = llama_cpp.Llama(str(model), vocab_only=True, verbose=False)

    def count(self, text: str) -> int:
        return len(self._llm.tokenize(text.encode(), add_bos=False, special=False))

    def chat_tokens(self, user: str) -> int:
        """Tokens of the user's and system's text (the chat template adds ~10)."""
        return self.count(SYSTEM) + self.count(user) + 10


def make_prompts(vocab: Vocab, count: int, n_tokens: int) -> list[str]:
    out = []
    for s in range(count):
        ask = ASK.format(a=1 + 37 * s, b=400 + 37 * s)
        body, i = "", 0
        while vocab.chat_tokens(body + CELL.format(i=i + 1, s=101 + s) + ask) <= n_tokens:
            i += 1
            body += CELL.format(i=i, s=101 + s)
        out.append(body + ask)
    return out


# -- the servers --------------------------------------------------------------------
def _wait_http(url: str, proc: subprocess.Popen[bytes], log_path: Path, path: str,
               timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{url}: the server exited with code {proc.returncode}:\n"
                               f"{log_path.read_text(errors='replace')[-3000:]}")
        try:
            if httpx.get(url + path, timeout=2.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"{url}: not serving {path} after {timeout:.0f} s:\n"
                       f"{log_path.read_text(errors='replace')[-3000:]}")


@contextmanager
def _process(cmd: list[str], health: str, tmp: Path, name: str, port: int) -> Iterator[str]:
    log_path = tmp / f"{name}.log"
    with log_path.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_http(url, proc, log_path, health)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@contextmanager
def serve(name: str, model: Path, threads: int, tmp: Path) -> Iterator[str]:
    """One of SERVERS, running on 127.0.0.1 until the block ends; yields its URL."""
    if name == "ours":
        with start_server(role="both", timeout=180.0, extra_args=(
                "--threads", str(threads), "--decode-batch", "4",
                "--prefix-cache-mb", "0")) as srv:
            yield srv.url
    elif name == "llama-server":
        port = free_port()
        exe = ensure_llama_bench("llama-server")
        with _process([str(exe), "-m", str(model), "-t", str(threads), "-tb", str(threads),
                       "-np", "4", "-c", "4096", "-fa", "off", "--host", "127.0.0.1",
                       "--port", str(port), "--no-webui"], "/health", tmp, name,
                      port) as url:
            yield url
    elif name == "llama-cpp-python":
        port = free_port()
        with _process([sys.executable, "-m", "llama_cpp.server", "--model", str(model),
                       "--n_threads", str(threads), "--n_threads_batch", str(threads),
                       "--n_ctx", "2048", "--interrupt_requests", "False",
                       "--host", "127.0.0.1", "--port", str(port)],
                      "/v1/models", tmp, name, port) as url:
            yield url
    else:
        raise ValueError(f"unknown server {name!r}: not one of {SERVERS}")


# -- the clients ------------------------------------------------------------------------
@dataclass(frozen=True)
class Reply:
    ttft: float
    seconds: float
    text: str
    reported_tokens: int  # the server's usage.completion_tokens (0: it gave none)


def ask(client: httpx.Client, url: str, user: str, n_gen: int) -> Reply:
    body = {"messages": [{"role": "system", "content": SYSTEM},
                         {"role": "user", "content": user}],
            "max_tokens": n_gen, "temperature": 0.0, "stream": True,
            "stream_options": {"include_usage": True}, "cache_prompt": False}
    t0 = time.perf_counter()
    ttft, parts, reported = 0.0, [], 0
    with client.stream("POST", url + "/v1/chat/completions", json=body) as resp:
        if resp.status_code != 200:
            raise RuntimeError(f"{url}: HTTP {resp.status_code}: {resp.read()[:500]!r}")
        for line in resp.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if chunk.get("usage"):
                reported = int(chunk["usage"].get("completion_tokens") or 0)
            for choice in chunk.get("choices") or []:
                piece = (choice.get("delta") or {}).get("content")
                if piece:
                    parts.append(piece)
                    if not ttft:
                        ttft = time.perf_counter() - t0
    return Reply(ttft, time.perf_counter() - t0, "".join(parts), reported)


@dataclass(frozen=True)
class Load:
    tps: float
    wall: float
    tokens: int
    reported_tokens: int
    ttft_p50: float
    ttft_p95: float
    tokens_min: int


def run_load(url: str, prompts: list[str], clients: int, n_gen: int, vocab: Vocab) -> Load:
    todo = list(enumerate(prompts))
    lock = threading.Lock()
    replies: list[Reply] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(clients)

    def client_loop() -> None:
        with httpx.Client(timeout=600.0) as http:
            barrier.wait()
            while True:
                with lock:
                    if not todo or errors:
                        return
                    _, user = todo.pop(0)
                try:
                    reply = ask(http, url, user, n_gen)
                except BaseException as exc:  # re-raised below
                    with lock:
                        errors.append(exc)
                    return
                with lock:
                    replies.append(reply)

    threads = [threading.Thread(target=client_loop, name=f"client-{i}")
               for i in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    if errors:
        raise errors[0]
    counts = [vocab.count(r.text) for r in replies]
    ttfts = sorted(r.ttft for r in replies)
    return Load(tps=sum(counts) / wall, wall=wall, tokens=sum(counts),
                reported_tokens=sum(r.reported_tokens for r in replies),
                ttft_p50=statistics.median(ttfts),
                ttft_p95=ttfts[min(len(ttfts) - 1, round(0.95 * (len(ttfts) - 1)))],
                tokens_min=min(counts))


# -- the run ----------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, "6 requests of 64 tokens instead of 12 of 128, one round")
    ap.add_argument("--threads", type=int, default=2, help="every server's (default 2)")
    ap.add_argument("--clients", type=int, default=4, help="concurrent clients (default 4)")
    ap.add_argument("--requests", type=int, default=None, help="in all (default 12)")
    ap.add_argument("--prompt-tokens", type=int, default=300)
    ap.add_argument("--gen-tokens", type=int, default=None, help="default 128")
    ap.add_argument("--rounds", type=int, default=1, help="rounds over the servers")
    ap.add_argument("--servers", default=",".join(SERVERS),
                    help=f"comma-separated, of {', '.join(SERVERS)}")
    args = ap.parse_args(argv)
    names = [s for s in args.servers.split(",") if s]
    if unknown := [s for s in names if s not in SERVERS]:
        ap.error(f"unknown servers {unknown}: choose from {SERVERS}")
    n_req = args.requests or (6 if args.quick else 12)
    n_gen = args.gen_tokens or (64 if args.quick else 128)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    logging.getLogger("httpx").setLevel(logging.WARNING)

    t_start = time.perf_counter()
    model = BUILTIN_MODELS["smollm2-135m"].resolve_path()
    if "llama-server" in names:
        ensure_llama_bench("llama-server")  # built once, before any timing
    vocab = Vocab(model)
    prompts = make_prompts(vocab, n_req + 1, args.prompt_tokens)
    runs: dict[str, list[Load]] = {n: [] for n in names}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for name in (names if r % 2 == 0 else names[::-1]):
                with serve(name, model, args.threads, Path(tmp)) as url:
                    with httpx.Client(timeout=600.0) as http:
                        ask(http, url, prompts[-1], 8)  # warm-up: the model is loaded
                    load = run_load(url, prompts[:n_req], args.clients, n_gen, vocab)
                runs[name].append(load)
                log.info("round %d, %s: %.1f tok/s (%d tokens in %.1f s), TTFT p50 %.2f s "
                         "p95 %.2f s", r + 1, name, load.tps, load.tokens, load.wall,
                         load.ttft_p50, load.ttft_p95)

    med = statistics.median
    out: dict[str, Any] = {"model": "smollm2-135m", "threads": args.threads,
                           "clients": args.clients, "requests": n_req, "gen_tokens": n_gen,
                           "prompt_tokens": args.prompt_tokens, "rounds": args.rounds,
                           "llama_cpp_python": llama_cpp_version()}
    for name in names:
        key = name.replace("-", "_")
        loads = runs[name]
        out[f"{key}_tps"] = med(x.tps for x in loads)
        out[f"{key}_ttft_p50_s"] = med(x.ttft_p50 for x in loads)
        out[f"{key}_ttft_p95_s"] = med(x.ttft_p95 for x in loads)
        out[f"{key}_tokens"] = [x.tokens for x in loads]
        out[f"{key}_reported_tokens"] = [x.reported_tokens for x in loads]
        out[f"{key}_tokens_min"] = min(x.tokens_min for x in loads)
        out[f"{key}_tps_runs"] = [round(x.tps, 1) for x in loads]
    head: dict[str, Any] = {}
    if "ours" in names:
        for other in ("llama-server", "llama-cpp-python"):
            if other in names:
                key = other.replace("-", "_")
                head[f"serve_ratio_{key}"] = out["ours_tps"] / out[f"{key}_tps"]
    out["bench_seconds"] = time.perf_counter() - t_start
    if not args.json:
        print(f"{'server':>17} | {'tok/s':>6} | {'TTFT p50':>8} | {'TTFT p95':>8} | tokens")
        for name in names:
            key = name.replace("-", "_")
            print(f"{name:>17} | {out[f'{key}_tps']:>6.1f} | {out[f'{key}_ttft_p50_s']:>7.2f}s"
                  f" | {out[f'{key}_ttft_p95_s']:>7.2f}s | {out[f'{key}_tokens']}")
    emit({**head, **out}, True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
