"""The servers' timeline, KV links and route decisions as the Dashboard shows them: this
process's live cluster merged with the cluster journal (``inference.cluster.journal``),
where every process that used the servers recorded what happened: a CLI batch's
failovers show in an app started after it, and an app restarted keeps its past.

The live state wins where it is newer: an event or a decision seen here and in the
journal is shown once (the live decision keeps its outcome even before the journal has
written it), and a link's estimate is the one measured last, here or in the journal.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..cluster.health import HealthEvent
from ..cluster.measure import LinkEstimate
from ..cluster.routing import Decision
from .servers import LinkRow, TimelineRow, link_rows, timeline_rows

if TYPE_CHECKING:
    from ..client import DisaggregatedClient

__all__ = ["ClusterHistory", "cluster_history", "merge_decisions", "merge_events",
           "merge_links"]

LIMIT = 200  # events and decisions shown


@dataclass(frozen=True, slots=True)
class ClusterHistory:
    """What the Dashboard's Timeline and "KV links and route decisions" show.
    ``live``: this process has a cluster of its own; ``read_error``: why the journal
    could not be read ("" when it could)."""

    timeline: list[TimelineRow]
    links: list[LinkRow]
    decisions: list[Decision]
    live: bool
    read_error: str = ""

    @property
    def empty(self) -> bool:
        return not (self.timeline or self.links or self.decisions)


def merge_events(live: Iterable[HealthEvent], recorded: Iterable[HealthEvent]
                 ) -> list[HealthEvent]:
    """Both, each event once, oldest first."""
    seen: dict[tuple[float, str, str, str], HealthEvent] = {}
    for e in (*recorded, *live):
        seen.setdefault((e.at, e.server, e.kind, e.detail), e)
    return sorted(seen.values(), key=lambda e: e.at)


def merge_decisions(live: Iterable[Decision], recorded: Iterable[Decision]
                    ) -> list[Decision]:
    """Both, each decision once (the one that knows its outcome), oldest first."""
    out: dict[tuple[float, str, float], Decision] = {}
    for d in (*recorded, *live):
        key = (d.at, d.option.label, d.option.predicted_s)
        have = out.get(key)
        if have is None or d.actual_s is not None or have.actual_s is None:
            out[key] = d
    return sorted(out.values(), key=lambda d: d.at)


def merge_links(live: dict[tuple[str, str], LinkEstimate],
                recorded: dict[tuple[str, str], LinkEstimate]
                ) -> dict[tuple[str, str], LinkEstimate]:
    """Per pair, the estimate measured last (this process's on a tie)."""
    out = dict(recorded)
    for pair, est in live.items():
        other = out.get(pair)
        if other is None or est.updated_at >= other.updated_at:
            out[pair] = est
    return out


def cluster_history(client: DisaggregatedClient, limit: int = LIMIT) -> ClusterHistory:
    """The timeline (newest first), the KV links and the route decisions of ``client``'s
    servers, from its live cluster (if it has one) and from the journal."""
    cluster, journal = client.cluster, client.journal
    events: list[HealthEvent] = cluster.monitor.events(limit) if cluster is not None else []
    decisions: list[Decision] = cluster.cost.decisions(limit) if cluster is not None else []
    links = cluster.links.estimates() if cluster is not None else {}
    error = ""
    if journal is not None:
        events = merge_events(events, journal.events(limit))
        error = error or journal.read_error
        decisions = merge_decisions(decisions, journal.decisions(limit))[-limit:]
        error = error or journal.read_error
        links = merge_links(links, journal.link_estimates())
        error = error or journal.read_error
    return ClusterHistory(timeline_rows(events, limit), link_rows(cluster, links), decisions,
                          live=cluster is not None, read_error=error)
