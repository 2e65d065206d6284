"""The offsets bridge: tansu's group offsets turned into genuine ``__consumer_offsets`` records.

Why: tansu keeps committed offsets in its own store and never writes ``__consumer_offsets``, which
is what Burrow's ``kafka`` consumer module reads. The bridge polls tansu (list groups, list each
group's offsets) and produces real Kafka OffsetCommit records (key v1, value v1, Kafka's binary
layout) when an offset changes, and re-emits a live group's offsets every few seconds, as
auto-commit would. :func:`write_commit` writes one record with a chosen commit timestamp, for
deterministic tests.
"""

from __future__ import annotations

import logging
import struct
import threading
import time
from dataclasses import dataclass
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

__all__ = [
    "OFFSETS_TOPIC",
    "OffsetsBridge",
    "offset_commit_key",
    "offset_commit_value",
    "write_commit",
]

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"
DEFAULT_RETENTION_MS = 7 * 24 * 3600 * 1000


def _string(value: str) -> bytes:
    data = value.encode()
    return struct.pack(">h", len(data)) + data


def offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    """OffsetCommit key v1: ``int16 version, string group, string topic, int32 partition``."""
    return struct.pack(">h", 1) + _string(group) + _string(topic) + struct.pack(">i", partition)


def offset_commit_value(
    offset: int,
    commit_timestamp_ms: int,
    expire_timestamp_ms: int | None = None,
    metadata: str = "",
) -> bytes:
    """OffsetCommit value, version 1: ``int16 version, int64 offset, string metadata,
    int64 commit_timestamp, int64 expire_timestamp`` (Burrow 1.2.1 decodes v0, v1 and v3)."""
    if expire_timestamp_ms is None:
        expire_timestamp_ms = commit_timestamp_ms + DEFAULT_RETENTION_MS
    return (
        struct.pack(">hq", 1, offset)
        + _string(metadata)
        + struct.pack(">qq", commit_timestamp_ms, expire_timestamp_ms)
    )


def write_commit(
    producer: Producer,
    group: str,
    topic: str,
    partition: int,
    offset: int,
    commit_timestamp_ms: int,
    timeout_s: float = 10.0,
) -> None:
    """Write one OffsetCommit record with a chosen commit timestamp and wait until it is stored."""
    errors: list[object] = []

    def on_delivery(err: object, _msg: object) -> None:
        if err is not None:
            errors.append(err)

    producer.produce(
        OFFSETS_TOPIC,
        key=offset_commit_key(group, topic, partition),
        value=offset_commit_value(offset, commit_timestamp_ms),
        on_delivery=on_delivery,
    )
    if producer.flush(timeout_s) > 0:
        raise TimeoutError(f"OffsetCommit for group={group} not delivered in {timeout_s} s")
    if errors:
        raise RuntimeError(f"OffsetCommit for group={group} failed: {errors[0]}")


@dataclass
class _Emitted:
    offset: int
    changed_at: float  # monotonic time the offset last changed
    emitted_at: float  # monotonic time of the last record


class OffsetsBridge:
    """Mirrors tansu's committed offsets into ``__consumer_offsets`` from a background thread.

    A group is *live* while one of its offsets changed within ``live_for_s``; only live groups are
    re-emitted every ``reemit_interval_s``, so a group that stopped committing looks stopped to
    Burrow (STOP) rather than committing the same offset forever. Partitions written through
    :meth:`write_commit` are pinned: the bridge never emits them again (the chosen time stays).
    """

    def __init__(
        self,
        bootstrap_servers: str,
        poll_interval_s: float = 0.5,
        reemit_interval_s: float = 3.0,
        live_for_s: float = 60.0,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.poll_interval_s = poll_interval_s
        self.reemit_interval_s = reemit_interval_s
        self.live_for_s = live_for_s
        self._common: dict[str, Any] = {"bootstrap.servers": bootstrap_servers, "logger": log}
        self._producer = Producer({**self._common, "linger.ms": 0, "acks": "all"})
        self._admin: AdminClient | None = None
        self._state: dict[tuple[str, str, int], _Emitted] = {}
        self._pinned: set[tuple[str, str, int]] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._paused = threading.Event()
        self._thread: threading.Thread | None = None
        self.records_emitted = 0

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="offsets-bridge", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=15)
            self._thread = None
        self._producer.flush(5)

    def write_commit(
        self, group: str, topic: str, partition: int, offset: int, commit_timestamp_ms: int
    ) -> None:
        """Write one OffsetCommit with a chosen timestamp and pin the partition (see class doc)."""
        with self._lock:
            self._pinned.add((group, topic, partition))
        write_commit(self._producer, group, topic, partition, offset, commit_timestamp_ms)

    def pause(self) -> None:
        """Stop polling (the broker is being cut off) until :meth:`resume`."""
        self._paused.set()

    def resume(self) -> None:
        """Poll again, with fresh clients (see :meth:`reset_clients`)."""
        self.reset_clients()
        self._paused.clear()

    def reset_clients(self) -> None:
        """Use a fresh AdminClient from the next poll on.

        After its broker connection was cut, librdkafka's AdminClient can time out on every
        ``list_consumer_group_offsets`` (it never sends the OffsetFetch again); a new one works.
        """
        self._admin = None

    def sync_once(self) -> int:
        """One poll of tansu; returns how many OffsetCommit records were produced."""
        if self._admin is None:
            self._admin = AdminClient(self._common)
        admin = self._admin
        groups = admin.list_consumer_groups(request_timeout=5).result(timeout=10)
        now = time.monotonic()
        now_ms = int(time.time() * 1000)
        emitted = 0
        for listing in groups.valid:
            request = [ConsumerGroupTopicPartitions(listing.group_id)]
            futures = admin.list_consumer_group_offsets(request, request_timeout=5)
            result = futures[listing.group_id].result(timeout=10)
            for tp in result.topic_partitions or []:
                emitted += self._maybe_emit(listing.group_id, tp, now, now_ms)
        if emitted:
            self._producer.flush(10)
            self.records_emitted += emitted
        return emitted

    def _maybe_emit(self, group: str, tp: TopicPartition, now: float, now_ms: int) -> int:
        if tp.offset < 0 or tp.error is not None:
            return 0
        key = (group, tp.topic, tp.partition)
        with self._lock:
            if key in self._pinned:
                return 0
            seen = self._state.get(key)
            if seen is not None and seen.offset == tp.offset:
                live = now - seen.changed_at < self.live_for_s
                if not live or now - seen.emitted_at < self.reemit_interval_s:
                    return 0
                seen.emitted_at = now
            else:
                self._state[key] = _Emitted(tp.offset, now, now)
        self._producer.produce(
            OFFSETS_TOPIC,
            key=offset_commit_key(group, tp.topic, tp.partition),
            value=offset_commit_value(tp.offset, now_ms),
        )
        return 1

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            started = time.monotonic()
            if self._paused.is_set():
                self._stop.wait(self.poll_interval_s)
                continue
            try:
                self.sync_once()
                failures = 0
            except Exception as exc:  # keep bridging through broker outages
                self.reset_clients()
                failures += 1
                if failures == 1 or failures % 20 == 0:
                    log.warning("offsets bridge poll failed (%d in a row): %s", failures, exc)
            self._stop.wait(max(0.0, self.poll_interval_s - (time.monotonic() - started)))
