"""Settings of the Kafka lookup engine (one struct per concern, as kminion does)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = ["ClusterKafkaSettings", "LookupSettings"]


@dataclass(frozen=True, slots=True)
class LookupSettings:
    """How point reads are batched and bounded; shared by every cluster."""

    batch_size: int = 200  # partitions one consumer assigns at once
    timeout_s: float = 10.0  # deadline for one batch
    fetch_wait_max_ms: int = 100  # broker hold time for an empty fetch
    # per partition per fetch; a bigger record still arrives whole
    max_partition_fetch_bytes: int = 65_536
    fetch_max_bytes: int = 4_194_304  # per fetch response
    queued_max_messages_kbytes: int = 8_192  # librdkafka prefetch queue bound per consumer
    cache_size: int = 200_000  # (cluster, topic, partition, offset) -> timestamp entries
    topic_config_ttl_s: float = 600.0  # how long retention.ms answers are reused
    # read C−1 of caught-up partitions too (once per offset movement), so groups that keep up
    # get a commit lag and data-current-as-of
    commit_lag_when_caught_up: bool = True


@dataclass(frozen=True, slots=True)
class ClusterKafkaSettings:
    """One cluster's client settings: `properties` go to librdkafka as given (SSL, SASL, ...)."""

    name: str
    properties: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    num_consumers: int = 2
