"""Shared fixtures: real engines over the bundled SmolLM2 model."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from grader.service.workspace import Workspace
from grader.store.database import Store
from inference import DisaggregatedClient, EngineConfig, RouteConfig
from inference.models import BUILTIN_MODELS

FILLER = (
    "Cell {i}: the analyst loads sales.csv with pandas, groups revenue by region, "
    "computes the mean order value, and plots a bar chart of the top {i} products. "
)


@pytest.fixture(scope="session")
def smollm_path() -> Path:
    return BUILTIN_MODELS["smollm2-135m"].resolve_path()


def make_config(tmp: Path, routes: dict[str, dict], threads: int | None = 2) -> EngineConfig:
    return EngineConfig(
        routes={role: RouteConfig(role=role, **kw) for role, kw in routes.items()},
        threads=threads,
        history_db=tmp / "history.db",
    )


@pytest.fixture(scope="session")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DisaggregatedClient]:
    """The embedded default: code and feedback, each a prefill + decode pair."""
    tmp = tmp_path_factory.mktemp("engine")
    client = DisaggregatedClient(make_config(tmp, {"code": {}, "feedback": {}}))
    yield client
    client.close()


@pytest.fixture(scope="session")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DisaggregatedClient]:
    """Two routes without prefix reuse: `split` hands KV over, `one` does not. Their
    thread share is pinned at 2: the share follows the cores other processes leave free
    (inference.threads.FreeCores), and two evaluations of one prompt with different
    thread counts add their floats in another order, so a busy machine could make the
    two routes' greedy tokens part for a reason that is not the handoff."""
    tmp = tmp_path_factory.mktemp("pair")
    client = DisaggregatedClient(make_config(tmp, {
        "split": {"mode": "disaggregated", "prefix_cache_mb": 0, "fallback": False},
        "one": {"mode": "single", "prefix_cache_mb": 0},
    }))
    client.budget.free = lambda: 2  # every evaluation of both routes on 2 threads
    yield client
    client.close()


def prompt_of(client: DisaggregatedClient, role: str, n_tokens: int, system: str,
              question: str) -> str:
    """A user message whose chat prompt is at least ``n_tokens`` tokens long."""
    from inference import GenerationRequest

    backend = client.backend(role)
    body, i = "", 0
    while True:
        text = body + question
        req = GenerationRequest.chat(role, system, text)
        if len(backend.prompt_tokens(req)) >= n_tokens:  # type: ignore[attr-defined]
            return text
        i += 1
        body += FILLER.format(i=i)


APP = Path(__file__).resolve().parents[1] / "app.py"


@pytest.fixture
def app_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A fresh data folder for the app (store, created assignments) and fresh shared
    resources: the cached client and store are released (closed) afterwards."""
    import streamlit as st

    data = tmp_path / "data"
    monkeypatch.setenv("GRADER_DATA_DIR", str(data))
    monkeypatch.delenv("GRADER_CONFIG", raising=False)
    st.cache_resource.clear()
    yield data
    st.cache_resource.clear()


def open_app(page: str | None = None, timeout: float = 180):
    """The app in Streamlit's AppTest, run once, on ``page`` (e.g. "app_pages/review.py")."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(APP), default_timeout=timeout)
    at.run()
    if page is not None:
        at.switch_page(page)
        at.run()
    return at


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    """A workspace over a fresh store: the grading jobs' and the review's home."""
    store = Store(tmp_path / "grader.db")
    yield Workspace(store, tmp_path / "assignments")
    store.close()
