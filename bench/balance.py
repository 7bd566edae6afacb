"""Balanced routing (issue 23): N requests at once over two prefill and two decode
servers, through the router, against the best static split of the same requests.

    .venv/bin/python -m bench.balance --quick     # ~1 minute on 2 cores

Four ``python -m inference.server`` processes on 127.0.0.1 (SmolLM2, one thread each,
prefix reuse off), one client with a ``kvserver`` route over them (``handoff =
always``). The same N requests (~300 prompt tokens, 32 tokens each) are sent at once
twice per round, alternating which goes first: through the router (``generate_many``),
and split statically, each request pinned to one of the four pairs in turn (p1->d1,
p2->d2, p1->d2, p2->d1: every server gets N/2). Figures (medians over the rounds):
- ``balance_share_max``: the busiest server's share of its role's work (the tokens it
  prefilled or decoded, from the servers' own metrics) over its fair share (1/2): 1.0
  is even, target <= 1.3. Tokens, not seconds: a decode server that batched four replies
  reports each reply's whole wall time, so its seconds add up to about four times the
  work it did; ``balance_requests``: how many requests each server served;
- ``balance_makespan_ratio``: the router's wall time over the static split's, target
  <= 1.2.
"""

from __future__ import annotations

import logging
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from inference import DisaggregatedClient, GenerationRequest

from .remote import NO_CACHE, client, prompt, servers
from .report import emit, parser

log = logging.getLogger("bench.balance")
PAIRS = (("p1", "d1"), ("p2", "d2"), ("p1", "d2"), ("p2", "d1"))


def _requests(n: int) -> list[GenerationRequest]:
    base = prompt(300, 32)
    return [GenerationRequest.chat("code", base.messages[0].content,
                                   f"Student {i}: " + base.messages[-1].content,
                                   max_tokens=32, temperature=0.0) for i in range(n)]


def _routed(c: DisaggregatedClient, reqs: list[GenerationRequest]) -> tuple[float, list]:
    t0 = time.perf_counter()
    results = c.generate_many(reqs)
    return time.perf_counter() - t0, results


def _static(c: DisaggregatedClient, reqs: list[GenerationRequest]) -> tuple[float, list]:
    backend = c.backend("code")
    results: list[Any] = [None] * len(reqs)

    def one(i: int) -> None:
        pair = PAIRS[i % len(PAIRS)]
        opt = next(o for o in backend.options(reqs[i]) if o.pair == pair)
        results[i] = backend.run_option(opt, reqs[i])

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(reqs))]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - t0, results


def _shares(results: list) -> tuple[float, dict[str, int]]:
    work: dict[str, dict[str, float]] = {"prefill": defaultdict(float),
                                         "decode": defaultdict(float)}
    served: Counter[str] = Counter()
    for r in results:
        m = r.metrics
        work["prefill"][m.prefill_worker] += m.prefill_tokens
        work["decode"][m.decode_worker] += m.decode_evals or m.decode_tokens
        served[m.prefill_worker] += 1
        served[m.decode_worker] += 1
    worst = 0.0
    for role, names in (("prefill", ("p1", "p2")), ("decode", ("d1", "d2"))):
        total = sum(work[role][n] for n in names) or 1.0
        worst = max(worst, *(work[role][n] / total / 0.5 for n in names))
    return worst, dict(sorted(served.items()))


def bench_balance(tmp: Path, n: int, rounds: int) -> dict[str, Any]:
    extra = (*NO_CACHE, "--threads", "1")
    with servers("prefill", "prefill", "decode", "decode", extra=extra) as (p1, p2, d1, d2), \
            client(tmp, {"p1": (p1.url, "prefill"), "p2": (p2.url, "prefill"),
                         "d1": (d1.url, "decode"), "d2": (d2.url, "decode")}) as c:
        reqs = _requests(n)
        _static(c, reqs[:4])  # every pair once: links and speeds measured, models warm
        routed_s, static_s, shares, served = [], [], [], []
        for r in range(rounds):
            for step in ((_routed, _static) if r % 2 == 0 else (_static, _routed)):
                wall, results = step(c, reqs)
                if step is _routed:
                    routed_s.append(wall)
                    share, count = _shares(results)
                    shares.append(share)
                    served.append(count)
                else:
                    static_s.append(wall)
            log.info("round %d: routed %.1f s (share max %.2f, %s), static %.1f s", r + 1,
                     routed_s[-1], shares[-1], served[-1], static_s[-1])
    med = statistics.median
    return {"balance_requests_n": n, "balance_share_max": med(shares),
            "balance_requests": served[-1],
            "balance_makespan_ratio": med(routed_s) / med(static_s),
            "balance_routed_s": [round(x, 2) for x in routed_s],
            "balance_static_s": [round(x, 2) for x in static_s]}


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, "8 requests and 2 rounds instead of 16 and 3")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    for name in ("inference", "httpx"):
        logging.getLogger(name).setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as tmp:
        out = bench_balance(Path(tmp), 8 if args.quick else 16, 2 if args.quick else 3)
    emit(out, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
