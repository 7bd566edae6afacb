"""Dashboard: the engine's workers and remote servers (with their timeline, KV links and
route decisions), the grading itself (notebooks per minute, seconds per notebook and
layer, failed files, the queue; batches with and without the models apart), its measured
speeds and latencies, the request history, the LLM layers' parallel efficiency per graded
notebook, how often each advisory model agreed with the checks and each route's latest
calibration (``app_pages.dashboard_trust``), refreshed live
(pausable); a test prompt through the disaggregated path. The numbers:
``inference.dashboard``, ``inference.dashboard.servers``, ``grader.views.grading``,
``grader.views.model_timings`` and ``grader.views.advisory``. Every table goes through
``readable``: a value not measured shows as a dash, never "None"."""

from __future__ import annotations

import streamlit as st

from app_pages.dashboard_trust import calibration_section
from app_pages.shared import anonymous, get_client, get_store, get_workspace, sidebar
from grader.service.jobs import job_rows, running_jobs
from grader.views import grading as grading
from grader.views.advisory import MIN_AGREEMENT, agreement_rows, route_agreement
from grader.views.grading_failed import distinct_cards, failed_table
from grader.views.grading_figure import rate_figure
from grader.views.model_timings import efficiency_figure, notebook_llm_stats, stats_rows
from inference import InferenceError
from inference.dashboard import cluster_history as machines_history
from inference.dashboard import requests as dash
from inference.dashboard import servers as machines
from inference.dashboard.failures import explain
from inference.dashboard.rows import metrics_rows, readable
from inference.types import WorkerHealth

sidebar()
client = get_client()
store = get_store()
st.title("Dashboard")

left, right, _ = st.columns([1, 1, 4], vertical_alignment="bottom")
live = left.toggle("Live", value=True, key="dash_live",
                   help="Refresh the workers, charts and tables by themselves.")
seconds = right.selectbox("Refresh every", dash.REFRESH_SECONDS, index=1, key="dash_interval",
                          format_func=lambda s: f"{s} s", disabled=not live)

with st.expander("Send a test prompt"):
    with st.form("dash_prompt"):
        role = st.selectbox("Role", client.roles, key="dash_prompt_role")
        system = st.text_input("System message", "You are a concise teaching assistant.",
                               key="dash_prompt_system")
        user = st.text_area("User message", "Explain what a left join does, in two sentences.",
                            key="dash_prompt_user")
        c1, c2 = st.columns(2)
        max_tokens = c1.number_input("Max tokens", 1, 2048, 128, key="dash_prompt_max_tokens")
        temperature = c2.number_input("Temperature", 0.0, 2.0, 0.0, 0.1,
                                      key="dash_prompt_temperature")
        schema_text = st.text_area("JSON schema (optional: constrains the output)", "",
                                   key="dash_prompt_schema")
        submitted = st.form_submit_button("Generate")
    if submitted:
        try:
            request = dash.prompt_request(role, system, user, max_tokens, temperature,
                                          schema_text)
            capture = dash.StreamCapture(client.stream(request))
            st.write_stream(capture)
        except InferenceError as exc:
            failure = explain(f"{type(exc).__name__}: {exc}", role, grading=False)
            st.error(failure.headline)
            with st.expander("Details of the error"):
                st.code(failure.details, language=None)
        else:
            if capture.result is not None:
                if capture.result.parsed is not None:
                    st.json(capture.result.parsed)
                st.dataframe(readable(metrics_rows(capture.result.metrics)), hide_index=True,
                             width="stretch")


def workers_section(health: list[WorkerHealth]) -> None:
    cards = dash.worker_cards(h for h in health if not machines.is_server(h))
    if not cards:
        return
    st.subheader("Workers")
    st.caption("Last latency: the worker's last request. Queue: requests "
               "waiting for it. Requests and errors: since the app started.")
    for i in range(0, len(cards), 4):
        for col, card in zip(st.columns(4), cards[i:i + 4], strict=False):
            with col.container(border=True):
                st.markdown(f"**{card.name}**")
                st.badge(card.state + (" · busy" if card.busy else ""), color=card.color)
                st.caption(f"{card.kind} worker · route {card.route} · model {card.model}"
                           + (f" · {card.detail}" if card.detail else ""))
                st.metric("Last latency", card.last_latency)
                # Counts as words on one line: three metrics side by side in a quarter of
                # the page cut their labels ("Se…").
                st.markdown(f"Queue **{card.queue}** · Served **{card.requests}** · "
                            f"Errors **{card.errors}**")


def servers_section() -> None:
    cards = machines.server_cards(client)
    if not cards:
        return
    st.subheader("Servers")
    st.caption("Probe: the last health check's round trip. Slots: requests the server "
               "computes now, of how many at once; queue: waiting there. Speeds: as "
               "measured on this client's requests, else as the server reports them.")
    for i in range(0, len(cards), 3):
        for col, card in zip(st.columns(3), cards[i:i + 3], strict=False):
            with col.container(border=True):
                st.markdown(f"**{machines.plain(card.name)}** :{card.color}-badge[{card.state}] "
                            f":{card.circuit_color}-badge[{card.circuit_words}]")
                st.caption(machines.plain(
                    f"{card.kind} server for {card.roles or 'no role yet'} · {card.protocol} "
                    f"at {card.address} · {card.state} since {card.since or '-'} · "
                    f"model {card.model_line}"
                    + (f" · {card.outstanding} of this app's requests there now"
                       if card.outstanding else "")))
                st.markdown(f"Probe **{card.probe_latency}** · Slots busy **{card.slots}** · "
                            f"Queue **{card.queue}**")
                st.metric("Prefill / decode", card.speeds)
                if card.degraded_reason:
                    st.warning(machines.plain(card.degraded_reason))
                if card.error_line:
                    st.caption(machines.plain(f"Last error: {card.error_line}"))


def grading_section() -> None:
    st.subheader("Grading")
    view = grading.grading_view(store, anonymous=anonymous())
    jobs = running_jobs(get_workspace())
    if view.empty and not jobs:
        st.info("No grades yet: grade notebooks on the Grade page. How fast they are "
                "graded, each layer's seconds, failed files and the queue appear here.")
        return
    cards = distinct_cards(grading.metric_cards(view))
    for i in range(0, len(cards), 4):  # four abreast at most: a narrower label is cut
        for col, card in zip(st.columns(4), cards[i:i + 4], strict=False):
            col.metric(card.label, card.value, card.note or None, "off", help=card.help,
                       delta_arrow="off")
    if view.running or jobs or view.interrupted:
        st.markdown("**Queue**")
        if view.running:
            st.caption("Batches being graded now (by this app or another grader on the same "
                       "store): notebooks done, failed before grading, and left.")
            st.dataframe(readable(grading.queue_rows(view.running)), hide_index=True,
                         width="stretch")
        if jobs:
            st.caption("Grading jobs of this app: the files read so far and the notebooks "
                       "graded.")
            st.dataframe(readable(job_rows(jobs)), hide_index=True, width="stretch")
        if view.interrupted:
            st.caption(f"{view.interrupted} interrupted batch(es) with notebooks left: resume "
                       "them on the Grade page.")
    if view.batches:
        st.markdown("**Last batches**")
        st.caption("Notebooks per minute over each batch's wall time, from its start to its "
                   "last grade (to now while it runs). Batches graded with the models (L3, "
                   "L4) are far slower than those graded by the checks only: each is "
                   "labelled, and their rates are never averaged together.")
        if any(b.rate.per_minute is not None for b in view.batches):
            st.plotly_chart(rate_figure(view.batches), key="dash_grading_rate")
        st.dataframe(readable(grading.batch_rows(view.batches)), hide_index=True,
                     width="stretch")
    if view.layers:
        st.markdown("**Seconds per notebook, by layer**")
        st.caption("Over the newest graded notebooks. L2 is the run in the sandbox; the "
                   "model layers' seconds are the engine's measurement of their requests.")
        st.dataframe(readable(grading.layer_rows(view.layers)), hide_index=True,
                     width="stretch")
    st.markdown("**Failed files**")
    if view.failed:
        st.caption("Newest first: notebooks graded without a score, files an upload could "
                   "not read, and batch items that failed before grading, with the reason.")
        rows, details = failed_table(view.failed, anonymous())
        st.dataframe(readable(rows), hide_index=True, width="stretch")
        if details:
            with st.expander("Technical detail of the failed files"):
                st.code("\n".join(details), language=None, wrap_lines=True)
    else:
        st.caption("None: every file of the batches recorded was read and graded.")


def timeline_section(view: machines_history.ClusterHistory) -> None:
    if view.empty and not view.live:
        return
    st.subheader("Timeline")
    if view.read_error:
        st.warning(machines.plain(f"The servers' journal could not be read: "
                                  f"{view.read_error}. This app's own events only."))
    if not view.timeline:
        st.info("Nothing has happened to the servers yet.")
        return
    st.caption("Newest first: servers going down and up, circuits opening and closing, "
               "failovers (what failed and what served instead) and canary results, as "
               "this app and every grader on the same store (a CLI batch) saw them.")
    st.dataframe(readable(machines.table(view.timeline)), hide_index=True, width="stretch")


def routing_section(view: machines_history.ClusterHistory) -> None:
    links, decisions = view.links, view.decisions
    if not links and not decisions:
        return
    st.subheader("KV links and route decisions")
    if links:
        st.caption("Per prefill -> decode pair: the bandwidth and latency measured on real "
                   "KV transfers, by this app or another grader on the same store.")
        st.dataframe(readable(machines.table(links)), hide_index=True, width="stretch")
    st.caption(machines.decision_summary(decisions))
    if decisions:
        st.dataframe(readable(machines.table(machines.decision_rows(decisions))),
                     hide_index=True, width="stretch")
        if any(d.actual_s is not None for d in decisions):
            st.plotly_chart(machines.decision_figure(decisions), key="dash_decisions")


def requests_section() -> None:
    history = client.history
    roles, routes = dash.filter_choices(history, client.roles)
    servers = dash.server_choices(history, client.cluster.endpoints if client.cluster else ())
    if history.count() == 0:
        st.info("No requests yet: grade a notebook with the LLM layers, or send a test prompt "
                "above. Every request the engine serves is recorded here.")
        return
    f1, f2, f3, f4, f5, f6 = st.columns([1.2, 1, 1.6, 1, 1.2, 1.6])
    window = f1.selectbox("Time window", list(dash.WINDOWS), index=1, key="dash_window")
    role_choice = f2.selectbox("Role", roles, key="dash_role")
    route = f3.selectbox("Route", routes, key="dash_route")
    status = f4.selectbox("Status", list(dash.STATUSES), key="dash_status")
    server = f5.selectbox("Server", servers, key="dash_server",
                          help="Requests prefilled or decoded on this server or worker.")
    text = f6.text_input("Request id or error contains", key="dash_text")
    view = dash.build_view(history, dash.make_filter(window, role_choice, route, status, text,
                                                     server=server))
    st.subheader("Speed and latency")
    if not view.matched:
        st.info("No request matches these filters.")
        return
    if view.measured:
        st.dataframe(readable(dash.summary_rows(view.summaries)), hide_index=True,
                     width="stretch")
        c1, c2 = st.columns(2)
        c1.plotly_chart(dash.throughput_figure(view.series), key="dash_throughput")
        c2.plotly_chart(dash.latency_figure(view.series), key="dash_latency")
    else:
        st.info("Every matching request failed: there is no speed or latency to chart.")
    st.subheader("Request history")
    st.caption(f"The newest {len(view.rows)} of {view.matched} matching requests "
               f"({view.total} recorded).")
    st.dataframe(readable(view.rows), hide_index=True, width="stretch")


def notebooks_section() -> None:
    st.subheader("Parallel efficiency per graded notebook")
    stats = notebook_llm_stats(store, limit=50, anonymous=anonymous())
    if not stats:
        st.info("No notebook graded with the LLM layers yet.")
        return
    st.caption("Busy seconds of the L3 and L4 requests over their wall time: 1.0 when they "
               "ran one after the other, 2.0 when they overlapped fully. Busy is the "
               "requests' own service time: the seconds they waited in a queue (queued) "
               "are not counted. A grade made before queue time was kept shows a dash: "
               "its own figure counted the queue as busy.")
    st.plotly_chart(efficiency_figure(stats), key="dash_efficiency")
    st.dataframe(readable(stats_rows(stats)), hide_index=True, width="stretch")


def advisory_section() -> None:
    stats = route_agreement(store)
    if not stats:
        return
    st.subheader("Model notes: agreement with the checks")
    st.caption("Per route: how often the model's verdict (code) or score (written answers) "
               "agreed with what the checks gave, over the newest grades. An advisory "
               f"model's notes are shown only when its route agrees on {MIN_AGREEMENT:.0%} "
               "of the criteria or more, and then only the notes that are sentences agreeing "
               "with the checks; the others are folded away on each grade's Model tab, with "
               "the route's agreement on that grade's batch. The points always come from "
               "the checks.")
    st.dataframe(readable(agreement_rows(stats)), hide_index=True, width="stretch")


@st.fragment(run_every=dash.run_every(live, seconds))
def live_view() -> None:
    st.caption(dash.status_line(live, seconds))
    health = client.health()
    workers_section(health)
    servers_section()
    history = machines_history.cluster_history(client)
    timeline_section(history)
    routing_section(history)
    grading_section()
    requests_section()
    notebooks_section()
    advisory_section()
    calibration_section()


live_view()
