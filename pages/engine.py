"""Engine: the workers behind each role, and a prompt through the disaggregated path."""

from __future__ import annotations

import json

import streamlit as st

from inference import GenerationRequest, GenerationResult, InferenceError
from inference.views import health_rows, history_rows, metrics_rows
from pages.shared import get_client

client = get_client()
st.title("Inference engine")
st.caption(f"Configuration: {client.config.source}. Each role is a route: a prefill worker "
           "and a decode worker that receives the prompt's real KV state.")

left, right = st.columns([3, 1])
left.dataframe(health_rows(client.health()), hide_index=True, width="stretch")
if right.button("Load models now", key="engine_warm"):
    with st.spinner("Loading models and contexts..."):
        client.warm()
    st.rerun()

st.subheader("Send a prompt")
with st.form("engine_prompt"):
    role = st.selectbox("Role", client.roles, key="engine_role")
    system = st.text_input("System message", "You are a concise teaching assistant.",
                           key="engine_system")
    user = st.text_area("User message", "Explain what a left join does, in two sentences.",
                        key="engine_user")
    c1, c2 = st.columns(2)
    max_tokens = c1.number_input("Max tokens", 1, 2048, 128, key="engine_max_tokens")
    temperature = c2.number_input("Temperature", 0.0, 2.0, 0.0, 0.1, key="engine_temperature")
    schema_text = st.text_area("JSON schema (optional: constrains the output)", "",
                               key="engine_schema")
    submitted = st.form_submit_button("Generate")

if submitted:
    try:
        schema = json.loads(schema_text) if schema_text.strip() else None
        request = GenerationRequest.chat(role, system or None, user,
                                         max_tokens=int(max_tokens),
                                         temperature=float(temperature), json_schema=schema)
    except (json.JSONDecodeError, InferenceError) as exc:
        st.error(f"Cannot send this request: {exc}")
    else:
        holder: list[GenerationResult] = []

        def pieces():
            for item in client.stream(request):
                if isinstance(item, GenerationResult):
                    holder.append(item)
                else:
                    yield item

        try:
            st.write_stream(pieces())
        except InferenceError as exc:
            st.error(f"{type(exc).__name__}: {exc}")
        if holder:
            result = holder[0]
            if result.parsed is not None:
                st.json(result.parsed)
            st.dataframe(metrics_rows(result.metrics), hide_index=True, width="stretch")

st.subheader("Recent requests")
st.dataframe(history_rows(client.history.recent(20)[::-1]), hide_index=True, width="stretch")
