"""Benchmark of inference across machines: real server processes on 127.0.0.1, in one run.

    .venv/bin/python -m bench.remote --quick --json

Prints progress to stderr and, as the last line of stdout, one JSON object:

- ``remote_identical``: greedy output of a ~1500-token prompt prefilled on one server
  process, its KV pulled by a second process over HTTP, decoded there, equals the
  second server doing it all.
- ``remote_handoff_ratio``: (prefill-side state save + handshake + transfer +
  decode-side load) / the decode server re-prefilling the same prompt (target <= 0.10).
- ``kv_link_ratio``: KV bytes per second achieved between the two servers / a raw
  socket copy of the same number of bytes between two processes on the same loopback
  (target >= 0.5).
- ``failover_seconds``: from kill -9 of the decode server to the next successful
  request through another path, with the client's prober at ``probe_interval_s``
  (target <= 2 probe intervals).
- ``route_regret``: total time of the routes the router chose / total time of the best
  route in hindsight, over prompt lengths x link speeds (a throttling proxy between the
  prefill and the decode server; the decode server prefills at half speed, as a laptop
  beside a faster box would). Target <= 1.10.
- ``remote_parallel_ratio``: the code and feedback roles through four server processes
  at once / one after the other (2 cores: reported, no target).
"""

from __future__ import annotations

import logging
import multiprocessing
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from inference import DisaggregatedClient, GenerationRequest, InferenceError
from inference.config import parse_config
from inference.server.launch import ServerProcess, start_server

from .report import emit, parser
from .tcp_proxy import ThrottlingProxy

log = logging.getLogger("bench.remote")

SYSTEM = "You are a teaching assistant grading a data-analysis notebook. Answer briefly."
CELL = ("Cell {i}: the student loads orders.csv with pandas, joins customers on customer_id, "
        "groups revenue by region and month, and reports the mean order value ({i}). ")
NO_CACHE = ("--prefix-cache-mb", "0")
PROBE_INTERVAL = 1.0


def prompt(n_tokens: int, max_tokens: int = 32) -> GenerationRequest:
    """A request of about ``n_tokens`` prompt tokens (SmolLM2: ~4.3 characters a token)."""
    body = "".join(CELL.format(i=i) for i in range(max(1, int(n_tokens * 4.3 / len(CELL)))))
    return GenerationRequest.chat("code", SYSTEM, body + "\nSummarise the notebook.",
                                  max_tokens=max_tokens, temperature=0.0)


def client(tmp: Path, servers: dict[str, tuple[str, str]], handoff: str = "always",
           roles: dict[str, list[str]] | None = None) -> DisaggregatedClient:
    roles = roles or {"code": list(servers)}
    return DisaggregatedClient(parse_config({
        "engine": {"threads": 2, "history_db": str(tmp / f"h{time.monotonic_ns()}.db")},
        "servers": {n: {"url": url, "role": role} for n, (url, role) in servers.items()},
        "roles": {r: {"backend": "kvserver", "servers": names, "embedded_fallback": False,
                      "options": {"handoff": handoff}} for r, names in roles.items()},
        "health": {"probe_interval": PROBE_INTERVAL, "breaker_failures": 2,
                   "canary_interval": 0},
        "timeouts": {"prefill": 600.0, "first_token": 600.0, "kv_pull": 120.0}}))


@contextmanager
def servers(*roles: str, extra: tuple[str, ...] = NO_CACHE) -> Iterator[list[ServerProcess]]:
    with ExitStack() as stack:
        yield [stack.enter_context(start_server(role=r, extra_args=extra)) for r in roles]


# -- identity, handoff and the link ------------------------------------------------------
def bench_handoff(tmp: Path, rounds: int) -> dict[str, Any]:
    with servers("prefill", "decode") as (p, d), \
            client(tmp, {"p": (p.url, "prefill"), "d": (d.url, "decode")}) as c:
        req = prompt(1500)
        alone_t = c.backend("code").cluster.transports["d"]
        identical, handoff, reprefill, link, raw, kv_bytes, tokens = True, [], [], [], [], 0, 0
        for i in range(rounds):
            log.info("  round %d/%d", i + 1, rounds)
            shipped = c.generate(req)
            alone = alone_t.generate(req)
            m = shipped.metrics
            identical &= shipped.tokens == alone.tokens and m.method == "disaggregated"
            handoff.append(m.handoff_seconds)
            reprefill.append(alone.metrics.prefill_seconds)
            link.append(m.kv_bytes / m.kv_transfer_seconds)
            raw.append(raw_copy_bps(m.kv_bytes))
            kv_bytes, tokens = m.kv_bytes, m.prompt_tokens
    return {
        "remote_identical": identical,
        "remote_prompt_tokens": tokens,
        "remote_kv_mb": kv_bytes / 1e6,
        "remote_handoff_seconds": statistics.median(handoff),
        "remote_reprefill_seconds": statistics.median(reprefill),
        "remote_handoff_ratio": statistics.median(handoff) / statistics.median(reprefill),
        "kv_link_mb_s": statistics.median(link) / 1e6,
        "raw_socket_mb_s": statistics.median(raw) / 1e6,
        "kv_link_ratio": statistics.median(link) / statistics.median(raw),
    }


def _sink(port: int, nbytes: int) -> None:
    """Receive ``nbytes`` into one buffer, as a decode server receives KV."""
    buf = memoryview(bytearray(nbytes))
    with socket.create_connection(("127.0.0.1", port)) as s:
        got = 0
        while got < nbytes:
            n = s.recv_into(buf[got:])
            if not n:
                break
            got += n
        s.sendall(b"k")


def raw_copy_bps(nbytes: int) -> float:
    """Bytes/s of one process sending ``nbytes`` from memory to another on loopback:
    the most a KV transfer of that size could reach here."""
    data = memoryview(bytes(nbytes))
    with socket.create_server(("127.0.0.1", 0)) as srv:
        port = srv.getsockname()[1]
        proc = multiprocessing.get_context("spawn").Process(target=_sink, args=(port, nbytes))
        proc.start()
        conn, _ = srv.accept()
        with conn:
            t0 = time.perf_counter()
            for start in range(0, nbytes, 1 << 20):
                conn.sendall(data[start:start + (1 << 20)])
            conn.recv(1)  # the receiver has everything
            seconds = time.perf_counter() - t0
        proc.join(10)
    return nbytes / seconds


# -- failover ---------------------------------------------------------------------------
def bench_failover(tmp: Path) -> dict[str, Any]:
    with servers("prefill", "decode", "decode") as (p, d, d2), \
            client(tmp, {"p": (p.url, "prefill"), "d": (d.url, "decode"),
                         "d2": (d2.url, "decode")}) as c:
        req = prompt(100, 8)
        c.generate(req)  # warm: every server has served
        t_kill = time.perf_counter()
        d.kill()
        deadline = t_kill + 120.0
        while True:
            try:
                result = c.generate(req)
                break
            except InferenceError as exc:  # counted in the time, then tried again
                log.info("  request failed after the kill: %s", exc)
                if time.perf_counter() > deadline:
                    raise
        seconds = time.perf_counter() - t_kill
    return {"failover_seconds": seconds, "probe_interval_s": PROBE_INTERVAL,
            "failover_served_by": f"{result.metrics.prefill_worker}->"
                                  f"{result.metrics.decode_worker} ({result.metrics.method})"}


# -- routing ----------------------------------------------------------------------------
def bench_routing(tmp: Path, lengths: list[int], rates: list[float | None]) -> dict[str, Any]:
    chosen_total = best_total = 0.0
    rows = []
    # KV over HTTP (no data port) so that it passes through the throttled link.
    with servers("prefill", extra=(*NO_CACHE, "--kv-port", "-1")) as (p,), \
            servers("decode", extra=(*NO_CACHE, "--threads", "1")) \
            as (d,), ThrottlingProxy("127.0.0.1", int(p.url.rsplit(":", 1)[1])) as link:
        for rate in rates:
            link.set_rate(rate)
            with client(tmp, {"p": (link.url, "prefill"), "d": (d.url, "decode")},
                        handoff="auto") as c:
                backend = c.backend("code")
                for n in (80, lengths[-1] // 2):  # learn the link and both speeds
                    for opt in backend.options(prompt(n, 4)):
                        if opt.choice in ("ship", "self"):
                            backend.run_option(opt, prompt(n, 4))
                for n in lengths:
                    req = prompt(n, 8)
                    opts = {o.choice: o for o in backend.options(req)}
                    chosen = backend.options(req)[0]
                    times = {k: _timed(backend, o, req) for k, o in opts.items()
                             if k in ("ship", "self")}
                    got = times[chosen.choice]
                    best = min(times.values())
                    chosen_total += got
                    best_total += best
                    rows.append({"link_mb_s": None if rate is None else rate / 1e6,
                                 "tokens": n, "chosen": chosen.choice,
                                 "predicted_s": round(chosen.predicted_s, 2),
                                 **{f"{k}_s": round(v, 2) for k, v in times.items()}})
                    log.info("  %s", rows[-1])
    return {"route_regret": chosen_total / best_total, "route_cases": rows}


def _timed(backend: Any, opt: Any, req: GenerationRequest) -> float:
    t0 = time.perf_counter()
    backend.run_option(opt, req)
    return time.perf_counter() - t0


# -- two roles in parallel ------------------------------------------------------------
def bench_parallel(tmp: Path) -> dict[str, Any]:
    with servers("prefill", "decode", "prefill", "decode") as (p1, d1, p2, d2), \
            client(tmp, {"p1": (p1.url, "prefill"), "d1": (d1.url, "decode"),
                         "p2": (p2.url, "prefill"), "d2": (d2.url, "decode")},
                   roles={"code": ["p1", "d1"], "feedback": ["p2", "d2"]}) as c:
        reqs = [prompt(400, 48), GenerationRequest.chat(
            "feedback", SYSTEM, prompt(400, 48).messages[-1].content, max_tokens=48,
            temperature=0.0)]
        c.generate_many(reqs)  # warm both pairs
        t0 = time.perf_counter()
        for r in reqs:
            c.generate(r)
        serial = time.perf_counter() - t0
        t0 = time.perf_counter()
        c.generate_many(reqs)
        parallel = time.perf_counter() - t0
    return {"remote_parallel_ratio": parallel / serial}


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, "1 handoff round instead of 3, 2x2 routing cases instead of 3x3")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    for name in ("inference", "httpx"):
        logging.getLogger(name).setLevel(logging.ERROR)
    t_start = time.perf_counter()
    out: dict[str, Any] = {"model": "smollm2-135m"}
    with tempfile.TemporaryDirectory() as tmp:
        log.info("identity, handoff and the KV link (1500-token prompt)...")
        out.update(bench_handoff(Path(tmp), 1 if args.quick else 3))
        log.info("failover after kill -9 of the decode server...")
        out.update(bench_failover(Path(tmp)))
        log.info("routing: prompt lengths x link speeds...")
        lengths = [300, 1200] if args.quick else [150, 600, 1500]
        rates: list[float | None] = [None, 2e6] if args.quick else [None, 20e6, 2e6]
        out.update(bench_routing(Path(tmp), lengths, rates))
        log.info("two roles through four servers...")
        out.update(bench_parallel(Path(tmp)))
    out["bench_seconds"] = time.perf_counter() - t_start
    emit(out, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
