"""Our prefill/decode server: ``python -m inference.server`` (docs/server-protocol.md).

``ServerEngine`` runs the embedded llama.cpp engine behind N slots and keeps prefilled
KV for decode servers to pull; ``create_app`` puts the protocol's HTTP routes over it.

May import: errors, types, config, models, threads, grammar, prompting, prefix_cache,
kvwire, kvidentity and backends (the embedded engine it serves). Never the client, the grader
or streamlit.
"""

from .app import create_app
from .engine import ServerEngine
from .options import SERVER_ROLES, SERVER_VERSION, ServerOptions

__all__ = ["SERVER_ROLES", "SERVER_VERSION", "ServerEngine", "ServerOptions", "create_app"]
