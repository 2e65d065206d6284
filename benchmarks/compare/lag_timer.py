"""Where ours' ListOffsets in steady rounds come from: librdkafka's statistics timer.

    python -m benchmarks.compare.lag_timer

With ``statistics.interval.ms`` set, librdkafka starts a timer (every max(interval, 10 s)) for
every partition of every topic a consumer has handled, assigned or not, and each firing sends a
ListOffsets (log start) to the partition's leader unless the consumer already knows that
broker's Fetch carries the log start (Fetch >= v5, from the connection's ApiVersions). On
librdkafka's mock cluster (3 brokers, no JVM), a consumer bootstrapped from one broker reads the
partitions that broker leads, lets them go, and idles: the other brokers then get one
ListOffsets per partition they lead, and a connection (ApiVersions) opened for it alone; after
that nothing more. Prints what the consumer's own statistics count per broker.
"""

from __future__ import annotations

import json
import time
from typing import Any

from confluent_kafka import Consumer, TopicPartition

TOPIC = "lag-timer"


def main() -> None:
    holder = Consumer(
        {"test.mock.num.brokers": 3, "group.id": "holder", "allow.auto.create.topics": True}
    )
    holder.list_topics(TOPIC, timeout=10)  # the mock cluster creates it, leaders spread
    meta = holder.list_topics(TOPIC, timeout=10)
    brokers = {b.id: f"{b.host}:{b.port}" for b in meta.brokers.values()}
    leaders = {p: part.leader for p, part in meta.topics[TOPIC].partitions.items()}
    first = leaders[0]
    stats: dict[str, Any] = {}
    consumer = Consumer(
        {
            "bootstrap.servers": brokers[first],
            "group.id": "lag-timer",
            "enable.partition.eof": True,
            "statistics.interval.ms": 10_000,
            "stats_cb": lambda doc: stats.update(json.loads(doc)),
        }
    )
    mine = [p for p, leader in leaders.items() if leader == first]
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in mine])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and len(consumer.consume(10, 0.2)) < len(mine):
        pass
    consumer.unassign()
    print(f"partition leaders {leaders}; read and released partitions {mine} of broker {first}")
    deadline = time.monotonic() + 35  # three timer periods
    while time.monotonic() < deadline:
        consumer.consume(10, 0.5)
    for broker in sorted(stats.get("brokers", {}).values(), key=lambda b: b["nodeid"]):
        if broker["nodeid"] < 0:
            continue
        led = sum(1 for leader in leaders.values() if leader == broker["nodeid"])
        req = broker["req"]
        print(
            f"broker {broker['nodeid']} (leads {led}): ListOffsets {req.get('ListOffsets', 0)}, "
            f"ApiVersion {req.get('ApiVersion', 0)}, connects {broker['connects']}"
        )
    consumer.close()
    holder.close()


if __name__ == "__main__":
    main()
