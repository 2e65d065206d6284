"""The seams where I/O enters the core: tests and the Spark job plug in their own."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from freshness_tracker.domain.model import ClusterLags, ReadRequest, RecordRead

__all__ = ["BurrowSource", "RecordReader", "RetentionSource"]


class RecordReader(Protocol):
    """Reads the record at each requested offset of one cluster.

    Returns exactly one RecordRead per request (any order); a partition that cannot be read is a
    FAILED outcome, never an exception. Only a failure of the whole call (no broker reachable at
    all) may raise `freshness_tracker.errors.KafkaError`.
    """

    def read(self, requests: Sequence[ReadRequest]) -> list[RecordRead]: ...


class RetentionSource(Protocol):
    """`retention.ms` per topic of one cluster (None: unknown or infinite)."""

    def retention_ms(self, topics: Sequence[str]) -> dict[str, int | None]: ...


class BurrowSource(Protocol):
    """What a cycle asks Burrow (BurrowClient implements it; tests pass fakes)."""

    def clusters(self) -> list[str]: ...

    def cluster_servers(self, cluster: str) -> list[str]: ...

    def consumers(self, cluster: str) -> list[str]: ...

    def cluster_lags(self, cluster: str, groups: Sequence[str]) -> ClusterLags: ...
