"""Rows for tables: health and metrics as the app and the CLI show them.

Presentation only: plain rows with units in the column names, so the pages
stay thin and the numbers are formatted the same everywhere.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..types import RequestMetrics, WorkerHealth


def health_rows(health: Iterable[WorkerHealth]) -> list[dict[str, Any]]:
    return [{
        "worker": h.name, "role": h.role, "kind": h.kind, "state": h.state, "model": h.model,
        "busy": h.busy, "queue": h.queue, "requests": h.requests, "errors": h.errors,
        "last latency (s)": None if h.last_latency_s is None else round(h.last_latency_s, 3),
        "detail": h.detail,
        **{k.replace("_", " "): v for k, v in h.extra.items()},
    } for h in health]


def metrics_rows(m: RequestMetrics) -> list[dict[str, Any]]:
    return [{
        "route": m.route, "method": m.method,
        "prefill worker": m.prefill_worker, "decode worker": m.decode_worker,
        "prompt tokens": m.prompt_tokens, "cached tokens": m.cached_tokens,
        "prefill tok/s": round(m.prefill_tps, 1), "decode tokens": m.decode_tokens,
        "decode tok/s": round(m.decode_tps, 1), "TTFT (s)": round(m.ttft_seconds, 3),
        "TPOT (ms)": round(m.tpot_seconds * 1000, 2), "KV moved (MB)": round(m.kv_bytes / 1e6, 2),
        "handoff (ms)": round(m.handoff_seconds * 1000, 1),
        "total (s)": round(m.total_seconds, 3), "finish": m.finish_reason,
    }]


def history_rows(items: Iterable[RequestMetrics]) -> list[dict[str, Any]]:
    rows = []
    for m in items:
        row = metrics_rows(m)[0]
        row = {"request": m.request_id, "role": m.role, **row, "error": m.error}
        rows.append(row)
    return rows
