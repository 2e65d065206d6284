"""What the Spark suite's modules share: the recorded Burrow and the fleet the snapshot tests
measure (set up by conftest's `fleet` fixture), and the generated history the report tests read.
Test modules import these from here, never from one another."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from freshness_tracker.burrow.client import BurrowClient
from freshness_tracker.config.settings import Settings
from freshness_tracker.domain.model import (
    ClusterHealth,
    ClusterLags,
    ClusterSnapshot,
    PartitionKey,
    PartitionResult,
    PartitionStatus,
)
from freshness_tracker.sinks.history import write_snapshot

N = 12  # records per partition of the fleet


class RecordedBurrow:
    """Asks the real Burrow once per question and replays the answer: both runs measure the
    very same Burrow snapshot (Burrow re-evaluates statuses as time passes)."""

    def __init__(self, client: BurrowClient) -> None:
        self._client = client
        self._answers: dict[tuple[str, tuple[Any, ...]], Any] = {}

    def _ask(self, name: str, *args: Any) -> Any:
        key = (name, args)
        if key not in self._answers:
            self._answers[key] = getattr(self._client, name)(*args)
        return self._answers[key]

    def clusters(self) -> list[str]:
        return list(self._ask("clusters"))

    def cluster_servers(self, cluster: str) -> list[str]:
        return list(self._ask("cluster_servers", cluster))

    def consumers(self, cluster: str) -> list[str]:
        return list(self._ask("consumers", cluster))

    def cluster_lags(self, cluster: str, groups: Sequence[str]) -> ClusterLags:
        lags: ClusterLags = self._ask("cluster_lags", cluster, tuple(sorted(groups)))
        return lags


@dataclass
class Fleet:
    settings: Settings
    config: Path
    timestamps: dict[tuple[str, int], list[int]]  # (topic, partition) -> record timestamps
    # (group, topic, p) -> (offset, commit time: the broker's stamp, as Burrow reports it)
    commits: dict[tuple[str, str, int], tuple[int, int]]
    now_ms: int


T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
M = 60_000
S = 1_000

OBJECTIVES = """
objectives = [
  { consumer = "orders-.*", freshness = 5m, target = 95% }
  { consumer = "billing", topic = "invoices", freshness = 1m, target = 50% }
]
"""


def row(cluster: str, consumer: str, topic: str, partition: int, t: int, freshness: int,
         loss: bool = False) -> PartitionResult:
    return PartitionResult(
        PartitionKey(cluster, consumer, topic, partition),
        PartitionStatus.DATA_LOSS if loss else PartitionStatus.OK, "OK", 100, 110, 10, t - 5_000,
        t - freshness, freshness, 1_000, lost_records=100 if loss else 0)


def write(root: str, cluster: str, t: int, rows: list[PartitionResult]) -> None:
    health = ClusterHealth(cluster, True, t, t, 0, partitions=len(rows))
    write_snapshot(root, ClusterSnapshot(cluster, 0, t, t, health, tuple(rows)))


def generate(root: str) -> None:
    for i in range(-2, 62):  # a little before and after the window, too
        t = T0 + i * M
        if not 30 <= i <= 34:
            write(root, "east", t, [
                row("east", "orders-app", "orders", 0, t, 60 * S),
                row("east", "orders-app", "orders", 1, t, 600 * S if 10 <= i <= 14 else 30 * S),
                row("east", "orders-app", "payments", 0, t, 120 * S),
                row("east", "billing", "invoices", 0, t, 90 * S if 20 <= i <= 39 else 30 * S),
                row("east", "billing", "audit", 0, t, 3600 * S, loss=50 <= i <= 59),
            ])
        west = t - 30 * S
        write(root, "west", west, [row("west", "idle", "events", 0, west, 0)])
