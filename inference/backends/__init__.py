"""The engine's backends: one small interface, and the embedded llama.cpp engine.

``base.Backend`` is the interface every backend implements (prefill, decode,
generate, health; optional hooks are no-ops); ``embedded`` runs two llama.cpp
contexts in this process and moves the KV cache between them (``worker``, ``_llama``).
The remote backends live with the servers they talk to, in ``inference.cluster``;
``inference.registry`` names them all.

May import: types, errors, config, models, threads, grammar, prompting, prefix_cache.
Never the cluster, the client, the grader or streamlit.
"""

from .base import Backend, TokenCallback

__all__ = ["Backend", "TokenCallback"]
