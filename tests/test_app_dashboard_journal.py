"""The Dashboard in Streamlit's AppTest, started after another process's batch wrote the
store (``tests.cluster_batch``: real fake-server processes, one killed, so that the
batch fails over). The app's own client never served a request: what the page shows
of the batch's failovers, KV links and route decisions it read from the store."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from inference.dashboard.servers import _clock, plain
from tests.conftest import open_app
from tests.test_app_dashboard_servers import card, write_config

PAGE = "app_pages/dashboard.py"
ROOT = Path(__file__).resolve().parents[1]
N = 3


def table(at, column: str) -> pd.DataFrame:
    found = [d.value for d in at.dataframe if column in d.value.columns]
    assert len(found) == 1, f"{len(found)} tables with a {column!r} column"
    return found[0]


def run_batch(db: Path) -> dict:
    done = subprocess.run([sys.executable, "-m", "tests.cluster_batch", str(db), str(N)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_the_dashboard_shows_the_failovers_links_and_decisions_of_a_cli_batch(
        app_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    batch = run_batch(app_data / "grader.db")
    assert len(batch["failovers"]) == 1  # the first request found d1 refusing
    down_at = batch["d1_down_at"]
    assert down_at is not None
    # The app: the same servers, all gone now (the batch stopped them).
    monkeypatch.setenv("GRADER_CONFIG", str(write_config(
        tmp_path / "grader.toml", batch["urls"], ["p", "d1", "d2"])))
    time.sleep(1.1)  # the app's own times fall in a later second than the batch's
    started = time.time()
    at = open_app(PAGE)
    assert not at.exception
    for name in ("p", "d1", "d2"):
        assert ":red-badge[down]" in card(at, name)

    timeline = table(at, "event")
    failover = timeline[timeline["event"].str.contains("failover")]
    assert set(failover["server"]) == {"p", "d2"}  # the pair that served instead
    assert all("decode server d1" in d for d in failover["detail"])
    went_down = timeline[timeline["event"].str.contains("went down")]
    assert list(went_down["server"]) == ["d1"]  # the app saw no server go down: never up
    came_up = timeline[timeline["event"].str.contains("came up")]
    assert set(came_up["server"]) == {"p", "d1", "d2"}  # at the batch's start

    # d1 has been down since the batch saw it go down, not since the app started.
    clock = _clock(down_at)  # the time of day, with the date past midnight
    assert down_at < started
    d1 = plain(f"kvserver at {batch['urls']['d1']} · down since {clock} · ")
    assert any(d1 in c.value for c in at.caption), [c.value for c in at.caption]

    links = table(at, "KV bandwidth (MB/s)")
    measured = links[(links["prefill"] == "p") & (links["decode"] == "d2")]
    assert list(measured["KV bandwidth (MB/s)"]) == ["8"]  # 8000 bytes in 1 ms, N times
    assert list(measured["samples"]) == [N]
    unmeasured = links[(links["prefill"] == "p") & (links["decode"] == "d1")]
    assert "not measured yet" in unmeasured["note"].iloc[0]

    assert f"{N} routing decisions, {N} with a measured outcome" in " ".join(
        c.value for c in at.caption)
    decisions = table(at, "chosen route")
    assert list(decisions["chosen route"]) == ["ship p->d2"] * (N - 1) + ["ship p->d1"]
    assert (decisions["actual (s)"] != "—").all()
    assert len(at.get("plotly_chart")) >= 1  # predicted against actual

    history = table(at, "request")
    assert set(history["request"]) == set(batch["requests"])
    assert list(history["failover"].astype(str).str.contains("d1")).count(True) == 1
