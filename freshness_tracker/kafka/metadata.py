"""A cluster's topic metadata for lookup planning: who leads each partition, or why none can.

One home for what the thread-pool engine (`kafka/lookup.py`) and the Spark driver
(`spark/reader.py`) both ask before they cut leader batches.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaException

from freshness_tracker.errors import ClusterUnavailable
from freshness_tracker.kafka.consumers import ConsumerPool, LookupConsumer

__all__ = ["cluster_metadata", "leader_of"]


def cluster_metadata(
    pool: ConsumerPool,
    cluster: str,
    timeout_s: float,
    *,
    seen: Callable[[LookupConsumer, Any], None] | None = None,
    topic: str | None = None,
) -> Any:
    """Every topic's metadata (or only `topic`'s: a far smaller answer), from one pooled
    consumer (`seen(consumer, metadata)` is told which). A failure means the cluster is down,
    not the consumer: it stays in the pool, and ClusterUnavailable names the servers tried."""
    error: Exception
    try:
        with pool.borrow(timeout=timeout_s) as consumer:
            try:
                metadata = consumer.list_topics(topic=topic, timeout=timeout_s)
            except KafkaException as exc:  # the brokers' answer; the consumer itself is fine
                error = exc
            else:
                if seen is not None:
                    seen(consumer, metadata)
                return metadata
    except Exception as exc:  # no consumer could be created or borrowed
        error = exc
    servers = pool.bootstrap_servers or "(no bootstrap.servers)"
    raise ClusterUnavailable(f"cluster {cluster}: no broker reachable at {servers}: {error}") \
        from error


def leader_of(metadata: Any, topic: str, partition: int) -> tuple[int, str | None]:
    """(leader id, None), or (-1, why the partition cannot be read)."""
    topic_meta = metadata.topics.get(topic)
    if topic_meta is None:
        return -1, f"unknown topic {topic}"
    if topic_meta.error is not None:
        return -1, f"topic {topic}: {topic_meta.error.str()}"
    part_meta = topic_meta.partitions.get(partition)
    if part_meta is None:
        return -1, f"unknown partition {topic}[{partition}]"
    if part_meta.leader is None or part_meta.leader < 0:
        return -1, f"{topic}[{partition}] has no leader"
    return int(part_meta.leader), None
