"""Rows for tables: health and metrics as the app and the CLI show them.

Presentation only: plain rows with units in the column names, so the pages
stay thin and the numbers are formatted the same everywhere. A value that is not
there is ``None`` in the rows (never 0); ``readable`` makes it a dash for a table,
which would otherwise print "None" in the cell.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
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


MISSING = "—"


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.10g}"
    return str(value)


def readable(rows: Iterable[Mapping[str, Any]], missing: str = MISSING) -> list[dict[str, Any]]:
    """The rows as a table shows them: no ``None`` (nor NaN, nor an absent key) left in a
    cell. A column with one becomes text, its values written as they are ("0.41", "12",
    "yes") and the missing ones as ``missing``; the other columns keep their type."""
    out = [dict(r) for r in rows]
    for column in dict.fromkeys(k for r in out for k in r):
        if any(_missing(r.get(column)) for r in out):
            for r in out:
                value = r.get(column)
                r[column] = missing if _missing(value) else _text(value)
    return out
