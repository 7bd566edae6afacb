"""Resources every page shares, built once per process (st.cache_resource)."""

from __future__ import annotations

import logging

import streamlit as st

from inference import DisaggregatedClient, load_config


@st.cache_resource(show_spinner="Starting the inference engine...")
def get_client() -> DisaggregatedClient:
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return DisaggregatedClient(load_config())
