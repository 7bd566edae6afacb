"""The Dashboard's chart of notebooks per minute per batch (``grader.views.grading``'s
numbers), one colour per mode, so batches graded with and without the models are never
read as one series."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from .grading import CHECKS, MODE_WORDS, MODELS, BatchStats

__all__ = ["rate_figure"]


def rate_figure(batches: Sequence[BatchStats]) -> go.Figure:
    """Notebooks per minute of each batch, oldest on the left, one colour per mode (with
    models, checks only), named in the legend."""
    ordered = [b for b in reversed(batches) if b.rate.per_minute is not None]
    fig = go.Figure()
    for mode, color in ((CHECKS, "#2563eb"), (MODELS, "#d97706"), (None, "#9ca3af")):
        mine = [b for b in ordered if b.mode == mode]
        if not mine:
            continue
        fig.add_trace(go.Bar(
            name=MODE_WORDS.get(mode or "", "none graded yet"), marker_color=color,
            x=[f"#{b.id} {b.assignment}" for b in mine], y=[b.rate.per_minute for b in mine],
            customdata=[[b.done, b.rate.seconds, b.status] for b in mine],
            hovertemplate="%{x}<br>%{y:.2f} notebooks / min<br>%{customdata[0]} notebooks "
                          "in %{customdata[1]:.0f} s (%{customdata[2]})<extra></extra>"))
    fig.update_layout(height=280, margin={"t": 30, "b": 20, "l": 10, "r": 10},
                      yaxis={"title": "notebooks / min", "rangemode": "tozero"},
                      xaxis={"type": "category", "categoryorder": "array",
                             "categoryarray": [f"#{b.id} {b.assignment}" for b in ordered]},
                      showlegend=True, legend={"orientation": "h", "y": 1.15})
    return fig
