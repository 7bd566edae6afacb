"""How large a batch is before it is graded: its notebooks, per upload.

A 2,000-notebook ZIP once graded for 21 minutes with nobody asked. ``batch_size``
counts the notebooks of the uploads (ZIPs from their central directories, without
reading the notebooks: ``grader.notebooks.zips.count_notebooks``); over
``MAX_NOTEBOOKS`` (or the limit given) the CLI refuses unless ``--max-notebooks`` raises
the limit (``check_batch_size``) and the Grade page asks the instructor to confirm. No
time is guessed beforehand: the batch's progress measures it as it goes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import ArchiveError, InputError
from ..notebooks.zips import count_notebooks

__all__ = ["MAX_NOTEBOOKS", "BatchSize", "batch_size", "check_batch_size"]

MAX_NOTEBOOKS = 300  # notebooks in one batch graded without being asked to confirm


@dataclass(frozen=True, slots=True)
class BatchSize:
    notebooks: int
    uploads: tuple[tuple[str, int], ...]  # (upload's name, notebooks in it)
    limit: int

    @property
    def over_limit(self) -> bool:
        return self.notebooks > self.limit

    def words(self) -> str:
        """'2,000 notebooks (grades.zip: 2,000)'."""
        zips = [f"{name}: {n:,}" for name, n in self.uploads if name.lower().endswith(".zip")]
        where = f" ({'; '.join(zips)})" if zips else ""
        return f"{self.notebooks:,} notebook{'s' if self.notebooks != 1 else ''}{where}"

    def refusal(self) -> str:
        biggest = max(self.uploads, key=lambda u: u[1], default=("", 0))
        named = f"; {biggest[0]} alone holds {biggest[1]:,}" if biggest[1] > 1 else ""
        return (f"{self.notebooks:,} notebooks to grade{named}: over the limit of "
                f"{self.limit:,} notebooks a batch; split the upload, or raise the limit "
                f"(--max-notebooks {self.notebooks})")


def batch_size(uploads: Sequence[tuple[str, bytes]], limit: int = MAX_NOTEBOOKS) -> BatchSize:
    """The notebooks in ``uploads`` (name, bytes). A ZIP that cannot be read counts 0
    (grading names the problem)."""
    counted = []
    for name, data in uploads:
        if name.lower().endswith(".zip"):
            try:
                counted.append((name, count_notebooks(data, name)))
            except ArchiveError:
                counted.append((name, 0))
        else:
            counted.append((name, 1 if name.lower().endswith(".ipynb") else 0))
    return BatchSize(sum(c for _, c in counted), tuple(counted), limit)


def check_batch_size(size: BatchSize) -> None:
    """Raise InputError, naming the largest upload and the count, over the limit."""
    if size.over_limit:
        biggest = max(size.uploads, key=lambda u: u[1], default=("batch", 0))[0]
        raise InputError(biggest, size.refusal())
