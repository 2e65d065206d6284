"""The status page at `/`: what is behind right now, worst first, for a person without Grafana.

Rendered on the server from the current snapshot (no script, no CDN, no build step), so it shows
what /metrics serves, with freshness as of the request: a lagging partition's (and group's)
freshness is carried forward at the rate it grew since the previous cycle, as the query-time
rules compute it (docs/querytime.md), so a stuck group grows on every refresh, not once a cycle;
a caught-up one stays 0. It refreshes itself with a meta refresh. `?cluster=C&group=G`
drills down to one group's partitions. Every name is escaped: topic and group names come from
Burrow, which is as hostile as anything else it sends.
"""

from __future__ import annotations

import base64
import hashlib
import html
from collections.abc import Iterable, Mapping
from urllib.parse import urlencode

from freshness_tracker.domain.model import (
    ClusterSnapshot,
    GroupResult,
    PartitionKey,
    PartitionResult,
    PartitionStatus,
    Snapshot,
)

__all__ = ["CONTENT_SECURITY_POLICY", "GROUP_ROWS", "render_status_page"]

#: Groups listed on the overview; the rest are counted, not listed (a page, not a dump).
GROUP_ROWS = 500

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:20px auto;max-width:1280px;padding:0 16px;
color:#1d2330}h1{font-size:22px;margin:0}h2{font-size:17px;margin:24px 0 6px}
.meta{color:#5b6472}a{color:#1f5fbf}nav a{margin-right:14px}
table{border-collapse:collapse;width:100%;font-size:13px}th,td{padding:4px 8px;
text-align:left;border-bottom:1px solid #eceff3;white-space:nowrap}th{background:#f5f7fa}
th.n,td.n{text-align:right}td.n{font-variant-numeric:tabular-nums}
.down td,.loss td{background:#fdecea}
.bad{color:#b03a2e;font-weight:600}.ok{color:#1e8449;font-weight:600}
"""

#: The page's Content-Security-Policy: nothing loads, nothing runs and nothing frames it; only
#: its own inline stylesheet applies (allowed by its hash, not by 'unsafe-inline').
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'sha256-"
    + base64.b64encode(hashlib.sha256(_CSS.encode()).digest()).decode()
    + "'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _duration(ms: int | None) -> str:
    """A duration for a person, in its two largest units: 850ms, 4.2s, 3m 7s, 5h 12m, 7d 0h
    (a week reads "7d 0h", not "167h59m35s"); "-" when unknown."""
    if ms is None:
        return "-"
    if ms < 1000:
        return f"{ms}ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f}s"
    seconds = ms // 1000
    for size, big, small, unit in ((86_400, "d", "h", 3600), (3600, "h", "m", 60),
                                   (60, "m", "s", 1)):
        if seconds >= size:
            return f"{seconds // size}{big} {seconds % size // unit}{small}"
    raise AssertionError("unreachable")  # pragma: no cover


_WAITING = frozenset({PartitionStatus.OK, PartitionStatus.GAP, PartitionStatus.DATA_LOSS})


def _carried(freshness: int, stamp: int, before: tuple[int | None, int | None] | None,
             now_ms: int) -> int:
    """`freshness` (its cycle observed it at `stamp + freshness`) carried forward to `now_ms` at
    the rate it grew since the previous cycle, between 0 and 1 ms per ms, as the query-time rule
    carries the gauge: a stuck record ages with the clock, a group that keeps up keeps its value.
    No previous value, or none waiting then: no rate yet, the cycle's value."""
    if before is None or before[0] is None or before[1] is None:
        return freshness
    observed, observed_before = stamp + freshness, before[1] + before[0]
    if observed <= observed_before:
        return freshness
    rate = min(max((freshness - before[0]) / (observed - observed_before), 0.0), 1.0)
    return freshness + round(rate * max(now_ms - observed, 0))


class _Ages:
    """Freshness at the request's time, as the query-time rule computes it (docs/querytime.md):
    each lagging value carried forward at the rate it grew since the cluster's previous cycle."""

    def __init__(self, now_ms: int, previous: Snapshot | None) -> None:
        self.now_ms = now_ms
        self._before = () if previous is None else previous.clusters
        self._groups = {(c.cluster, g.consumer): (g.max_freshness_ms, g.oldest_uncommitted_ms)
                        for c in self._before for g in c.groups}
        self._partitions: dict[PartitionKey, tuple[int | None, int | None]] | None = None

    def partition(self, r: PartitionResult) -> int | None:
        """The partition's freshness now; its cycle's value when nothing waits (0) or it is
        unknown."""
        if r.freshness_ms is None or r.record_timestamp_ms is None or r.status not in _WAITING:
            return r.freshness_ms
        if self._partitions is None:  # only a drill-down shows partitions: built on first use
            self._partitions = {p.key: (p.freshness_ms, p.record_timestamp_ms)
                                for c in self._before for p in c.partitions
                                if p.status in _WAITING}
        return _carried(r.freshness_ms, r.record_timestamp_ms, self._partitions.get(r.key),
                        self.now_ms)

    def group(self, g: GroupResult) -> int | None:
        """The group's max freshness now, likewise."""
        if g.max_freshness_ms is None or g.oldest_uncommitted_ms is None:
            return g.max_freshness_ms
        return _carried(g.max_freshness_ms, g.oldest_uncommitted_ms,
                        self._groups.get((g.cluster, g.consumer)), self.now_ms)


def _freshness(ms: int | None, lower_bound: bool) -> str:
    """`_duration`, marked "≥" when the value is a lower bound (data loss)."""
    return ("≥" if lower_bound and ms is not None else "") + _duration(ms)


def _count(n: int, noun: str, plural: str | None = None) -> str:
    """1 cluster, 2 clusters, 0 clusters."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def _ago(now_ms: int, then_ms: int | None) -> str:
    if then_ms is None:
        return "never"
    return f"{_duration(max(now_ms - then_ms, 0))} ago"


def _page(title: str, body: Iterable[str], refresh_s: int) -> bytes:
    head = (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="refresh" content="{int(refresh_s)}">'
            f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>")
    nav = ('<nav><a href="/">status</a><a href="/metrics">/metrics</a>'
           '<a href="/healthz">/healthz</a><a href="/readyz">/readyz</a></nav>')
    return (head + nav + "".join(body) + "</body></html>").encode()


#: Each table's columns: (header, numeric). A numeric column's cells are right-aligned
#: (``td class="n"``), and so is its header, so a number sits under its own header.
Columns = tuple[tuple[str, bool], ...]
CLUSTER_COLUMNS: Columns = (("cluster", False), ("state", False), ("last success", False),
                            ("cycle", True), ("groups", True), ("partitions", True),
                            ("error", False))
GROUP_COLUMNS: Columns = (("cluster", False), ("group", False), ("max freshness", True),
                          ("offset lag", True), ("Burrow status", False), ("data loss", True),
                          ("unmeasured", True))
PARTITION_COLUMNS: Columns = (("topic", False), ("partition", True), ("committed offset", True),
                              ("offset lag", True), ("freshness", True), ("commit lag", True),
                              ("retention headroom", True), ("measurement", False),
                              ("Burrow status", False), ("data loss", False))


def _table(columns: Columns, rows: Iterable[str]) -> str:
    head = "".join(f'<th class="n">{_e(h)}</th>' if numeric else f"<th>{_e(h)}</th>"
                   for h, numeric in columns)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _cluster_rows(clusters: Iterable[ClusterSnapshot], now_ms: int) -> Iterable[str]:
    for c in clusters:
        h = c.health
        state = '<span class="ok">up</span>' if h.up else '<span class="bad">down</span>'
        error = "" if h.up else _e(h.error or "")
        yield (f'<tr class="{"up" if h.up else "down"}"><td>{_e(c.cluster)}</td><td>{state}</td>'
               f"<td>{_ago(now_ms, h.last_success_ms)}</td>"
               f'<td class="n">{_duration(h.duration_ms)}</td><td class="n">{h.groups}</td>'
               f'<td class="n">{h.partitions}</td><td>{error}</td></tr>')


def _group_rows(groups: Iterable[GroupResult], ages: _Ages) -> Iterable[str]:
    for g in groups:
        loss = g.data_loss_partitions > 0
        link = "/?" + urlencode({"cluster": g.cluster, "group": g.consumer})
        yield (f'<tr class="{"loss" if loss else "group"}"><td>{_e(g.cluster)}</td>'
               f'<td><a href="{_e(link)}">{_e(g.consumer)}</a></td>'
               f'<td class="n">{_freshness(ages.group(g), loss)}</td>'
               f'<td class="n">{"-" if g.offset_lag is None else g.offset_lag}</td>'
               f"<td>{_e(g.burrow_status)}</td>"
               f'<td class="n">{g.data_loss_partitions or ""}</td>'
               f'<td class="n">{_unmeasured(g)}</td></tr>')


def _unmeasured(g: GroupResult) -> str:
    """How many partitions went unmeasured, or, for a group whose answer could not be read,
    that it is unmeasured as a whole and why."""
    if g.error is not None:
        return f'<span class="bad">unmeasured: {_e(g.error)}</span>'
    return str(g.unmeasured_partitions or "")


def _partition_rows(partitions: Iterable[PartitionResult], ages: _Ages) -> Iterable[str]:
    """One row per partition. Its "measurement" cell names how it was measured only when that
    is not the ordinary way (ok is left blank), so it is never read as Burrow's status."""
    for r in partitions:
        measured = "" if r.status is PartitionStatus.OK else r.status.value
        lag = "-" if r.log_end_offset is None and r.committed_offset is not None else r.offset_lag
        lost = f"{r.lost_records} lost" if r.data_loss else ""
        freshness = _freshness(ages.partition(r), r.freshness_is_lower_bound)
        yield (f'<tr class="{"loss" if r.data_loss else "partition"}"><td>{_e(r.key.topic)}</td>'
               f'<td class="n">{r.key.partition}</td>'
               f'<td class="n">{"-" if r.committed_offset is None else r.committed_offset}</td>'
               f'<td class="n">{lag}</td>'
               f'<td class="n">{freshness}</td>'
               f'<td class="n">{_duration(r.commit_lag_ms)}</td>'
               f'<td class="n">{_duration(r.retention_headroom_ms)}</td>'
               f"<td>{_e(measured)}</td><td>{_e(r.burrow_status)}</td><td>{lost}</td></tr>")


def _overview(snapshot: Snapshot, ages: _Ages) -> Iterable[str]:
    now_ms = ages.now_ms
    # Worst first: data loss, groups not measured at all, then the oldest unconsumed data,
    # then unmeasured partitions.
    groups = sorted((g for c in snapshot.clusters for g in c.groups), key=lambda g: (
        -(g.data_loss_partitions > 0), -(g.error is not None), -(ages.group(g) or 0),
        -g.unmeasured_partitions))
    behind = sum(1 for g in groups if (g.max_freshness_ms or 0) > 0)
    down = sum(1 for c in snapshot.clusters if not c.health.up)
    yield "<h1>freshness-tracker</h1>"
    yield (f'<p class="meta">{_count(len(groups), "consumer group")}, {behind} with unconsumed '
           f"data; {_count(len(snapshot.clusters), 'cluster')}, {down} down. Freshness is the "
           "age now of the oldest record a group has not committed, as each cluster's last "
           "completed cycle found it.</p>")
    yield "<h2>Clusters</h2>"
    yield _table(CLUSTER_COLUMNS, _cluster_rows(snapshot.clusters, now_ms))
    yield "<h2>Consumer groups, worst first</h2>"
    if not groups:
        yield '<p class="meta">No consumer group measured yet.</p>'
        return
    yield _table(GROUP_COLUMNS, _group_rows(groups[:GROUP_ROWS], ages))
    if len(groups) > GROUP_ROWS:
        yield (f'<p class="meta">{_count(len(groups) - GROUP_ROWS, "more group")}, all fresher '
               "than these; /metrics has every one.</p>")


def _drill_down(snapshot: Snapshot, ages: _Ages, cluster: str, group: str) -> Iterable[str]:
    now_ms = ages.now_ms
    found = next((c for c in snapshot.clusters if c.cluster == cluster), None)
    summary = None if found is None else next(
        (g for g in found.groups if g.consumer == group), None)
    yield f"<h1>{_e(group)}</h1>"
    if found is None or summary is None:
        yield (f'<p class="meta">No group {_e(group)!s} in cluster {_e(cluster)!s} in the '
               'current snapshot. <a href="/">Back to every group</a>.</p>')
        return
    yield (f'<p class="meta">cluster {_e(cluster)}: max freshness '
           f"{_freshness(ages.group(summary), summary.data_loss_partitions > 0)}, "
           f"Burrow status {_e(summary.burrow_status)}; "
           + ("" if summary.error is None else f"unmeasured: {_e(summary.error)}; ")
           + "cycle finished "
           f'{_ago(now_ms, found.finished_ms)}. <a href="/">Back to every group</a>.</p>')
    partitions = sorted((p for p in found.partitions if p.key.consumer == group),
                        key=lambda p: (-(ages.partition(p) or 0), p.key.topic,
                                       p.key.partition))
    yield _table(PARTITION_COLUMNS, _partition_rows(partitions, ages))


def render_status_page(snapshot: Snapshot, now_ms: int, query: Mapping[str, str] | None = None,
                       refresh_s: int = 15, previous: Snapshot | None = None) -> bytes:
    """The page for `query` (`cluster` and `group` drill down; anything else is the overview).
    `previous` holds each cluster's cycle before the current one (which records still wait)."""
    query = query or {}
    ages = _Ages(now_ms, previous)
    cluster, group = query.get("cluster"), query.get("group")
    if cluster is not None and group is not None:
        return _page(f"{group}: freshness-tracker", _drill_down(snapshot, ages, cluster, group),
                     refresh_s)
    return _page("freshness-tracker", _overview(snapshot, ages), refresh_s)
