"""Inference across machines: the client's view of remote servers.

``inference.endpoint`` (below this room: the configuration names servers too) holds
the typed values of a server (address, role, timeouts, what a probe found) and the
one interface a server protocol implements (``Transport``). Here: ``health`` watches
every server (a prober, a ``breaker`` per server), ``measure`` keeps the measured
links and speeds, ``routing`` picks servers and decides per request whether KV is
shipped, ``kvclient``, ``openai_api`` and ``ollama_api`` speak the three protocols,
``pooled`` turns a pool of servers into a ``Backend`` with safe failover, ``remote``
holds the three remote backends built on it, ``cluster`` holds it all for one client,
``canary`` checks every prefill/decode pair's output and ``journal`` keeps the events,
link measurements and route decisions in SQLite for other processes to read.

May import: errors, types, endpoint, prompting, backends (the interface, and the
embedded engine as the last fallback). Never the grader, never streamlit.
"""
