"""Burrow v3 JSON → domain values. Pure and defensive: any body yields values or a
BurrowResponseError, never another exception (the parser is fuzzed), and it never recurses, so
no nesting depth can raise RecursionError here.

Handles Burrow 1.2.1 (Debian) and 1.3+ shapes alike: `observedAt` is optional, `lag` may be
null, `start`/`end` may be null, `current_lag` may exceed 32 bits, `owner`/`client_id` may be
empty (1.2.1 against Kafka >= 2.1) or missing. `message` strings differ
between the wiki and the source, so they are never read.

One bad entry costs that entry only: a consumer-list entry that is no usable group name, or a
partition whose topic is not a Kafka topic name or whose number is not a partition number, or a
second entry for the same partition (the first is kept), is dropped and described in `rejected`
so the cycle counts and logs it. A body whose *shape* is not Burrow's (wrong JSON types, a
number that is not a whole int64 where Burrow sends an integer, an offset below Kafka's -1, no
`current_lag` beside a commit) or that is labelled with another cluster or group than the one
asked for is a BurrowResponseError: that group is unmeasured this cycle, with the reason.
Impossible *values* of the right type (a negative lag, absurd timestamps) are passed on as they
are; the domain decides what they mean (`domain.freshness`), because only it knows the time.
A status that is none of Burrow's words (missing, empty, garbled) is UNKNOWN, never OK.

Names that repeat across partitions and cycles (topics, member hosts and client ids, statuses)
are interned: a cycle's partitions hold a few thousand distinct strings, not several copies per
partition from the JSON decoder, in every snapshot built from them (docs/scale.md).
"""

from __future__ import annotations

import math
from sys import intern
from typing import Any

from freshness_tracker.domain.model import (
    BURROW_STATUS_CODES,
    UNKNOWN_STATUS,
    GroupLags,
    LagWindow,
    PartitionKey,
    PartitionLag,
)
from freshness_tracker.domain.names import (
    escaped,
    is_utf8,
    topic_name_problem,
    usable_group_names,
)
from freshness_tracker.errors import BurrowResponseError

__all__ = [
    "ConsumerList",
    "is_not_found",
    "parse_cluster_list",
    "parse_cluster_servers",
    "parse_consumer_list",
    "parse_group_lag",
]

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT32_MAX = 2**31 - 1  # Kafka partition numbers are int32
#: Burrow's status words, each mapped to itself (one string object per word in every answer).
_STATUSES: dict[str, str] = {word: word for word in BURROW_STATUS_CODES}
#: A group member's owner (host) or client.id; longer is garbage, kept out of the labels.
MAX_MEMBER_LENGTH = 255


class ConsumerList(list[str]):
    """The usable group names of a `/consumer` answer, in Burrow's order, each once.

    A plain list to every caller; `rejected` describes the entries that were dropped (empty, not
    UTF-8, not a string, listed twice) with the name escaped, for the cycle to count and log.
    """

    rejected: tuple[str, ...] = ()


def _fail(what: str, url: str) -> BurrowResponseError:
    return BurrowResponseError(f"unexpected Burrow response from {url}: {what}", url)


def _object(body: Any, url: str, what: str = "body") -> dict[str, Any]:
    if not isinstance(body, dict):
        raise _fail(f"{what} is {type(body).__name__}, expected a JSON object", url)
    return body


def _int(value: Any, url: str, what: str) -> int:
    if type(value) is int and INT64_MIN <= value <= INT64_MAX:  # the common case, at once
        return value
    # bool is an int subclass in Python; Burrow never sends one where a number belongs.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _fail(f"{what} is {type(value).__name__}, expected a number", url)
    if isinstance(value, float) and not math.isfinite(value):
        raise _fail(f"{what} is not a finite number", url)
    # Burrow's offsets, lags, partitions and timestamps are integers: 0.5 is no lag of 0.
    if isinstance(value, float) and not value.is_integer():
        raise _fail(f"{what} is {value!r}, not a whole number", url)
    number = int(value)
    # Offsets, lags, partitions and timestamps are Kafka int64s; anything beyond is garbage
    # (and would overflow float() when /metrics renders it).
    if not INT64_MIN <= number <= INT64_MAX:
        raise _fail(f"{what} is out of range for a 64-bit integer", url)
    return number


def _optional_int(value: Any, url: str, what: str) -> int | None:
    """None for null, else as `_int` (a plain int64 passes at once)."""
    if value is None:
        return None
    if type(value) is int and INT64_MIN <= value <= INT64_MAX:
        return value
    return _int(value, url, what)


def _names(body: Any, field: str, url: str) -> tuple[list[str], list[str]]:
    """(usable names, why each other entry was dropped) of a list of names."""
    values = _object(body, url).get(field)
    if not isinstance(values, list):
        raise _fail(f"'{field}' is missing or not a list", url)
    return usable_group_names(values)


def parse_cluster_list(body: Any, url: str = "/v3/kafka") -> list[str]:
    """`GET /v3/kafka` → cluster names; an unusable entry is skipped, never fails the others
    (it cannot equal a configured cluster's name anyway)."""
    return _names(body, "clusters", url)[0]


def parse_consumer_list(body: Any, url: str = "") -> ConsumerList:
    """`GET /v3/kafka/{c}/consumer` → usable group names, and the dropped entries described."""
    usable, rejected = _names(body, "consumers", url)
    consumers = ConsumerList(usable)
    consumers.rejected = tuple(rejected)
    return consumers


def parse_cluster_servers(body: Any, url: str = "") -> list[str]:
    """`GET /v3/kafka/{c}` → `module.servers`: the bootstrap servers Burrow uses."""
    module = _object(_object(body, url).get("module"), url, "'module'")
    servers = module.get("servers")
    if not isinstance(servers, list):
        raise _fail("'module.servers' is missing or not a list", url)
    return usable_group_names(servers)[0]  # an empty or garbled entry is no server: skipped


def is_not_found(body: Any) -> bool:
    """True for Burrow's 404 shape: a success-shaped body whose `status.status` is NOTFOUND."""
    if not isinstance(body, dict):
        return False
    status = body.get("status")
    return isinstance(status, dict) and status.get("status") == "NOTFOUND"


_END = ("partition.end", "partition.end.offset", "partition.end.timestamp", "partition.end.lag")
_START = ("partition.start", "partition.start.offset", "partition.start.timestamp",
          "partition.start.lag")


def _offset_entry(value: Any, url: str, names: tuple[str, str, str, str],
                  times: dict[int, int]) -> tuple[int, int | None, int | None] | None:
    """`start`/`end` → (offset, timestamp, lag), or None for null or Kafka's "no offset" (-1: no
    commit); an offset below that is no Kafka offset. A null or negative lag (Burrow >= 1.3
    sends null when it did not know the log end) is None, so is a timestamp <= 0; `times` keeps
    one int object per timestamp within an answer (a commit stamps every partition it covers
    with the same time). `names` name the entry and its fields in errors."""
    if value is None:
        return None
    entry = _object(value, url, names[0])
    offset = entry.get("offset")
    if not (type(offset) is int and INT64_MIN <= offset <= INT64_MAX):  # else: checked slowly
        offset = _int(offset, url, names[1])
    timestamp = _optional_int(entry.get("timestamp"), url, names[2])
    lag = _optional_int(entry.get("lag"), url, names[3])
    if offset < 0:
        if offset < -1:
            raise _fail(f"{names[1]} is {offset}, not a Kafka offset", url)
        return None
    if timestamp is not None:
        timestamp = times.setdefault(timestamp, timestamp) if timestamp > 0 else None
    return offset, timestamp, lag if lag is None or lag >= 0 else None


def _member(value: Any, seen: dict[str, str]) -> str:
    """`owner` / `client_id`: the text, or "" (unknown) for anything that is no usable name.
    `seen` remembers the verdicts within one answer (a member holds many partitions)."""
    if type(value) is not str:
        return ""
    found = seen.get(value)
    if found is None:
        found = seen[value] = (intern(value) if len(value) <= MAX_MEMBER_LENGTH
                               and is_utf8(value) else "")
    return found


def _status(value: Any) -> str:
    """One of Burrow's status words, or UNKNOWN for anything else: Burrow always sends a word,
    so a missing, empty or garbled one says nothing, and is never taken for OK."""
    return _STATUSES.get(value, UNKNOWN_STATUS) if type(value) is str else UNKNOWN_STATUS


class _Answer:
    """What one `/lag` answer's partitions share: the verdict on each topic, status and member
    name, and one int object per timestamp; each is worked out once per answer, not per
    partition."""

    __slots__ = ("cluster", "group", "members", "times", "topics", "url")

    def __init__(self, cluster: str, group: str, url: str) -> None:
        self.cluster, self.group, self.url = cluster, group, url
        self.topics: dict[str, tuple[str, str | None]] = {}
        self.times: dict[int, int] = {}
        self.members: dict[str, str] = {}


def _partition(value: Any, answer: _Answer) -> PartitionLag | str:
    """One `/lag` partition entry of a JSON body, its types checked, or why it was dropped."""
    url = answer.url
    entry = _object(value, url, "partition entry")
    raw_topic = entry.get("topic")
    if type(raw_topic) is not str:
        raise _fail(f"partition.topic is {type(raw_topic).__name__}, expected a string", url)
    partition = entry.get("partition")
    if not (type(partition) is int and INT64_MIN <= partition <= INT64_MAX):
        partition = _int(partition, url, "partition.partition")
    topic, dropped = _topic(answer, raw_topic, partition)
    if dropped:
        return dropped  # before the rest is checked: a dropped entry never fails its group
    end = _offset_entry(entry.get("end"), url, _END, answer.times)
    start = _offset_entry(entry.get("start"), url, _START, answer.times)
    lag_raw = entry.get("current_lag")
    if lag_raw is None or (type(lag_raw) is int and INT64_MIN <= lag_raw <= INT64_MAX):
        current_lag = lag_raw
    else:
        current_lag = _int(lag_raw, url, "partition.current_lag")
    complete = entry.get("complete", 1.0)
    if not (complete is None or (type(complete) is float and math.isfinite(complete))):
        complete = _float(complete, url)
    return _lag(answer, topic, partition, end, start, current_lag, complete,
                entry.get("status"), entry.get("owner"), entry.get("client_id"))


def _topic(answer: _Answer, raw_topic: str, partition: int) -> tuple[str, str | None]:
    """(the topic, interned; why the entry is dropped, or None): an impossible topic name or
    partition number."""
    known = answer.topics.get(raw_topic)
    if known is None:
        known = answer.topics[raw_topic] = (intern(raw_topic), topic_name_problem(raw_topic))
    topic, problem = known
    if problem:
        return topic, f"partition entry of topic {escaped(topic)}: the topic {problem}"
    if not 0 <= partition <= INT32_MAX:
        return topic, f"topic {topic} partition {partition}: not a Kafka partition number"
    return topic, None


def _lag(answer: _Answer, topic: str, partition: int,
         end: tuple[int, int | None, int | None] | None,
         start: tuple[int, int | None, int | None] | None, current_lag: int | None,
         complete: float | None, raw_status: Any, owner: Any, client_id: Any,
         ) -> PartitionLag:
    """One usable partition from the values `_partition` checked."""
    if not end:
        current_lag = 0  # no commit: nothing of the log is the group's to wait on
    elif current_lag is None:
        # Burrow always sends the lag of a commit: without it, whether records wait is unknown.
        raise _fail(f"topic {topic} partition {partition}: a commit without current_lag",
                    answer.url)
    members = answer.members
    return PartitionLag(
        key=PartitionKey(cluster=answer.cluster, consumer=answer.group, topic=topic,
                         partition=partition),
        committed_offset=end[0] if end else None,
        commit_time_ms=end[1] if end else None,
        # A negative lag is kept as it is: the domain reports it as impossible (never "caught
        # up").
        current_lag=current_lag,
        burrow_status=_status(raw_status),
        complete=1.0 if complete is None else complete,
        window=None if start is None or end is None else LagWindow(
            start_ms=start[1], start_lag=start[2], end_ms=end[1], end_lag=end[2]),
        owner=_member(owner, members),
        client_id=_member(client_id, members),
    )


def _float(value: Any, url: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _fail(f"'complete' is {type(value).__name__}, expected a number", url)
    try:
        number = float(value)
    except OverflowError:
        raise _fail("'complete' is out of range", url) from None
    return number if math.isfinite(number) else 0.0


def _check_labels(cluster: Any, group: Any, answer: _Answer) -> None:
    """A BurrowResponseError when the body names another cluster or group than was asked (a
    proxy or cache in front of Burrow answering for the wrong path); a body that names none
    (older or minimal Burrow-like servers) is taken as the one asked for."""
    for what, named, asked in (("cluster", cluster, answer.cluster),
                               ("group", group, answer.group)):
        if named is not None and named != asked:
            raise _fail(f"the answer is labelled {what} {escaped(named)}, not the asked "
                        f"{escaped(asked)}", answer.url)


def parse_group_lag(body: Any, cluster: str, group: str, url: str = "",
                    observed_ms: int | None = None) -> GroupLags:
    """`GET /v3/kafka/{c}/consumer/{g}/lag` (a JSON body) → GroupLags (all usable partitions),
    observed at `observed_ms` (when the answer arrived, if the caller knows).

    A partition listed twice keeps its first entry: Burrow lists each partition once, so a
    second one is garbage, and exporting both would double the series and the topic's lag. A
    body labelled with another cluster or group (`status.cluster`, `status.group`) is not this
    group's answer: a BurrowResponseError, never values under the asked name.
    """
    answer = _Answer(cluster, group, url)
    status = _object(_object(body, url).get("status"), url, "'status'")
    _check_labels(status.get("cluster"), status.get("group"), answer)
    partitions = status.get("partitions")
    if partitions is None:
        partitions = []
    if not isinstance(partitions, list):
        raise _fail("'status.partitions' is not a list", url)
    entries = [_partition(raw, answer) for raw in partitions]
    raw_status, total = status.get("status"), status.get("totallag", 0)
    parsed: list[PartitionLag] = []
    rejected: list[str] = []
    unusable = 0
    seen: set[tuple[str, int]] = set()
    for entry in entries:
        if isinstance(entry, str):
            rejected.append(entry)
            unusable += 1
            continue
        where = (entry.key.topic, entry.key.partition)
        if where in seen:
            rejected.append(f"topic {where[0]} partition {where[1]}: listed again (the first "
                            "entry is used)")
            continue
        seen.add(where)
        parsed.append(entry)
    return GroupLags(
        cluster=cluster,
        consumer=group,
        burrow_status=_status(raw_status),
        # Parsed for the shape check only: the exported group lag is the sum of the partitions'.
        total_lag=max(_int(total, url, "status.totallag"), 0) if total is not None else 0,
        partitions=tuple(parsed),
        rejected=tuple(rejected),
        unusable_partitions=unusable,
        observed_ms=observed_ms,
    )
