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
  (target >= 0.5). ``kv_link_busy_ratio``: both again while a process of this
  benchmark spins on one core (``--busy-core``, on by default).
- ``failover_seconds`` (= ``failover_s``): from kill -9 of the decode server the router
  ranks first to the first token of the next request, served by another server, with
  the client's prober at ``probe_interval_s``; ``failover_ttft_before_s``: the same
  request's time to first token before the kill; ``failover_request_s``: kill -> that
  request's whole reply; ``failover_probe_intervals``: what the failover added to the
  time to first token, in probe intervals (target <= 2); ``failover_detect_s``, apart:
  kill -> the client has the server down, and ``failover_down_by`` why.
  ``failover_busy_*``: the same again, with one more decode server, while a process of
  ours spins on one core.
- The balance of requests over 2 + 2 servers: ``python -m bench.balance`` (it builds on
  this module's servers and client).
- ``route_regret``: total time of the routes the router chose / total time of the best
  route in hindsight, over prompt lengths x link speeds (a throttling proxy between the
  prefill and the decode server; the decode server prefills at half speed, as a laptop
  beside a faster box would). Target <= 1.10.
- ``remote_parallel_ratio``: the code and feedback roles through four server processes
  at once / one after the other (2 cores: reported, no target).
"""

from __future__ import annotations

import argparse
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

from .busy import busy_core
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
def bench_handoff(tmp: Path, rounds: int, busy: bool = False) -> dict[str, Any]:
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
        busy_figures: dict[str, Any] = {}
        if busy:
            log.info("  the KV link with a busy core")
            busy_figures = link_busy(c, req)
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
        **busy_figures,
    }


def link_busy(c: DisaggregatedClient, req: GenerationRequest) -> dict[str, Any]:
    """The KV link and the raw copy again while a process of ours spins on one core
    (the prompt is prefilled before the spinner starts: only the move is measured)."""
    cluster = c.backend("code").cluster
    tp, td = cluster.transports["p"], cluster.transports["d"]
    pre = tp.prefill(req)
    with busy_core():
        m = td.decode(req, pre, cluster.endpoints["p"]).metrics
        nbytes = m.kv_bytes or pre.kv_bytes
        raw = raw_copy_bps(nbytes)
    link = nbytes / m.kv_transfer_seconds
    return {"kv_link_busy_mb_s": link / 1e6, "raw_socket_busy_mb_s": raw / 1e6,
            "kv_link_busy_ratio": link / raw}


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
def bench_failover(tmp: Path, busy: bool) -> dict[str, Any]:
    """Kill -9 the decode server the next request would use, quiet and (``busy``) again
    while a process of ours spins on one core; one decode server more for each."""
    conditions = [("failover", False), *([("failover_busy", True)] if busy else [])]
    names = [f"d{i}" for i in range(len(conditions) + 1)]
    out: dict[str, Any] = {"probe_interval_s": PROBE_INTERVAL}
    with servers("prefill", *["decode"] * len(names)) as (p, *ds), \
            client(tmp, {"p": (p.url, "prefill"),
                         **{n: (d.url, "decode") for n, d in zip(names, ds, strict=True)}}) \
            as c:
        procs = dict(zip(names, ds, strict=True))
        for key, spin in conditions:
            log.info("  %s", "with a busy core" if spin else "quiet")
            with busy_core(spin):
                fig = failover_once(c, procs)
            log.info("  %s", fig)
            out.update({f"{key}_{k}": v for k, v in fig.items()})
    out["failover_seconds"] = out["failover_s"]  # the key of earlier runs
    return out


def failover_once(c: DisaggregatedClient, procs: dict[str, ServerProcess]) -> dict[str, Any]:
    """Kill -9 of the decode server the router ranks first, then the next request:
    seconds from the kill to its first token, served by another server (``s``), beside
    the same request's time to first token before the kill (``ttft_before_s``); the
    whole reply (``request_s``); and, apart, when and why the client knew the server
    was down (``detect_s``, ``down_by``)."""
    backend = c.backend("code")
    monitor = backend.cluster.monitor
    req = prompt(100, 8)
    for opt in backend.options(req):  # every live link measured: no request explores
        if opt.choice == "ship":
            backend.run_option(opt, req)
    ttft_before = []
    for _ in range(2):
        first: list[float] = []
        t0 = time.perf_counter()
        c.generate(req, lambda _p, first=first: first or first.append(time.perf_counter()))
        ttft_before.append((first[0] if first else time.perf_counter()) - t0)
    ranked = backend.options(req)[0]
    victim = ranked.pair[1] if ranked.pair else ranked.servers[-1]
    killed_at, t_kill = time.time(), time.perf_counter()
    procs[victim].kill()
    first_token: list[float] = []
    while True:
        try:
            result = c.generate(req, lambda _p: first_token or first_token.append(
                time.perf_counter()))
            break
        except InferenceError as exc:  # counted in the time, then tried again
            log.info("  request failed after the kill: %s", exc)
            first_token.clear()
            if time.perf_counter() > t_kill + 120.0:
                raise
            time.sleep(0.05)
    request_s = time.perf_counter() - t_kill
    to_first = (first_token[0] if first_token else time.perf_counter()) - t_kill
    down = None
    for _ in range(200):  # the prober has 2 intervals, at most; 10 s here
        down = next((e for e in monitor.events(1000) if e.server == victim
                     and e.kind == "down" and e.at >= killed_at), None)
        if down is not None:
            break
        time.sleep(0.05)
    m = result.metrics
    before = statistics.median(ttft_before)
    return {"s": to_first, "ttft_before_s": before, "request_s": request_s,
            "probe_intervals": max(0.0, to_first - before) / PROBE_INTERVAL,
            "detect_s": down.at - killed_at if down else None,
            "down_by": down.detail[:120] if down else "never marked down",
            "served_by": f"{m.prefill_worker}->{m.decode_worker} ({m.method})"}


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
    ap.add_argument("--busy-core", action=argparse.BooleanOptionalAction, default=True,
                    help="also measure the KV link and failover while a process of this "
                         "benchmark spins on one core (default: on; both figures reported)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    for name in ("inference", "httpx"):
        logging.getLogger(name).setLevel(logging.ERROR)
    t_start = time.perf_counter()
    out: dict[str, Any] = {"model": "smollm2-135m"}
    with tempfile.TemporaryDirectory() as tmp:
        log.info("identity, handoff and the KV link (1500-token prompt)...")
        out.update(bench_handoff(Path(tmp), 1 if args.quick else 3, args.busy_core))
        log.info("failover after kill -9 of the decode server...")
        out.update(bench_failover(Path(tmp), args.busy_core))
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
