"""Inference across machines: the client's view of remote servers.

``endpoint`` holds the typed values (a server's address and role, timeouts, what
a probe found) and the one interface a server protocol implements
(``Transport``). ``health`` watches every server (a prober, a ``breaker`` per
server), ``measure`` keeps the measured links and speeds, ``routing`` picks servers
and decides per request whether KV is shipped, ``kvclient``, ``openai_api`` and
``ollama_api`` speak the three protocols, ``pooled`` turns a pool of servers into a
``Backend`` with safe failover, ``cluster`` holds it all for one client and
``canary`` checks every prefill/decode pair's output.

Imports nothing of the grader and never streamlit; the backends in
``inference.backends`` are the only users.
"""
