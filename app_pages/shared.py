"""Resources every page shares, built once per process (st.cache_resource), and the
sidebar every page shows (model warm-up status, the anonymisation switch).

Session-state keys: each page prefixes its own with its name (``grade_``,
``dash_``, ``rubrics_``, ``review_``); the shared one is ``anonymise``. Streamlit
drops a widget's state when its page is not drawn (st.navigation), so a choice that
must survive a visit to another page is also kept under a key that is no widget's
(``kept_selectbox``).
"""

from __future__ import annotations

import faulthandler
import logging
import signal
from typing import Any

import streamlit as st

from grader.service.model_runs import model_queue_for
from grader.service.workspace import Workspace
from grader.store.database import Store
from inference import DisaggregatedClient, load_config
from inference.config import data_dir
from inference.dashboard.failures import Failure, last_failure, load_failure
from inference.dashboard.requests import PROMPT_PREFIX
from inference.warmup import Warmup


@st.cache_resource(show_spinner="Starting the inference engine...",
                   on_release=DisaggregatedClient.close)
def get_client() -> DisaggregatedClient:
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # `kill -USR1 <pid>` writes every thread's Python stack to stderr: what a stuck
    # grading job or model load is waiting on, without stopping the app.
    if hasattr(signal, "SIGUSR1"):
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    return DisaggregatedClient(load_config())


@st.cache_resource(show_spinner=False, on_release=Store.close)
def get_store() -> Store:
    """The grade store: the same SQLite file that holds the request history. Batches
    whose grader is gone (the app was killed while grading) are marked interrupted."""
    store = Store(get_client().config.history_db or data_dir() / "grader.db")
    store.reap_batches()
    return store


@st.cache_resource(show_spinner=False)
def get_workspace() -> Workspace:
    return Workspace(get_store())


@st.cache_resource(show_spinner=False)
def get_warmup() -> Warmup:
    return Warmup(get_client()).start()


@st.cache_resource(show_spinner=False)
def resume_models() -> int:
    """Once per app process: the models' notes the store kept queued (the app was closed
    while they were made) are taken up again; how many were waiting."""
    waiting = models_waiting()
    if waiting:
        model_queue_for(get_workspace(), get_client())
    return waiting


def models_waiting() -> int:
    """Grades whose models' notes are queued or being made now (in the store)."""
    store = get_store()
    return len(store.model_parts("queued")) + len(store.model_parts("running"))


def anonymous() -> bool:
    """Whether names are hidden (the sidebar switch): pages pass it to every listing,
    report and export."""
    return bool(st.session_state.get("anonymise", False))


def chosen_key(key: str) -> str:
    return f"{key}_chosen_by_page"


def choose(key: str, value: str) -> None:
    """A page chooses ``value`` for the ``kept_selectbox`` under ``key`` (the assignment
    it just made): it is chosen in the next run that lists it, even when a rerun the
    browser asked for (a fragment's, the models' sidebar) still carries the old choice."""
    st.session_state[key] = value
    st.session_state[chosen_key(key)] = value


def kept_selectbox(label: str, options: list[str], key: str, shared: str | None = None,
                   **kwargs: Any) -> str:
    """A selectbox whose choice survives visits to other pages: kept under
    ``{key}_kept`` and given back to the widget when Streamlit has dropped its state.
    A value put under ``key`` before the call (a page choosing for the user) wins; one
    given by ``choose`` wins even over a rerun that still carries the widget's old value.
    With ``shared`` (e.g. "assignment"), a choice made on one page is where the other
    pages with the same ``shared`` open next (when it is among their options)."""
    kept = f"{key}_kept"
    if (picked := st.session_state.pop(chosen_key(key), None)) is not None:
        if picked in options:  # a page's choice (``choose``) holds over the browser's
            st.session_state[key] = picked  # last word on the widget, whichever run comes
            st.session_state[kept] = None  # chosen now: the other pages follow it
        else:
            st.session_state[chosen_key(key)] = picked  # not listed yet: the next run
    chosen = st.session_state.get(key)
    if shared is not None:
        if chosen in options and chosen != st.session_state.get(kept):
            st.session_state[shared] = chosen  # chosen here now (or by the page)
        elif st.session_state.get(shared) in options:
            st.session_state[key] = st.session_state[shared]  # chosen on another page
    if st.session_state.get(key) not in options:
        before = st.session_state.get(kept)
        st.session_state[key] = before if before in options else options[0]
    value = st.selectbox(label, options, key=key, **kwargs)
    st.session_state[kept] = value
    return value


def kept_widget(widget: Any, label: str, key: str, default: Any, *args: Any,
                **kwargs: Any) -> Any:
    """``widget`` (``st.checkbox``, ``st.number_input``, ...) whose value survives visits to
    other pages and reloads: kept under ``{key}_kept`` for the session and as the store's
    setting ``key`` for the next session (switching the models off stays off)."""
    kept = f"{key}_kept"
    if kept not in st.session_state:  # a new session: the value set last, or the default
        st.session_state[kept] = get_store().setting(key, default)
    if key not in st.session_state:  # dropped by Streamlit while another page was drawn
        st.session_state[key] = st.session_state[kept]
    value = widget(label, *args, key=key, **kwargs)
    if value != st.session_state[kept]:
        get_store().set_setting(key, value)
    st.session_state[kept] = value
    return value


def _keep_anonymise() -> None:
    st.session_state["anonymise"] = st.session_state["_anonymise_switch"]


def sidebar() -> None:
    """The sidebar of every page; each page calls it first. (Elements that app.py itself
    writes before ``page.run()`` vanish from AppTest's tree on reruns, so the pages draw
    it.) The switch's value lives under ``anonymise``, not under the widget's key,
    so it survives page changes."""
    warm = get_warmup()
    resume_models()
    with st.sidebar:
        st.toggle("Hide student names", key="_anonymise_switch", value=anonymous(),
                  on_change=_keep_anonymise,
                  help="Pseudonyms (Student 001, ...) replace names, ids and file names "
                       "on every page and in every export.")
        st.fragment(_model_state, run_every=None if warm.done and not models_waiting()
                    else 2.0)()


def _model_state() -> None:
    """The models' state in the sidebar; redrawn every 2 s while they load (a fragment:
    the page itself is not rerun, so no click of the instructor's is lost to it), and
    the newest failed model request of the last minutes, said plainly: words for the
    instructor, the recorded error folded away in an expander."""
    warm = get_warmup()
    if failed := load_failure(warm.roles()):
        _failure(st.error, failed, "Details of the loading failure")
    else:
        st.caption(warm.summary())
    if waiting := models_waiting():
        st.caption(f"The models' notes of {waiting} grade{'s' if waiting != 1 else ''} are "
                   "being made, after the grades; the grades stand on the checks meanwhile.")
    # grading's failures only: a Dashboard test prompt's is shown on the Dashboard
    if failure := last_failure(get_client().history, skip_prefix=PROMPT_PREFIX):
        _failure(st.warning, failure, "Details of the failed request")


def _failure(box: Any, failure: Failure, label: str) -> None:
    box(failure.headline)
    with st.expander(label):
        st.code(failure.details, language=None, wrap_lines=True)
