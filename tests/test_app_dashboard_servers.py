"""The Dashboard page's machines in Streamlit's AppTest, with a config (GRADER_CONFIG)
whose role is served by remote ``kvserver`` servers: addresses nobody listens on (down
from the start), and, in the ``llm`` test, a real ``python -m inference.server``
process reached directly and through a TCP proxy that the test closes, so that the
next request fails over."""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import urlsplit

import pandas as pd
import pytest

from bench.tcp_proxy import ThrottlingProxy
from inference.metrics import MetricsHistory
from inference.types import RequestMetrics
from tests.conftest import open_app
from tests.server_procs import free_port, start_server

PAGE = "app_pages/dashboard.py"


def write_config(path: Path, servers: dict[str, str], route: list[str],
                 mode: str = "disaggregated") -> Path:
    """One role, ``code``, served by ``route`` (of ``servers``: name -> url). A failure
    opens a circuit at once; probes after start-up are rare, so what the page shows
    comes from the start-up probe and from real requests."""
    lines = ['[roles.code]', 'backend = "kvserver"', 'model = "smollm2-135m"',
             f'mode = "{mode}"',
             f"servers = {route!r}".replace("'", '"'), "max_tokens = 8", "",
             "[health]", "probe_interval = 600", "breaker_failures = 1",
             "canary_interval = 0", ""]
    for name, url in servers.items():
        lines += [f"[servers.{name}]", f'url = "{url}"', 'role = "both"', ""]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def fill_history(data: Path, served: dict[str, int]) -> None:
    """``served[name]`` requests prefilled and decoded on ``name``, in the last hour."""
    now = time.time()
    h = MetricsHistory(data / "grader.db")
    i = 0
    for name, n in served.items():
        for _ in range(n):
            h.record(RequestMetrics(
                request_id=f"req-{i:03d}", role="code", route="code:kvserver/smollm2-135m",
                method="single", prefill_worker=name, decode_worker=name, prefill_tokens=50,
                prefill_seconds=0.2, decode_evals=8, decode_seconds=0.1, ttft_seconds=0.25,
                total_seconds=0.4, started_at=now - 1800 + 60 * i))
            i += 1
    h.close()


def table(at, column: str) -> pd.DataFrame:
    found = [d.value for d in at.dataframe if column in d.value.columns]
    assert len(found) == 1, f"{len(found)} tables with a {column!r} column"
    return found[0]


def card(at, name: str) -> str:
    """The first line of ``name``'s server card: name, state badge, circuit badge."""
    (line,) = [m.value for m in at.markdown if m.value.startswith(f"**{name}** ")]
    return line


def test_servers_nobody_listens_on_are_down_and_the_filter_narrows(
        app_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    urls = {name: f"http://127.0.0.1:{free_port()}" for name in ("alpha", "beta")}
    monkeypatch.setenv("GRADER_CONFIG", str(write_config(tmp_path / "grader.toml", urls,
                                                         ["alpha", "beta"])))
    fill_history(app_data, {"alpha": 3, "beta": 2, "code/prefill": 1})
    at = open_app(PAGE)
    assert not at.exception
    assert [s.value for s in at.subheader][:2] == ["Servers", "Timeline"]  # no embedded
    for name in ("alpha", "beta"):
        assert ":red-badge[down]" in card(at, name)
        assert ":red-badge[circuit open]" in card(at, name)
    captions = " ".join(c.value for c in at.caption)
    assert "Last error" in captions
    assert "ConnectError" in captions
    timeline = table(at, "event")
    opened = timeline[timeline["event"].str.contains("circuit opened")]
    assert set(opened["server"]) == {"alpha", "beta"}
    links = table(at, "KV bandwidth (MB/s)")
    assert set(zip(links["prefill"], links["decode"], strict=True)) == {("alpha", "beta"),
                                                                        ("beta", "alpha")}
    assert (links["KV bandwidth (MB/s)"] == "—").all()  # not measured yet: a dash
    assert any(c.value == "No routing decision yet." for c in at.caption)
    # The server filter: the prefill or the decode worker.
    server = at.selectbox(key="dash_server")
    assert server.options == ["Any", "alpha", "beta", "code/prefill"]
    assert len(table(at, "request")) == 6
    assert "failover" not in table(at, "request").columns  # nothing failed over
    server.set_value("alpha").run()
    history = table(at, "request")
    assert list(history["request"]) == ["req-002", "req-001", "req-000"]
    assert set(history["prefill worker"]) == {"alpha"}
    at.selectbox(key="dash_server").set_value("beta").run()
    assert list(table(at, "request")["request"]) == ["req-004", "req-003"]
    at.selectbox(key="dash_server").set_value("Any").run()
    assert len(table(at, "request")) == 6


@pytest.mark.llm
@pytest.mark.slow
def test_a_server_that_dies_is_down_and_the_timeline_names_the_failover(
        app_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    live = start_server(extra_args=("--threads", "2", "--n-ctx", "2048"))
    port = urlsplit(live.url).port
    assert port is not None
    proxy = ThrottlingProxy("127.0.0.1", port)
    try:
        urls = {"flaky": proxy.url, "live": live.url,
                "dead": f"http://127.0.0.1:{free_port()}"}
        # One server per request, the least loaded; on a tie the first by name: "flaky".
        monkeypatch.setenv("GRADER_CONFIG", str(write_config(
            tmp_path / "grader.toml", urls, ["live", "flaky", "dead"], mode="single")))
        fill_history(app_data, {"flaky": 4, "live": 2})
        at = open_app(PAGE)
        assert not at.exception
        assert ":green-badge[up]" in card(at, "flaky")
        assert ":green-badge[up]" in card(at, "live")
        assert ":red-badge[down]" in card(at, "dead")
        captions = " ".join(c.value for c in at.caption)
        assert "smollm2" in captions  # the model the live server reported

        proxy.close()  # "flaky" dies: its address now refuses connections
        at.text_area(key="dash_prompt_user").set_value("Name one fruit.")
        at.number_input(key="dash_prompt_max_tokens").set_value(8)
        (button,) = [b for b in at.button if b.label == "Generate"]
        button.click().run()
        assert not at.exception
        assert not at.error

        assert ":red-badge[down]" in card(at, "flaky")
        assert ":red-badge[circuit open]" in card(at, "flaky")
        assert ":green-badge[up]" in card(at, "live")
        timeline = table(at, "event")
        failover = timeline[timeline["event"].str.contains("failover")]
        assert list(failover["server"]) == ["live"]
        assert "server flaky" in failover["detail"].iloc[0]
        assert failover["detail"].iloc[0].endswith("-> served by server live")
        assert "flaky" in set(timeline[timeline["event"].str.contains("went down")]["server"])
        history = table(at, "request")
        assert len(history) == 7
        newest = history.iloc[0]
        assert (newest["prefill worker"], newest["decode worker"]) == ("live", "live")
        assert newest["failover"].endswith("-> served by server live")
        at.selectbox(key="dash_server").set_value("flaky").run()
        assert len(table(at, "request")) == 4
        at.selectbox(key="dash_server").set_value("live").run()
        assert len(table(at, "request")) == 3
    finally:
        proxy.close()
        live.stop()
