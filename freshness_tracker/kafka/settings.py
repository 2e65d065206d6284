"""Settings of the Kafka lookup engine (one struct per concern, as kminion does); defaults from
reference.conf (`freshness_tracker.reference`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from freshness_tracker.reference import default, default_seconds

__all__ = ["ClusterKafkaSettings", "LookupSettings"]


@dataclass(frozen=True, slots=True)
class LookupSettings:
    """How point reads are batched and bounded; shared by every cluster."""

    batch_size: int = default("lookup.batchSize")  # partitions one consumer assigns at once
    timeout_s: float = default_seconds("lookup.timeout")  # deadline for one batch
    # broker hold time for an empty fetch
    fetch_wait_max_ms: int = round(default_seconds("lookup.fetchWaitMax") * 1000)
    # per partition per fetch; a bigger record still arrives whole
    max_partition_fetch_bytes: int = default("lookup.maxPartitionFetchBytes")
    fetch_max_bytes: int = default("lookup.fetchMaxBytes")  # per fetch response
    # librdkafka prefetch queue bound per consumer
    queued_max_messages_kbytes: int = default("lookup.queuedMaxMessagesKbytes")
    # (cluster, topic, partition, offset) -> timestamp entries
    cache_size: int = default("lookup.cacheSize")
    # how long retention.ms answers are reused
    topic_config_ttl_s: float = default_seconds("lookup.topicConfigTtl")
    # read C−1 of caught-up partitions too (once per offset movement), so groups that keep up
    # get a commit lag and data-current-as-of
    commit_lag_when_caught_up: bool = default("lookup.commitLagWhenCaughtUp")


@dataclass(frozen=True, slots=True)
class ClusterKafkaSettings:
    """One cluster's client settings: `properties` go to librdkafka as given (SSL, SASL, ...)."""

    name: str
    properties: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    num_consumers: int = 2
