"""The thread share leaves to other processes the cores they keep busy (issue 21).

``FreeCores`` reads the busy time of our CPUs from ``/proc/stat`` (here a file the test
writes, in the kernel's format) less this process's own CPU time; a core others keep
busier than 70% is theirs. The real file is read too, against a real busy process.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path

import pytest

from inference.threads import FreeCores, ThreadBudget

CPUS = sorted(os.sched_getaffinity(0))


def write_stat(path: Path, busy_ticks: dict[int, int]) -> None:
    lines = ["cpu  0 0 0 0 0 0 0 0 0 0"]
    for c in CPUS:
        b = busy_ticks.get(c, 0)
        lines.append(f"cpu{c} {b} 0 0 100000 0 0 0 0 0 0")  # user nice system idle iowait...
    path.write_text("\n".join(lines) + "\n")


def test_a_core_others_keep_busy_is_left_to_them(tmp_path):
    stat = tmp_path / "stat"
    write_stat(stat, {})
    free = FreeCores(every_s=0.0, stat=stat)
    tick = os.sysconf("SC_CLK_TCK")
    time.sleep(0.5)
    write_stat(stat, {})
    assert free() == len(CPUS)  # nobody else worked
    t0 = time.monotonic()
    time.sleep(0.5)
    busy = int((time.monotonic() - t0 + 0.05) * tick)  # one CPU busy the whole time
    write_stat(stat, {CPUS[0]: busy})
    assert free() == max(1, len(CPUS) - 1)
    write_stat(stat, {CPUS[0]: busy * 2})  # never fewer than one
    assert free() >= 1


def test_what_others_did_during_a_long_idle_spell_is_not_held_against_now(tmp_path):
    """A core kept busy while we were idle, and quiet since: all cores are ours."""
    stat = tmp_path / "stat"
    write_stat(stat, {})
    free = FreeCores(every_s=0.0, stat=stat, stale_s=0.3, probe_s=0.05)
    time.sleep(0.5)
    tick = os.sysconf("SC_CLK_TCK")
    write_stat(stat, {CPUS[0]: int(0.5 * tick)})  # busy the whole spell, then stopped
    assert free() == len(CPUS)
    # A core still busy now is seen in the fresh window.
    time.sleep(0.5)
    write_stat(stat, {CPUS[0]: int(1.0 * tick)})

    class Busy(FreeCores):
        def _sample(self):
            out = super()._sample()
            if out is not None:  # a core others keep busy during the probe too
                write_stat(stat, {CPUS[0]: int(out[1] * tick) + int(self.probe_s * tick) + 1})
            return out

    busy = Busy(every_s=0.0, stat=stat, stale_s=0.3, probe_s=0.05)
    time.sleep(0.5)
    assert busy() == max(1, len(CPUS) - 1)


def test_the_share_is_the_free_cores_split_between_workers():
    class Fixed(FreeCores):
        def __call__(self) -> int:
            return 1

    budget = ThreadBudget(4, free=Fixed())
    assert budget.share() == 1
    assert ThreadBudget(4, free=FreeCores(stat=Path("/nonexistent"))).share() >= 1


def _spin() -> None:
    while True:
        pass


@pytest.mark.slow
@pytest.mark.skipif(len(CPUS) < 2, reason="needs two cores")
def test_the_real_machine_sees_a_spinning_process():
    free = FreeCores(every_s=0.0)
    free()
    time.sleep(0.3)
    quiet = free()
    spinner = multiprocessing.get_context("spawn").Process(target=_spin, daemon=True)
    spinner.start()
    try:
        time.sleep(1.0)
        free()  # a fresh interval with the spinner running
        time.sleep(1.0)
        assert free() <= quiet - 1 or quiet == 1
    finally:
        spinner.kill()
        spinner.join()
