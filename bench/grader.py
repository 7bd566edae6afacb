"""Benchmark of the deterministic grader (layers 1 and 2) on the bundled Python example.

    .venv/bin/python -m bench.grader --quick --json

Prints progress to stderr and, as the last line of stdout, one JSON object:

- ``static_notebooks_per_s``: notebooks per second through loading, template
  matching, layer 1 and layer 2 without execution (scored from stored outputs),
  i.e. what a class's worth of re-scoring costs after a rubric edit. Each repetition
  starts without what the injection scan remembers (the instructor's text, every text
  it scanned): it costs what a first grading of the 10 notebooks costs.
- ``exec_notebooks_per_s``: notebooks per second with execution in the sandbox
  (a fresh kernel per notebook; the solution's run is shared and done first).

``--profile`` runs only the static repetitions under cProfile and prints the 30
functions of most cumulative time to stderr (what to look at when the figure drops).

With ``--llm`` it also grades the submissions through all four layers, one at a
time, on the embedded default models, and adds ``llm_seconds_per_notebook_median``
(wall time per notebook, execution included), ``llm_cached_share`` (share of
prompt tokens the prefix cache skipped) and ``llm_parallel_efficiency`` (busy
time of the two model requests / their wall time; 2.0 is full overlap).
"""

from __future__ import annotations

import cProfile
import logging
import os
import pstats
import sys
import time
from pathlib import Path

from grader.assignment import load_assignment
from grader.layers.base import GradeOptions
from grader.pipeline import GradeInput, Grader

from .report import emit, parser

log = logging.getLogger("bench.grader")
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "retail-sales"


def bench_llm(assignment, items: list[GradeInput]) -> dict[str, float]:
    import statistics
    import tempfile

    from inference import DisaggregatedClient, default_config

    with tempfile.TemporaryDirectory() as tmp, DisaggregatedClient(
            default_config(history_db=Path(tmp) / "h.db")) as client:
        grader = Grader(assignment, GradeOptions(execute=True, use_llm=True), client=client)
        grader.grade(items[0])  # load the models, run the solution, fill the prefix cache
        times, prompt, cached, eff = [], 0, 0, []
        for item in items:
            t0 = time.perf_counter()
            report = grader.grade(item)
            times.append(time.perf_counter() - t0)
            for name in ("L3", "L4"):
                d = report.layers[name].details if name in report.layers else {}
                prompt += d.get("prompt_tokens", 0)
                cached += d.get("cached_tokens", 0)
            if "L3" in report.layers and "parallel_efficiency" in report.layers["L3"].details:
                eff.append(report.layers["L3"].details["parallel_efficiency"])
            log.info("llm: %s in %.1f s", item.name, times[-1])
    return {"llm_seconds_per_notebook_median": round(statistics.median(times), 2),
            "llm_seconds_per_notebook_max": round(max(times), 2),
            "llm_cached_share": round(cached / prompt, 3) if prompt else 0.0,
            "llm_parallel_efficiency": round(statistics.median(eff), 2) if eff else 0.0}


def forget_injection_scans(grader: Grader) -> None:
    """Drop what the injection scan remembered (``grader.integrity.injection_places``
    keeps it in the assignment's cache: the instructor's text and its ``ScanMemo``)."""
    ctx = grader.context
    with ctx.lock:
        for key in [k for k in ctx.cache if k.startswith("injection_")]:
            del ctx.cache[key]


def time_static(grader: Grader, items: list[GradeInput], repeats: int,
                profile: cProfile.Profile | None = None) -> float:
    """Seconds for ``repeats`` gradings of ``items``, each as a first one."""
    total = 0.0
    for _ in range(repeats):
        forget_injection_scans(grader)
        if profile is not None:
            profile.enable()
        t0 = time.perf_counter()
        grader.grade_many(items)
        total += time.perf_counter() - t0
        if profile is not None:
            profile.disable()
    return total


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, "fewer repetitions")
    ap.add_argument("--llm", action="store_true", help="also time all four layers")
    ap.add_argument("--profile", action="store_true",
                    help="profile the static path only (cProfile, top 30 on stderr)")
    # One more worker than cores: a notebook's run waits on kernel start-up and IPC
    # part of the time, so two workers leave a 2-core machine partly idle.
    ap.add_argument("--workers", type=int, default=(os.cpu_count() or 1) + 1)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    logging.getLogger("grader").setLevel(logging.WARNING)

    assignment = load_assignment(EXAMPLE)
    assert assignment.submissions is not None
    items = [GradeInput.from_path(p) for p in sorted(assignment.submissions.glob("*.ipynb"))]

    static = Grader(assignment, GradeOptions(execute=False))
    repeats = 5 if args.quick else 20
    static.grade_many(items)  # warm caches (imports, regexes)
    if args.profile:
        profile = cProfile.Profile()
        time_static(static, items, repeats, profile)
        pstats.Stats(profile, stream=sys.stderr).sort_stats("cumulative").print_stats(30)
        return 0
    static_s = time_static(static, items, repeats)
    static_rate = repeats * len(items) / static_s
    log.info("static: %d notebooks in %.2f s", repeats * len(items), static_s)

    execg = Grader(assignment, GradeOptions(execute=True))
    t0 = time.perf_counter()
    execg.grade(items[0])  # runs the solution once (shared) and the first submission
    warm_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    reports = execg.grade_many(items, workers=args.workers)
    exec_s = time.perf_counter() - t0
    exec_rate = len(items) / exec_s
    log.info("exec: %d notebooks in %.2f s with %d workers (solution + first: %.2f s)",
             len(items), exec_s, args.workers, warm_s)
    out = {
        "notebooks": len(items),
        "static_notebooks_per_s": round(static_rate, 2),
        "exec_notebooks_per_s": round(exec_rate, 3),
        "exec_workers": args.workers,
        "exec_seconds": round(exec_s, 2),
        "sandboxed": all(r.layers["L2"].details.get("sandboxed", False) for r in reports
                         if r.layers["L2"].details.get("executed", True)),
    }
    if args.llm:
        out.update(bench_llm(assignment, items))
    emit(out, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
