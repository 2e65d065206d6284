"""Burrow v3 JSON → domain values. Pure and defensive: any body yields values or a
BurrowResponseError, never another exception (the parser is fuzzed).

Handles Burrow 1.2.1 (Debian) and 1.3+ shapes alike: `observedAt` is optional, `lag` may be
null, `start`/`end` may be null, `current_lag` may exceed 32 bits. `message` strings differ
between the wiki and the source, so they are never read.
"""

from __future__ import annotations

import math
from typing import Any

from freshness_tracker.domain.model import GroupLags, PartitionKey, PartitionLag
from freshness_tracker.errors import BurrowResponseError

__all__ = [
    "is_not_found",
    "parse_cluster_list",
    "parse_cluster_servers",
    "parse_consumer_list",
    "parse_group_lag",
]

MAX_NAME_LENGTH = 4096  # Kafka caps topic names at 249 bytes; anything huge is garbage
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _fail(what: str, url: str) -> BurrowResponseError:
    return BurrowResponseError(f"unexpected Burrow response from {url}: {what}", url)


def _object(body: Any, url: str, what: str = "body") -> dict[str, Any]:
    if not isinstance(body, dict):
        raise _fail(f"{what} is {type(body).__name__}, expected a JSON object", url)
    return body


def _int(value: Any, url: str, what: str) -> int:
    # bool is an int subclass in Python; Burrow never sends one where a number belongs.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(f"{what} is {type(value).__name__}, expected a number", url)
    if isinstance(value, float) and not math.isfinite(value):
        raise _fail(f"{what} is not a finite number", url)
    number = int(value)
    # Offsets, lags, partitions and timestamps are Kafka int64s; anything beyond is garbage
    # (and would overflow float() when /metrics renders it).
    if not INT64_MIN <= number <= INT64_MAX:
        raise _fail(f"{what} is out of range for a 64-bit integer", url)
    return number


def _name(value: Any, url: str, what: str) -> str:
    if not isinstance(value, str):
        raise _fail(f"{what} is {type(value).__name__}, expected a string", url)
    if not value or len(value) > MAX_NAME_LENGTH:
        raise _fail(f"{what} has length {len(value)}", url)
    return value


def _names(body: Any, field: str, url: str) -> list[str]:
    values = _object(body, url).get(field)
    if not isinstance(values, list):
        raise _fail(f"'{field}' is missing or not a list", url)
    return [_name(v, url, f"'{field}' entry") for v in values]


def parse_cluster_list(body: Any, url: str = "/v3/kafka") -> list[str]:
    """`GET /v3/kafka` → cluster names."""
    return _names(body, "clusters", url)


def parse_consumer_list(body: Any, url: str = "") -> list[str]:
    """`GET /v3/kafka/{c}/consumer` → group names."""
    return _names(body, "consumers", url)


def parse_cluster_servers(body: Any, url: str = "") -> list[str]:
    """`GET /v3/kafka/{c}` → `module.servers`: the bootstrap servers Burrow uses."""
    module = _object(_object(body, url).get("module"), url, "'module'")
    servers = module.get("servers")
    if not isinstance(servers, list):
        raise _fail("'module.servers' is missing or not a list", url)
    return [_name(s, url, "'module.servers' entry") for s in servers]


def is_not_found(body: Any) -> bool:
    """True for Burrow's 404 shape: a success-shaped body whose `status.status` is NOTFOUND."""
    if not isinstance(body, dict):
        return False
    status = body.get("status")
    return isinstance(status, dict) and status.get("status") == "NOTFOUND"


def _offset_entry(value: Any, url: str, what: str) -> tuple[int, int | None] | None:
    """`start`/`end` → (offset, timestamp) or None for null."""
    if value is None:
        return None
    entry = _object(value, url, what)
    offset = _int(entry.get("offset"), url, f"{what}.offset")
    ts_raw = entry.get("timestamp")
    timestamp = None if ts_raw is None else _int(ts_raw, url, f"{what}.timestamp")
    if offset < 0:
        return None  # Kafka's "no offset" sentinel (-1): treat as no commit
    if timestamp is not None and timestamp <= 0:
        timestamp = None
    return offset, timestamp


def _partition(value: Any, cluster: str, group: str, url: str) -> PartitionLag:
    entry = _object(value, url, "partition entry")
    topic = _name(entry.get("topic"), url, "partition.topic")
    partition = _int(entry.get("partition"), url, "partition.partition")
    if partition < 0:
        raise _fail(f"negative partition {partition}", url)
    end = _offset_entry(entry.get("end"), url, "partition.end")
    lag_raw = entry.get("current_lag", 0)
    current_lag = 0 if lag_raw is None else max(_int(lag_raw, url, "partition.current_lag"), 0)
    status = entry.get("status", "OK")
    complete_raw = entry.get("complete", 1.0)
    complete = 1.0 if complete_raw is None else _float(complete_raw, url)
    return PartitionLag(
        key=PartitionKey(cluster, group, topic, partition),
        committed_offset=end[0] if end else None,
        commit_time_ms=end[1] if end else None,
        current_lag=current_lag if end else 0,
        burrow_status=status if isinstance(status, str) and status else "OK",
        complete=complete,
    )


def _float(value: Any, url: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(f"'complete' is {type(value).__name__}, expected a number", url)
    try:
        number = float(value)
    except OverflowError:
        raise _fail("'complete' is out of range", url) from None
    return number if math.isfinite(number) else 0.0


def parse_group_lag(body: Any, cluster: str, group: str, url: str = "") -> GroupLags:
    """`GET /v3/kafka/{c}/consumer/{g}/lag` → GroupLags (all partitions)."""
    status = _object(_object(body, url).get("status"), url, "'status'")
    partitions = status.get("partitions")
    if partitions is None:
        partitions = []
    if not isinstance(partitions, list):
        raise _fail("'status.partitions' is not a list", url)
    parsed = tuple(_partition(p, cluster, group, url) for p in partitions)
    group_status = status.get("status")
    total = status.get("totallag", 0)
    return GroupLags(
        cluster=cluster,
        consumer=group,
        burrow_status=group_status if isinstance(group_status, str) and group_status else "OK",
        total_lag=max(_int(total, url, "status.totallag"), 0) if total is not None else 0,
        partitions=parsed,
    )
