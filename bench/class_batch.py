"""A class through the models: the bundled notebooks graded as one batch, with and without.

    .venv/bin/python -m bench.class_batch [--quick] [--json]

Grades the 10 retail-sales submissions (4 with --quick) as the app grades a batch
(``Grader.grade_many``, cores + 1 notebooks at once, the sandbox running each), three
times in one run: without the models; with the embedded default models decoding one
reply at a time (``decode_batch = 1``, as before continuous batching); and with the
default (``decode_batch = 4``: concurrent replies share one ``llama_decode`` per step).
The last line is one JSON object with each wall time, ``models_over_plain_serial`` and
``models_over_plain_batched`` (wall with models over wall without: the goal is <= 3),
the decode tokens and the largest decode batch seen.

Grades first, models after (issue 33): the class is also graded as the app and the
command line grade it, the model parts in a queue of their own behind the grades
(``grader.service.model_queue``), and ``grades_first_ratio`` is the wall time from the
batch's start to its last deterministic grade, with the models on, over the same class
graded without models just before it: the median of ``--rounds`` such pairs (3), each
pair's model parts drained before the next (target <= 1.25); ``models_done_s`` is when
the first round's last model part ended.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from grader.assignment import load_assignment
from grader.layers.base import GradeOptions
from grader.pipeline import GradeInput, Grader
from grader.service.batch import grade_batch
from grader.service.model_queue import ModelQueue

from .report import emit, parser

log = logging.getLogger("bench.class_batch")
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "retail-sales"


def with_models(assignment, items: list[GradeInput], decode_batch: int,
                workers: int) -> dict[str, float]:
    from inference import DisaggregatedClient, default_config

    with tempfile.TemporaryDirectory() as tmp:
        config = default_config(history_db=Path(tmp) / "h.db")
        routes = {role: dataclasses.replace(r, options={**r.options,
                                                        "decode_batch": decode_batch})
                  for role, r in config.routes.items()}
        with DisaggregatedClient(dataclasses.replace(config, routes=routes)) as client:
            client.warm()
            grader = Grader(assignment, GradeOptions(execute=True, use_llm=True),
                            client=client)
            t0 = time.perf_counter()
            reports = grader.grade_many(items, workers=workers)
            wall = time.perf_counter() - t0
            recent = client.history.recent(10 * len(items))
    failed = [r.file for r in reports if r.status == "error"]
    if failed:
        log.warning("not graded: %s", failed)
    return {"wall_s": round(wall, 1),
            "requests": len(recent),
            "prompt_tokens": sum(m.prompt_tokens for m in recent),
            "cached_tokens": sum(m.cached_tokens for m in recent),
            "prefill_s": round(sum(m.prefill_seconds for m in recent), 1),
            "decode_s": round(sum(m.decode_seconds for m in recent), 1),
            "decode_tokens": sum(m.decode_tokens for m in recent),
            "widest_batch": max((m.decode_batch for m in recent), default=0),
            "model_errors": sum(1 for m in recent if m.error)}


def plain_grades(assignment, items: list[GradeInput], workers: int) -> float:
    """Seconds to grade the class without models (the solution's run already shared)."""
    plain = Grader(assignment, GradeOptions(execute=True, use_llm=False))
    plain.grade(items[0])  # the solution's run, shared by the batch, as in the app
    t0 = time.perf_counter()
    plain.grade_many(items, workers=workers)
    return time.perf_counter() - t0


def grades_first(assignment, items: list[GradeInput], workers: int,
                 rounds: int) -> dict[str, object]:
    """The class graded grades first, in ``rounds`` pairs with a plain grading of it.

    Each pair grades the class without models, then with the models queued behind the
    grades (the model queue drained before the next pair, so no round's model parts run
    under another's grades); the ratio is the median of the pairs' ratios, so a slow
    moment of the machine weighs on both halves of one pair, not on one side only.
    """
    from inference import DisaggregatedClient, default_config

    pairs: list[tuple[float, float]] = []
    models_s: list[float] = []
    with tempfile.TemporaryDirectory() as tmp, DisaggregatedClient(
            default_config(history_db=Path(tmp) / "h.db")) as client:
        client.warm()
        grader = Grader(assignment, GradeOptions(execute=True, use_llm=True), client=client)
        grader.grade_first(items[0])  # the solution's run, shared by the batch, as above
        view = None
        for n in range(rounds):
            plain_s = plain_grades(assignment, items, workers)
            queue = ModelQueue()
            t0 = time.perf_counter()
            result = grade_batch(grader, items, None, workers, models=queue)
            grades_s = time.perf_counter() - t0
            queue.wait(result.batch)
            models_s.append(time.perf_counter() - t0)
            queue.stop()
            view = queue.progress(result.batch)
            pairs.append((plain_s, grades_s))
            log.info("pair %d: without models %.1f s, grades first %.1f s (ratio %.2f), "
                     "model parts done at %.1f s", n + 1, plain_s, grades_s,
                     grades_s / plain_s, models_s[-1])
    ratios = sorted(g / p for p, g in pairs)
    assert view is not None
    return {"pairs": [[round(p, 1), round(g, 1)] for p, g in pairs],
            "ratio": round(statistics.median(ratios), 2),
            "ratio_max": round(ratios[-1], 2),
            "models_done_s": round(models_s[0], 1),
            "model_parts": view.total, "model_parts_failed": view.failed}


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__, "4 notebooks instead of 10")
    ap.add_argument("--workers", type=int, default=(os.cpu_count() or 1) + 1)
    ap.add_argument("--rounds", type=int, default=3,
                    help="(without models, grades first) pairs for grades_first_ratio")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    logging.getLogger("grader").setLevel(logging.WARNING)
    logging.getLogger("inference").setLevel(logging.ERROR)
    assignment = load_assignment(EXAMPLE)
    assert assignment.submissions is not None
    items = [GradeInput.from_path(p) for p in sorted(assignment.submissions.glob("*.ipynb"))]
    items = items[:4] if args.quick else items

    plain_s = plain_grades(assignment, items, args.workers)
    log.info("without models: %d notebooks in %.1f s", len(items), plain_s)
    serial = with_models(assignment, items, 1, args.workers)
    log.info("models, one reply at a time: %s", serial)
    batched = with_models(assignment, items, 4, args.workers)
    log.info("models, batched decode: %s", batched)
    first = grades_first(assignment, items, args.workers, args.rounds)
    log.info("grades first, models after: %s", first)
    emit({"notebooks": len(items), "workers": args.workers, "plain_wall_s": round(plain_s, 1),
          "serial_wall_s": serial["wall_s"], "batched_wall_s": batched["wall_s"],
          "models_over_plain_serial": round(serial["wall_s"] / plain_s, 2),
          "models_over_plain_batched": round(batched["wall_s"] / plain_s, 2),
          "batched_over_serial": round(batched["wall_s"] / serial["wall_s"], 2),
          "requests": batched["requests"],
          "prompt_tokens": batched["prompt_tokens"], "cached_tokens": batched["cached_tokens"],
          "prefill_s_batched": batched["prefill_s"], "decode_s_batched": batched["decode_s"],
          "decode_tokens_serial": serial["decode_tokens"],
          "decode_tokens_batched": batched["decode_tokens"],
          "widest_batch": batched["widest_batch"],
          "model_errors": serial["model_errors"] + batched["model_errors"],
          "grades_first_pairs_s": first["pairs"],
          "grades_first_ratio": first["ratio"], "grades_first_ratio_max": first["ratio_max"],
          "models_done_s": first["models_done_s"],
          "model_parts": first["model_parts"],
          "model_parts_failed": first["model_parts_failed"]}, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
