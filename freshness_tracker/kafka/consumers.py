"""A small, bounded pool of lookup consumers per cluster.

Creating a librdkafka consumer costs threads, sockets and a metadata round trip, so consumers are
reused across cycles. They are only ever `assign()`ed, never subscribed and never committed: the
`group.id` exists because librdkafka requires one, but no group is joined or created.

The consumer is a seam: `ConsumerPool` takes a `consumer_factory` so unit tests can drive the
lookup state machine with a fake consumer instead of a broker.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from freshness_tracker.kafka.client_log import ClientLogRelay
from freshness_tracker.kafka.settings import ClusterKafkaSettings, LookupSettings

__all__ = [
    "CLIENT_ID",
    "FORCED_SETTINGS",
    "LOOKUP_GROUP_ID",
    "ConsumerFactory",
    "ConsumerPool",
    "LookupConsumer",
    "PoolClosed",
    "build_consumer_config",
    "fetch_requests_from_stats",
]

logger = logging.getLogger(__name__)

#: librdkafka demands a group.id even for assign(); we never join, subscribe or commit with it.
LOOKUP_GROUP_ID = "freshness-tracker-lookups"
CLIENT_ID = "freshness-tracker"

#: Settings that keep a lookup read-only and honest; user properties cannot override them.
#: `auto.offset.reset=error` makes an offset below the log start surface as an error event
#: instead of silently jumping to another record; EOF events tell "nothing there" from "slow".
#: A lookup names topics Burrow reported (reads, the reachability check): on a broker with
#: `auto.create.topics.enable` a deleted one must not be created again by asking for it.
FORCED_SETTINGS: Mapping[str, str] = {
    "enable.auto.commit": "false",
    "enable.auto.offset.store": "false",
    "auto.offset.reset": "error",
    "enable.partition.eof": "true",
    "allow.auto.create.topics": "false",
}


class LookupConsumer(Protocol):
    """The subset of `confluent_kafka.Consumer` the lookup engine uses (the test seam)."""

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any: ...

    def incremental_assign(self, partitions: list[Any]) -> None: ...

    def incremental_unassign(self, partitions: list[Any]) -> None: ...

    def unassign(self) -> None: ...

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Any]: ...

    def get_watermark_offsets(
        self, partition: Any, timeout: float = -1, cached: bool = False
    ) -> tuple[int, int]: ...

    def close(self) -> None: ...


#: Builds a consumer from a librdkafka config dict (which includes the callbacks).
ConsumerFactory = Callable[[dict[str, Any]], LookupConsumer]


class PoolClosed(RuntimeError):
    """Raised by `borrow()` once the pool has been closed."""


def _default_factory(config: dict[str, Any]) -> LookupConsumer:
    from confluent_kafka import Consumer

    consumer: LookupConsumer = Consumer(config)
    return consumer


def build_consumer_config(
    settings: ClusterKafkaSettings,
    lookup: LookupSettings,
    statistics_interval_ms: int = 0,
) -> tuple[dict[str, str], list[str]]:
    """Safe defaults, then the user's properties, then the forced settings.

    Returns the config and the forced keys the user tried to set to something else (so the
    caller can warn once). Only plain string settings: callbacks are added by the pool.
    """
    config: dict[str, str] = {
        "client.id": CLIENT_ID,
        "group.id": LOOKUP_GROUP_ID,
        "fetch.wait.max.ms": str(lookup.fetch_wait_max_ms),
        # librdkafka's default 1000 ms backoff after an empty fetch stalls lookups by a second.
        "fetch.queue.backoff.ms": "1",
        "max.partition.fetch.bytes": str(lookup.max_partition_fetch_bytes),
        "fetch.max.bytes": str(lookup.fetch_max_bytes),
        "queued.max.messages.kbytes": str(lookup.queued_max_messages_kbytes),
        # A lookup needs the first record(s) at an offset, not a prefetch: with the default
        # (100000) librdkafka re-fetches every partition the moment its data arrives, before the
        # engine can drop it, and that follow-up Fetch at the log end is held by the broker for
        # fetch.wait.max.ms and delays the consumer's next batch. With 1, a partition whose
        # record is still queued is not fetched again (benchmarks/bench_cycle.py measures it).
        "queued.min.messages": "1",
        # We want the record that is in the log at the offset, even inside an open or aborted
        # transaction: read_committed would hide records past the LSO and report END instead.
        "isolation.level": "read_uncommitted",
        # Brokers close idle connections between cycles; that is not worth a log line.
        "log.connection.close": "false",
    }
    if statistics_interval_ms > 0:
        config["statistics.interval.ms"] = str(statistics_interval_ms)
    config.update({k: str(v) for k, v in settings.properties.items()})
    overridden = sorted(
        key
        for key, value in FORCED_SETTINGS.items()
        if key in config and config[key].strip().lower() != value
    )
    config.update(FORCED_SETTINGS)
    return config, overridden


def fetch_requests_from_stats(stats_json: str) -> int:
    """Sum of `brokers[*].req.Fetch` in one librdkafka statistics document (cumulative)."""
    try:
        stats = json.loads(stats_json)
        brokers = stats.get("brokers", {})
        return sum(int(b.get("req", {}).get("Fetch", 0)) for b in brokers.values())
    except (ValueError, TypeError, AttributeError):
        return 0


@dataclass(slots=True)
class _Slot:
    """One live consumer and what its callbacks told us about it."""

    consumer: LookupConsumer | None = None
    fatal: bool = False
    discard: bool = False
    last_error: str | None = None
    fetch_requests: int = 0


class ConsumerPool:
    """Up to `settings.num_consumers` consumers of one cluster, created lazily, lent one at a time.

    `borrow()` blocks while every consumer is lent out. A consumer that reported a fatal error,
    was `discard()`ed, or whose borrower raised is closed on return and replaced by a new one on
    a later borrow.
    """

    def __init__(
        self,
        settings: ClusterKafkaSettings,
        lookup: LookupSettings,
        *,
        statistics_interval_ms: int = 0,
        consumer_factory: ConsumerFactory | None = None,
    ) -> None:
        if settings.num_consumers < 1:
            raise ValueError(f"num_consumers must be >= 1, got {settings.num_consumers}")
        self._settings = settings
        self._factory = consumer_factory or _default_factory
        self._config, overridden = build_consumer_config(settings, lookup, statistics_interval_ms)
        if overridden:
            logger.warning(
                "cluster %s: ignoring properties %s: lookups force %s",
                settings.name,
                ", ".join(overridden),
                ", ".join(f"{k}={FORCED_SETTINGS[k]}" for k in overridden),
            )
        self._lock = threading.Lock()
        # A token per consumer allowed: None means "not created yet" (lazy creation).
        self._tokens: queue.LifoQueue[_Slot | None] = queue.LifoQueue()
        for _ in range(settings.num_consumers):
            self._tokens.put(None)
        self._slots: dict[int, _Slot] = {}
        self._retired_fetch_requests = 0
        self._created = 0
        self._replaced = 0
        self._closed = False
        self._warned_codes: set[str] = set()
        self._client_log = ClientLogRelay(settings.name)

    # --- public API -----------------------------------------------------------------------

    @property
    def cluster(self) -> str:
        return self._settings.name

    @property
    def size(self) -> int:
        """How many consumers may exist at once (and so how many batches run in parallel)."""
        return self._settings.num_consumers

    @property
    def bootstrap_servers(self) -> str:
        return self._config.get("bootstrap.servers", "")

    def config(self) -> dict[str, str]:
        """The librdkafka settings (without callbacks). May contain secrets: do not log it."""
        return dict(self._config)

    @contextmanager
    def borrow(self, timeout: float | None = None) -> Iterator[LookupConsumer]:
        """Lend one consumer; blocks up to `timeout` (None: forever) for a free one.

        Raises `TimeoutError` if none became free, `PoolClosed` after `close()`, and whatever the
        consumer constructor raises (a bad config).
        """
        slot = self._acquire(timeout)
        ok = False
        try:
            assert slot.consumer is not None
            yield slot.consumer
            ok = True
        finally:
            self._release(slot, ok)

    def discard(self, consumer: LookupConsumer) -> None:
        """Close `consumer` when it is returned instead of lending it again."""
        with self._lock:
            slot = self._slots.get(id(consumer))
            if slot is not None:
                slot.discard = True

    def last_error(self, consumer: LookupConsumer) -> str | None:
        """The last client-level error librdkafka reported for this consumer (error_cb)."""
        with self._lock:
            slot = self._slots.get(id(consumer))
            return slot.last_error if slot else None

    def fetch_requests(self) -> int:
        """Fetch requests sent by all consumers of this pool so far (needs statistics enabled).

        Statistics arrive every `statistics.interval.ms` while a consumer is polled, so the
        figure can lag by one interval.
        """
        with self._lock:
            live = sum(s.fetch_requests for s in self._slots.values())
            return self._retired_fetch_requests + live

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {
                "consumers_created": self._created,
                "consumers_replaced": self._replaced,
                "consumers_live": len(self._slots),
            }

    def close(self) -> None:
        """Close idle consumers now; lent ones are closed when they come back."""
        with self._lock:
            self._closed = True
        while True:
            try:
                slot = self._tokens.get_nowait()
            except queue.Empty:
                break
            if slot is not None:
                self._close_slot(slot)

    # --- internals ------------------------------------------------------------------------

    def _acquire(self, timeout: float | None) -> _Slot:
        if self._closed:
            raise PoolClosed(f"consumer pool of cluster {self.cluster} is closed")
        try:
            slot = self._tokens.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(
                f"no lookup consumer of cluster {self.cluster} became free in {timeout} s"
            ) from None
        if self._closed:
            if slot is not None:
                self._close_slot(slot)
            self._tokens.put(None)
            raise PoolClosed(f"consumer pool of cluster {self.cluster} is closed")
        if slot is not None:
            slot.last_error = None  # a borrower only cares about errors during its own use
            return slot
        try:
            return self._create()
        except BaseException:
            self._tokens.put(None)
            raise

    def _create(self) -> _Slot:
        slot = _Slot()
        config: dict[str, Any] = dict(self._config)
        config["error_cb"] = lambda err: self._on_error(slot, err)
        config["logger"] = self._client_log
        if "statistics.interval.ms" in config:
            config["stats_cb"] = lambda doc: self._on_stats(slot, doc)
        slot.consumer = self._factory(config)
        with self._lock:
            self._slots[id(slot.consumer)] = slot
            self._created += 1
        logger.debug("cluster %s: created lookup consumer #%d", self.cluster, self._created)
        return slot

    def _release(self, slot: _Slot, ok: bool) -> None:
        if ok and not slot.fatal and not slot.discard and not self._closed and self._reset(slot):
            self._tokens.put(slot)
            return
        if not self._closed and (slot.fatal or slot.discard or not ok):
            with self._lock:
                self._replaced += 1
            logger.info(
                "cluster %s: replacing lookup consumer (fatal=%s, last error: %s)",
                self.cluster,
                slot.fatal,
                slot.last_error,
            )
        self._close_slot(slot)
        self._tokens.put(None)

    def _reset(self, slot: _Slot) -> bool:
        """Drop any assignment left behind so the next borrower starts clean."""
        assert slot.consumer is not None
        try:
            slot.consumer.unassign()
        except Exception as exc:  # a consumer that cannot unassign is not trustworthy
            slot.last_error = str(exc)
            return False
        return True

    def _close_slot(self, slot: _Slot) -> None:
        consumer = slot.consumer
        if consumer is None:
            return
        with self._lock:
            self._slots.pop(id(consumer), None)
            self._retired_fetch_requests += slot.fetch_requests
        try:
            consumer.close()
        except Exception as exc:
            logger.debug("cluster %s: closing a lookup consumer failed: %s", self.cluster, exc)
        slot.consumer = None

    def _on_error(self, slot: _Slot, err: Any) -> None:
        """librdkafka error_cb: remember the error, flag fatal ones, warn once per code."""
        text = err.str() if hasattr(err, "str") else str(err)
        slot.last_error = text
        fatal = bool(getattr(err, "fatal", lambda: False)())
        if fatal:
            slot.fatal = True
            logger.error("cluster %s: lookup consumer fatal error: %s", self.cluster, text)
            return
        code = str(getattr(err, "name", lambda: text)())
        first = code not in self._warned_codes
        self._warned_codes.add(code)
        logger.log(logging.WARNING if first else logging.DEBUG,
                   "cluster %s: Kafka client error: %s", self.cluster, text)

    def _on_stats(self, slot: _Slot, stats_json: str) -> None:
        count = fetch_requests_from_stats(stats_json)
        with self._lock:
            slot.fetch_requests = max(slot.fetch_requests, count)
