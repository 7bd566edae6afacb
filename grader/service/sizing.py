"""How large a batch is, and how much of it is held in memory at once.

No class is too large to grade: a batch is graded in chunks (``grader.service.chunks``),
each a run of notebooks whose bytes are fetched together, graded, saved and let go, so
that what a batch holds does not grow with the class. ``chunk_budget`` says how many bytes
of notebooks a chunk may hold, from the memory available when the batch starts
(``memory_available``: MemAvailable, or the cgroup's room where it is smaller) after
setting aside what the notebooks' runs may take (``--memory-mb`` + 512 MB each, the
cap of a run's processes together); ``chunks`` cuts the batch. What was measured (2
cores, ``--no-exec``): a chunk holds its notebooks' bytes once; a notebook being graded
takes 2.3 to 4 times its size again while parsed (per worker, whatever the chunk); a
report kept for the batch's end ~36 KB (8 to 13 KB as JSON); the grader itself ~100 MB.
A chunk is at most an eighth of what is left (``CHUNK_SHARE``), between ``CHUNK_MIN``
and ``CHUNK_MAX``, and never fewer notebooks than workers (so none waits); ``most``
caps its notebooks (``grade --chunk``). Past ``CHUNK_MAX`` nothing is gained: 2,087
notebooks of ~100 KB graded in 18 s with chunks of 64 MB and of 50 notebooks alike, at
a peak of 180 MB and 119 MB (440 MB when the class was held whole).

``batch_size`` counts the notebooks of the uploads (ZIPs from their central directories,
without reading the notebooks: ``grader.notebooks.zips.count_notebooks``). The Grade page
asks the instructor to confirm a batch of more than ``CONFIRM_ABOVE`` notebooks, with the
count: a batch holds the page's Grade button (and, with the models, the models) until it
ends, and a class of thousands takes hours, so one wrong ZIP (a whole term's archive)
must not start that unasked. The command line asks nothing: its user named the files.
No time is guessed beforehand: the batch's progress measures it as it goes.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import ArchiveError
from ..notebooks.zips import count_notebooks

__all__ = ["CHUNK_MAX", "CHUNK_MIN", "CHUNK_SHARE", "CONFIRM_ABOVE", "RUN_OVERHEAD_MB",
           "BatchSize", "batch_size", "chunk_budget", "chunks", "memory_available"]

CONFIRM_ABOVE = 300  # notebooks in one batch graded in the app without being asked to confirm
MB = 1 << 20
CHUNK_SHARE = 8  # a chunk's notebooks take at most this part of the memory left
CHUNK_MIN = 8 * MB
CHUNK_MAX = 64 * MB  # past it, a larger chunk saves nothing measurable (a few store reads)
RUN_OVERHEAD_MB = 512  # a run's cgroup: its processes' cap plus the runner's


@dataclass(frozen=True, slots=True)
class BatchSize:
    notebooks: int
    uploads: tuple[tuple[str, int], ...]  # (upload's name, notebooks in it)
    confirm_above: int = CONFIRM_ABOVE

    @property
    def needs_confirmation(self) -> bool:
        return self.notebooks > self.confirm_above

    def words(self) -> str:
        """'2,000 notebooks (grades.zip: 2,000)'."""
        zips = [f"{name}: {n:,}" for name, n in self.uploads if name.lower().endswith(".zip")]
        where = f" ({'; '.join(zips)})" if zips else ""
        return f"{self.notebooks:,} notebook{'s' if self.notebooks != 1 else ''}{where}"


def batch_size(uploads: Sequence[tuple[str, bytes]], confirm_above: int = CONFIRM_ABOVE
               ) -> BatchSize:
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
    return BatchSize(sum(c for _, c in counted), tuple(counted), confirm_above)


def chunk_budget(available: int | None, workers: int = 1, run_memory_mb: int = 0) -> int:
    """Bytes of notebooks one chunk may hold: ``CHUNK_SHARE``-th of the memory ``available``
    (bytes; None: unknown, ``CHUNK_MAX``) once ``workers`` runs of ``run_memory_mb`` each
    (0: notebooks not run) are set aside, between ``CHUNK_MIN`` and ``CHUNK_MAX``."""
    if available is None:
        return CHUNK_MAX
    runs = workers * (run_memory_mb + RUN_OVERHEAD_MB) * MB if run_memory_mb else 0
    return max(CHUNK_MIN, min(CHUNK_MAX, (available - runs) // CHUNK_SHARE))


def chunks(sizes: Sequence[int], budget: int, least: int = 1, most: int | None = None
           ) -> list[range]:
    """``range(len(sizes))`` cut into consecutive runs: each holds at least ``least`` items
    (and at most ``most``), and more only while their ``sizes`` add up to ``budget``."""
    out: list[range] = []
    start, held = 0, 0
    for i, size in enumerate(sizes):
        count = i - start
        if count and ((most is not None and count >= most)
                      or (count >= least and held + size > budget)):
            out.append(range(start, i))
            start, held = i, 0
        held += size
    if start < len(sizes):
        out.append(range(start, len(sizes)))
    return out


def memory_available() -> int | None:
    """Bytes of memory this process may still take: the kernel's MemAvailable, or less
    where this process's cgroup (v2) caps it lower; None where neither can be read."""
    found = [n for n in (_meminfo_available(), _cgroup_room()) if n is not None]
    return min(found) if found else None


def _meminfo_available() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return None


def _cgroup_room() -> int | None:
    """memory.max - memory.current of this process's cgroup v2, if it has a limit."""
    try:
        line = next(x for x in Path("/proc/self/cgroup").read_text().splitlines()
                    if x.startswith("0::"))
        group = Path("/sys/fs/cgroup") / line[3:].lstrip("/")
        limit = (group / "memory.max").read_text().strip()
        if limit == "max":
            return None
        return int(limit) - int((group / "memory.current").read_text())
    except (OSError, ValueError, StopIteration):
        return None
