"""What the Dashboard shows of the engine, computed without Streamlit.

``requests`` turns the request history into per-role latency percentiles, throughput
and latency over time, the filtered history and their Plotly figures; ``servers``
makes a card per embedded worker and remote server, the servers' timeline in words,
the measured KV links and the routing table; ``cluster_history`` merges this process's
servers' timeline, links and route decisions with the cluster journal (what a CLI batch
or an earlier run recorded); ``rows`` formats health and metrics as
table rows with units in the column names (and a missing value as a dash, ``readable``);
``failures`` says a failed model request or load in plain words, its details apart.

May import: errors, types, metrics, client, cluster.
"""
