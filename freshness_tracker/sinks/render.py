"""`once` output: JSON, or a table a person reads at a glance (its Prometheus text is the
exporter's cached exposition, `sinks/exposition.py`, the bytes /metrics serves)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from freshness_tracker.domain.model import GroupResult, PartitionResult, Snapshot
from freshness_tracker.domain.names import printable
from freshness_tracker.domain.rollup import UNMEASURED  # the roll-up's own count

__all__ = ["format_freshness", "format_ms", "render_json", "render_table"]


def _partition_json(r: PartitionResult) -> dict[str, Any]:
    body = r._asdict()
    body.update(body.pop("key")._asdict())
    body["status"] = r.status.value
    body["freshness_is_lower_bound"] = r.freshness_is_lower_bound
    return body


def render_json(snapshot: Snapshot) -> str:
    clusters = [{
        "cluster": c.cluster,
        "cycle_id": c.cycle_id,
        "started_ms": c.started_ms,
        "finished_ms": c.finished_ms,
        "health": asdict(c.health),
        "groups": [asdict(g) for g in c.groups],
        "partitions": [_partition_json(p) for p in c.partitions],
    } for c in snapshot.clusters]
    return json.dumps({"clusters": clusters}, indent=2, sort_keys=True)


def format_ms(value: int | None) -> str:
    """1234567 → '20m34s'; None → '-'."""
    if value is None:
        return "-"
    if value < 1000:
        return f"{value}ms"
    seconds = value // 1000
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{value / 1000:.1f}s"


def format_freshness(value: int | None, lower_bound: bool) -> str:
    """`format_ms`, marked "≥" when the value is a lower bound (data loss)."""
    text = format_ms(value)
    return ("≥" + text) if lower_bound and value is not None else text


def _unlisted(groups: Sequence[GroupResult],
              partitions: Sequence[PartitionResult]) -> list[tuple[GroupResult, int]]:
    """Each group with unmeasured partitions that have no row of their own (Burrow's entry was
    unusable, so no partition result exists), and how many: /metrics counts them unmeasured,
    and a group whose only entries were unusable would otherwise be missing from the table."""
    shown: Counter[tuple[str, str]] = Counter(
        (r.key.cluster, r.key.consumer) for r in partitions if r.status in UNMEASURED)
    out = []
    for g in groups:
        hidden = g.unmeasured_partitions - shown[(g.cluster, g.consumer)]
        if g.error is None and hidden > 0:
            out.append((g, hidden))
    return out


def render_table(snapshot: Snapshot) -> str:
    """One row per partition, and one per group or cluster that could not be measured. Names
    and errors come from Burrow: every control character is escaped (`printable`), so a name
    cannot clear or rewrite the terminal."""
    header = ("CLUSTER", "CONSUMER", "TOPIC", "PART", "COMMITTED", "LAG", "FRESHNESS",
              "COMMIT LAG", "STATUS")
    rows: list[tuple[str, ...]] = [header]
    for c in snapshot.clusters:
        if not c.health.up:
            rows.append((c.cluster, "-", "-", "-", "-", "-", "-", "-",
                         f"CLUSTER DOWN: {c.health.error}"))
        rows += [(g.cluster, g.consumer, "-", "-", "-", "-", "-", "-", f"UNMEASURED: {g.error}")
                 for g in c.groups if g.error is not None]
        rows += [(g.cluster, g.consumer, "-", "-", "-", "-", "-", "-",
                  f"UNMEASURED: {n} partition {'entry' if n == 1 else 'entries'} unusable")
                 for g, n in _unlisted(c.groups, c.partitions)]
        for r in c.partitions:
            fresh = format_freshness(r.freshness_ms, r.freshness_is_lower_bound)
            status = r.status.value + (f" ({r.lost_records} lost)" if r.data_loss else "")
            rows.append((r.key.cluster, r.key.consumer, r.key.topic, str(r.key.partition),
                         "-" if r.committed_offset is None else str(r.committed_offset),
                         "-" if r.log_end_offset is None and r.committed_offset is not None
                         else str(r.offset_lag), fresh, format_ms(r.commit_lag_ms), status))
    rows = [tuple(printable(cell) for cell in row) for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True))
                     .rstrip() for row in rows)
