"""Rebuild the bundled example assignments and their sample submissions.

    .venv/bin/python examples/make_examples.py            # everything
    .venv/bin/python examples/make_examples.py --only retail-sales

retail-sales: writes data/ (synthetic, fixed seed), template.ipynb, solution.ipynb and
submissions/*.ipynb. r-joins, r-strings-dates: the template, solution and data are the
seed course's files, kept as copied; only submissions/*.ipynb are written.

Every submission (and the retail solution) is executed for real with nbclient in its
assignment folder (python3 or ir kernel), errors included, so the stored outputs are
what a student's own run would show. Timing metadata is not recorded; cell ids are
fixed. Outputs that depend on the day (R's today()) change between runs.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _course_r  # noqa: E402
import _functions  # noqa: E402
import _levels  # noqa: E402
import _nbtools as nbt  # noqa: E402
import _retail_data  # noqa: E402
import _retail_submissions as rs  # noqa: E402
import _survey  # noqa: E402

log = logging.getLogger("make_examples")

# Submissions that must run without any error, and ones that must show errors.
MUST_RUN_CLEAN = {"complete", "alternative", "wrong_outputs", "hardcoded", "tampered"}
MUST_ERROR = {"runtime_errors", "template_only", "abs_paths", "partial"}


def run_and_write(nb, folder: Path, name: str, kernel: str,
                  must_error: set[str] = MUST_ERROR) -> int:
    start = time.perf_counter()
    errors = nbt.execute(nb, folder, kernel)
    nbt.write(nb, folder / "submissions" / f"{name}.ipynb")
    log.info("  %-16s %d cell(s) with errors  (%.1f s)", name, errors,
             time.perf_counter() - start)
    if name in MUST_RUN_CLEAN and errors:
        raise RuntimeError(f"{folder.name}/{name} should run cleanly but {errors} cell(s) erred")
    if name in must_error and not errors:
        raise RuntimeError(f"{folder.name}/{name} should show errors but ran cleanly")
    return errors


def retail(folder: Path) -> None:
    log.info("retail-sales")
    _retail_data.write(folder / "data")
    built = rs.build_all(rs.run_solution(folder))
    nbt.write(built["template"], folder / "template.ipynb")
    solution = built["solution"]
    if nbt.execute(solution, folder, "python3"):
        raise RuntimeError("the retail-sales solution does not run cleanly")
    nbt.write(solution, folder / "solution.ipynb")
    for name, nb in built["submissions"].items():
        run_and_write(nb, folder, name, "python3")


def functions(folder: Path) -> None:
    log.info("py-functions")
    _functions.write_data(folder / "data")
    nbt.write(_functions.template(), folder / "template.ipynb")
    solution = _functions.solution()
    if nbt.execute(solution, folder, "python3"):
        raise RuntimeError("the py-functions solution does not run cleanly")
    nbt.write(solution, folder / "solution.ipynb")
    for name, (nb, ran) in _functions.submissions().items():
        if ran:
            # partial leaves Questions 3 to 5 as the template has them: nothing errs
            run_and_write(nb, folder, name, "python3", must_error={"template_only"})
        else:  # submitted without running it: no outputs, no execution counts
            nbt.clear_outputs(nb)
            nbt.write(nb, folder / "submissions" / f"{name}.ipynb")


def levels(folder: Path) -> None:
    log.info("py-levels")
    _levels.write_data(folder / "data")
    nbt.write(_levels.template(), folder / "template.ipynb")
    solution = _levels.solution()
    nbt.execute(solution, folder, "python3")
    if _levels.code_errors(solution):  # the answer cell's prose errs, and only it
        raise RuntimeError("the py-levels solution does not run cleanly")
    nbt.write(solution, folder / "solution.ipynb")
    for name, nb in _levels.submissions().items():
        path = folder / "submissions" / f"{name}.ipynb"
        if name in _levels.NEVER_RUN:  # no outputs, no execution counts
            nbt.clear_outputs(nb)
            nbt.write(nb, path)
            continue
        start = time.perf_counter()
        nbt.execute(nb, folder, "python3")
        nbt.write(nb, path)
        errors = _levels.code_errors(nb)
        log.info("  %-16s %d code cell(s) with errors  (%.1f s)", name, len(errors),
                 time.perf_counter() - start)
        if bool(errors) != (name in _levels.OWN_RUN_FAILS):
            raise RuntimeError(f"py-levels/{name}: unexpected errors in cells {errors}")


def survey(folder: Path) -> None:
    log.info("r-sleep-survey")
    _survey.write_data(folder / "data")
    nbt.write(_survey.template(folder), folder / "template.ipynb")
    solution = _survey.solution(folder)
    if nbt.execute(solution, folder, "ir"):
        raise RuntimeError("the r-sleep-survey solution does not run cleanly")
    nbt.write(solution, folder / "solution.ipynb")
    for name, nb in _survey.submissions(folder).items():
        # every submission runs; the template's cells are comments, so nothing errs
        run_and_write(nb, folder, name, "ir", must_error=set())


def course_r(folder: Path, derive) -> None:
    log.info(folder.name)
    for name, nb in derive(folder).items():
        run_and_write(nb, folder, name, "ir")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    jobs = {
        "retail-sales": lambda: retail(HERE / "retail-sales"),
        "py-functions": lambda: functions(HERE / "py-functions"),
        "py-levels": lambda: levels(HERE / "py-levels"),
        "r-sleep-survey": lambda: survey(HERE / "r-sleep-survey"),
        "r-joins": lambda: course_r(HERE / "r-joins", _course_r.joins),
        "r-strings-dates": lambda: course_r(HERE / "r-strings-dates", _course_r.strings_dates),
    }
    parser.add_argument("--only", action="append", choices=sorted(jobs),
                        help="rebuild only this assignment (repeatable)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    log.setLevel(logging.INFO)
    for name in args.only or list(jobs):
        jobs[name]()


if __name__ == "__main__":
    main()
