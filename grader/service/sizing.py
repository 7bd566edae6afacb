"""How large a batch is before it is graded: notebooks, per upload, and a time estimate.

A 2,000-notebook ZIP once graded for 21 minutes with nobody asked. ``batch_size``
counts the notebooks of the uploads (ZIPs from their central directories, without
reading the notebooks: ``grader.notebooks.zips.count_notebooks``) and estimates the
time; over ``MAX_NOTEBOOKS`` (or the limit given) the CLI refuses unless
``--max-notebooks`` raises the limit (``check_batch_size``) and the Grade page asks the
instructor to confirm. The estimate is rough: ``SECONDS_PER_NOTEBOOK`` for each part
that runs, divided by the notebooks graded at once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import ArchiveError, InputError
from ..layers.base import GradeOptions
from ..notebooks.zips import count_notebooks

__all__ = ["MAX_NOTEBOOKS", "BatchSize", "batch_size", "check_batch_size"]

MAX_NOTEBOOKS = 300  # notebooks in one batch graded without being asked to confirm
# rough seconds a notebook takes, one at a time: reading it, running it, the models
SECONDS_PER_NOTEBOOK = {"read": 1.0, "run": 15.0, "models": 30.0}


@dataclass(frozen=True, slots=True)
class BatchSize:
    notebooks: int
    uploads: tuple[tuple[str, int], ...]  # (upload's name, notebooks in it)
    estimate_s: float
    limit: int

    @property
    def over_limit(self) -> bool:
        return self.notebooks > self.limit

    def estimate(self) -> str:
        minutes = self.estimate_s / 60
        return (f"about {math.ceil(minutes)} minute{'s' if math.ceil(minutes) > 1 else ''}"
                if minutes >= 1 else "under a minute")

    def words(self) -> str:
        """'2,000 notebooks (grades.zip: 2,000), about 21 minutes'."""
        zips = [f"{name}: {n:,}" for name, n in self.uploads if name.lower().endswith(".zip")]
        where = f" ({'; '.join(zips)})" if zips else ""
        return (f"{self.notebooks:,} notebook{'s' if self.notebooks != 1 else ''}{where}, "
                f"{self.estimate()}")

    def refusal(self) -> str:
        biggest = max(self.uploads, key=lambda u: u[1], default=("", 0))
        named = f"; {biggest[0]} alone holds {biggest[1]:,}" if biggest[1] > 1 else ""
        return (f"{self.notebooks:,} notebooks to grade{named}: over the limit of "
                f"{self.limit:,} notebooks a batch ({self.estimate()} to grade); split the "
                f"upload, or raise the limit (--max-notebooks {self.notebooks})")


def batch_size(uploads: Sequence[tuple[str, bytes]], options: GradeOptions | None = None,
               workers: int = 1, limit: int = MAX_NOTEBOOKS) -> BatchSize:
    """The notebooks in ``uploads`` (name, bytes), and a rough time to grade them. A ZIP
    that cannot be read counts 0 (grading names the problem)."""
    counted = []
    for name, data in uploads:
        if name.lower().endswith(".zip"):
            try:
                counted.append((name, count_notebooks(data, name)))
            except ArchiveError:
                counted.append((name, 0))
        else:
            counted.append((name, 1 if name.lower().endswith(".ipynb") else 0))
    n, options = sum(c for _, c in counted), options or GradeOptions()
    each = SECONDS_PER_NOTEBOOK["read"] + (SECONDS_PER_NOTEBOOK["run"] if options.execute
                                           else 0) \
        + (SECONDS_PER_NOTEBOOK["models"] if options.use_llm else 0)
    return BatchSize(n, tuple(counted), n * each / max(1, workers), limit)


def check_batch_size(size: BatchSize) -> None:
    """Raise InputError, naming the largest upload and the count, over the limit."""
    if size.over_limit:
        biggest = max(size.uploads, key=lambda u: u[1], default=("batch", 0))[0]
        raise InputError(biggest, size.refusal())
