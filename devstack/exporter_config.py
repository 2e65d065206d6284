"""The one builder of exporter configs (HOCON text) for tests and benchmarks.

:func:`exporter_config` writes only the keys it is given (the rest keep reference.conf's
defaults); :func:`stack_config` is the tests' usual config for one cluster of a RealStack.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from devstack import RealStack
from freshness_tracker.metrics import ALL_PARTITION_METRICS

#: The suites check every per-partition family's rules, so they export them all (the default
#: set is smaller: reference.conf `partitionMetrics`).
EVERY_FAMILY = f"partitionMetrics = {json.dumps(list(ALL_PARTITION_METRICS))}"


def cluster_entry(name: str, bootstrap: str | None, num_consumers: int | None = 1,
                  **props: str) -> dict[str, Any]:
    """One ``clusters`` entry; ``props`` are librdkafka properties, as they are."""
    kafka: dict[str, str] = {"bootstrap.servers": bootstrap} if bootstrap else {}
    kafka.update(props)
    entry: dict[str, Any] = {"name": name}
    if num_consumers is not None:
        entry["numConsumers"] = num_consumers
    return {**entry, "kafka": kafka}


def exporter_config(
    *, burrow_url: str, clusters: Sequence[Mapping[str, Any]], groups_allow: str | None = None,
    frequency: float | None = None, port: int | str | None = None,
    burrow_timeout: str | None = None, retries: int | None = None,
    lookup_timeout: str | None = None, topic_config_ttl: str | None = None,
    listen_address: str | None = None, worker_threads: int | None = None,
    every_family: bool = False, extra: str = "",
) -> str:  # fmt: skip
    """HOCON for the exporter: the keys given, nothing else. ``port="@PORT@"`` leaves the port
    for :class:`devstack.exporter.ExporterProcess` to fill in."""
    burrow = {"url": json.dumps(burrow_url), "timeout": burrow_timeout, "retries": retries}
    lookup = {"timeout": lookup_timeout, "topicConfigTtl": topic_config_ttl}
    lines = [
        _block("burrow", burrow),
        f"clusters = {json.dumps(list(clusters))}",
        groups_allow is not None and f"filters.groups.allow = [{json.dumps(groups_allow)}]",
        _block("lookup", lookup),
        frequency is not None and f"frequency_sec = {frequency:g}",
        port is not None and f"port = {port}",
        listen_address is not None and f"listenAddress = {json.dumps(listen_address)}",
        worker_threads is not None and f"workerThreadCount = {worker_threads}",
        every_family and EVERY_FAMILY,
        extra,
    ]
    return "".join(f"{line}\n" for line in lines if line)


def stack_config(
    stack: RealStack, groups_allow: str, *, burrow_url: str | None = None,
    cluster: str | None = None, kafka: Mapping[str, str] | None = None, port: int = 0,
    frequency_sec: float = 1, extra: str = "",
) -> str:  # fmt: skip
    """The tests' config for one cluster of ``stack``, measuring only the groups matching
    ``groups_allow`` (Burrow keeps every group of the session, so tests must not see each
    other's); ``kafka`` adds librdkafka properties (TLS/SASL, ``isolation.level``...)."""
    return exporter_config(
        burrow_url=burrow_url or stack.burrow_url, burrow_timeout="3s", retries=1,
        clusters=[cluster_entry(cluster or stack.cluster, stack.bootstrap_servers, 2,
                                **(kafka or {}))],
        groups_allow=groups_allow, lookup_timeout="4s", frequency=frequency_sec, port=port,
        listen_address="127.0.0.1", worker_threads=4, every_family=True, extra=extra)


def _block(name: str, values: Mapping[str, object]) -> str:
    given = [f"{k} = {v}" for k, v in values.items() if v is not None]
    return f"{name} {{ {', '.join(given)} }}" if given else ""
