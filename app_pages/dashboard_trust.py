"""The Dashboard's section on trust in the models: which routes may move scores, what
measuring them said, and a button to measure them.

``calibration_section()`` shows the judging warnings of the configuration as it is
(``DisaggregatedClient.judging_warnings``: a route trusted to judge whose model the
project knows is too small), which roles are trusted now, the latest calibration of each
route from the store (``grader.service.calibration``) and a button that calibrates the
configured routes on the bundled examples in the background
(``grader.service.calibration_runs``: a process of its own; the Dashboard's live refresh
shows it finish). It reads the shared client and store. Session-state keys: ``dash_``.
"""

from __future__ import annotations

import time

import streamlit as st

from app_pages.shared import get_client, get_store
from grader.service.calibration import calibration_rows, latest, trusted_now
from grader.service.calibration_figures import FIT_AGREEMENT, MIN_CRITERIA
from grader.service.calibration_runs import APP_LIMIT, CalibrationRuns
from inference.dashboard.rows import readable


@st.cache_resource(show_spinner=False)
def get_calibrations(db: str) -> CalibrationRuns:
    """The app's background calibrations, one per store file."""
    return CalibrationRuns(db)


def _clock(at: float) -> str:
    return time.strftime("%H:%M", time.localtime(at))


def calibration_section(runs: CalibrationRuns | None = None) -> None:
    """``runs``: where calibrations run (default: the app's, in the background)."""
    client, store = get_client(), get_store()
    runs = runs if runs is not None else get_calibrations(str(store.path))
    st.subheader("Models trusted to judge")
    for line in client.judging_warnings():
        st.warning(line)
    st.caption(f"{trusted_now(client.config)} A route trusted to judge (can_judge = true) "
               "may lower written scores and send criteria to review. Measure it first: a "
               "calibration grades graded examples with it as if trusted and compares its "
               "judgements with the checks and the instructor's points. Fit to judge from "
               f"{FIT_AGREEMENT:.0%} agreement over at least {MIN_CRITERIA} criteria. A "
               "calibration changes no grade.")
    measured = latest(store)
    if measured:
        in_use = [r.name for r in client.config.routes.values()]
        st.dataframe(readable(calibration_rows(measured, in_use)), hide_index=True,
                     width="stretch")
    else:
        st.info("No route has been calibrated yet.")
    state = runs.state()
    running = state is not None and state.running
    if st.button("Calibrate on the bundled examples", key="dash_calibrate", disabled=running,
                 help=f"Grades {APP_LIMIT} notebooks of each bundled example with the "
                      "configured routes, in the background (minutes on a laptop)."):
        state = runs.start()
    if state is None:
        return
    if state.running:
        st.info(f"Calibrating since {_clock(state.started_at)}: {APP_LIMIT} notebooks of each "
                "bundled example; the table shows the figures when it is done.")
    elif state.error:
        st.error(f"The calibration started at {_clock(state.started_at)} failed: "
                 f"{state.error}")
    elif state.result is not None:
        shown = st.success if state.result.fit else st.warning
        shown(state.result.headline())
