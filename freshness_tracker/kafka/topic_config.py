"""`retention.ms` per topic, from the brokers, cached for a while.

Retention tells how close a lagging group is to losing data (headroom = retention - freshness).
It changes rarely, so answers are reused for `ttl_s`; topics are described in batches so a
cluster with thousands of topics costs a few DescribeConfigs requests per TTL. Failures are not
fatal to a cycle: the topic's retention is reported unknown (None) and logged once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any

from freshness_tracker.deadline import bound
from freshness_tracker.kafka.client_log import ClientLogRelay
from freshness_tracker.kafka.settings import ClusterKafkaSettings, LookupSettings

__all__ = ["AdminFactory", "TopicRetention", "parse_retention"]

logger = logging.getLogger(__name__)

#: Builds the AdminClient lazily (the seam for tests).
AdminFactory = Callable[[], Any]

_RETENTION_KEY = "retention.ms"
_MAX_WARNED = 1_000


def parse_retention(value: str | None) -> int | None:
    """`retention.ms` as an int; None for missing, infinite (-1 or any negative) or garbage."""
    if value is None:
        return None
    try:
        retention = int(value)
    except ValueError:
        return None
    return retention if retention >= 0 else None


def _admin_from_properties(properties: Mapping[str, str], cluster: str) -> AdminFactory:
    relay = ClientLogRelay(cluster)  # one per cluster: a replaced client keeps the counts

    def factory() -> Any:
        from confluent_kafka.admin import AdminClient

        config: dict[str, Any] = {"client.id": "freshness-tracker"}
        config.update({k: str(v) for k, v in properties.items()})
        config["logger"] = relay
        return AdminClient(config)

    return factory


class TopicRetention:
    """`RetentionSource` for one cluster via `AdminClient.describe_configs`.

    `admin` is either an AdminClient factory or the cluster's librdkafka properties.
    """

    def __init__(
        self,
        admin: AdminFactory | Mapping[str, str],
        ttl_s: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
        *,
        cluster: str = "",
        timeout_s: float = 10.0,
        batch_size: int = 100,
    ) -> None:
        self._factory: AdminFactory = (
            admin if callable(admin) else _admin_from_properties(admin, cluster))
        self._ttl_s = ttl_s
        self._clock = clock
        self._cluster = cluster
        self._timeout_s = timeout_s
        self._batch_size = max(1, batch_size)
        self._admin: Any = None
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[int | None, float]] = {}
        self._warned: set[str] = set()
        self.requests = 0  # DescribeConfigs calls made, for tests and self-metrics

    @classmethod
    def for_cluster(cls, kafka: ClusterKafkaSettings, lookup: LookupSettings) -> TopicRetention:
        """The cluster's source as the exporter and the Spark job both configure it."""
        return cls(dict(kafka.properties), ttl_s=lookup.topic_config_ttl_s, cluster=kafka.name,
                   timeout_s=lookup.timeout_s)

    def retention_ms(self, topics: Sequence[str]) -> dict[str, int | None]:
        """retention.ms per topic (None: unknown or infinite); never raises."""
        wanted = list(dict.fromkeys(topics))
        now = self._clock()
        result: dict[str, int | None] = {}
        stale: list[str] = []
        with self._lock:
            for topic in wanted:
                cached = self._cache.get(topic)
                if cached is not None and now - cached[1] < self._ttl_s:
                    result[topic] = cached[0]
                else:
                    stale.append(topic)
        for start in range(0, len(stale), self._batch_size):
            batch = stale[start : start + self._batch_size]
            # past the cycle's deadline: unknown, not waited for
            result.update(self._describe(batch) if bound(self._timeout_s) > 0
                          else dict.fromkeys(batch))
        return result

    # --- internals ------------------------------------------------------------------------

    def _describe(self, topics: list[str]) -> dict[str, int | None]:
        """One DescribeConfigs request for `topics`; failed topics map to None, uncached."""
        try:
            futures = self._submit(topics)
        except Exception as exc:
            self._reset_admin()
            self._warn_once(topics, exc)
            return dict.fromkeys(topics)
        answers: dict[str, int | None] = {}
        failed: dict[str, BaseException] = {}
        for topic, future in futures.items():
            try:
                entries = future.result(timeout=bound(self._timeout_s + 1.0))
            except Exception as exc:
                failed[topic] = exc
                answers[topic] = None
                continue
            entry = entries.get(_RETENTION_KEY)
            answers[topic] = parse_retention(None if entry is None else entry.value)
        self._remember({t: v for t, v in answers.items() if t not in failed})
        if any(_is_transport_failure(e) for e in failed.values()):
            self._reset_admin()
        for error, group in _group_errors(failed).items():
            self._warn_once(group, error)
        return answers

    def _submit(self, topics: list[str]) -> dict[str, Future[Any]]:
        # Public names of confluent_kafka.admin that its stubs do not re-export explicitly.
        from confluent_kafka.admin import (  # type: ignore[attr-defined]
            ConfigResource,
            ResourceType,
        )

        with self._lock:
            if self._admin is None:
                self._admin = self._factory()
            admin = self._admin
        resources = [ConfigResource(ResourceType.TOPIC, topic) for topic in topics]
        self.requests += 1
        futures = admin.describe_configs(resources,
                                         request_timeout=max(bound(self._timeout_s), 0.001))
        return {resource.name: future for resource, future in futures.items()}

    def _reset_admin(self) -> None:
        """Drop the client after a failure: librdkafka's AdminClient can stay wedged after its
        connection was cut (requests never re-sent), so the next cycle starts with a new one."""
        with self._lock:
            self._admin = None

    def _remember(self, answers: Mapping[str, int | None]) -> None:
        now = self._clock()
        with self._lock:
            self._cache.update((topic, (value, now)) for topic, value in answers.items())

    def _warn_once(self, topics: Iterable[str], exc: BaseException) -> None:
        """Warn the first time an error is seen; repeats (every cycle) go to DEBUG."""
        topics = list(topics)
        text = f"{type(exc).__name__}: {exc}"
        shown = ", ".join(topics[:5]) + (f" (+{len(topics) - 5} more)" if len(topics) > 5 else "")
        with self._lock:
            first = text not in self._warned
            if first and len(self._warned) < _MAX_WARNED:
                self._warned.add(text)
        level = logging.WARNING if first else logging.DEBUG
        logger.log(
            level,
            "cluster %s: retention.ms unknown for %s: %s",
            self._cluster or "?",
            shown,
            text,
        )


_TRANSPORT_CODES = frozenset({"_TIMED_OUT", "_TRANSPORT", "_ALL_BROKERS_DOWN", "_MSG_TIMED_OUT",
                              "_DESTROY", "_RESOLVE"})


def _is_transport_failure(exc: BaseException) -> bool:
    """A timeout or connection failure (worth a new client), not a per-topic answer such as an
    unknown or unauthorized topic (a new client would only churn)."""
    if isinstance(exc, TimeoutError):
        return True
    error = exc.args[0] if exc.args else None
    name = getattr(error, "name", None)
    return callable(name) and name() in _TRANSPORT_CODES


def _group_errors(failed: Mapping[str, BaseException]) -> dict[BaseException, list[str]]:
    """Topics grouped by error text, so one broken cluster logs one line, not one per topic."""
    by_text: dict[str, tuple[BaseException, list[str]]] = {}
    for topic, exc in failed.items():
        key = f"{type(exc).__name__}: {exc}"
        by_text.setdefault(key, (exc, []))[1].append(topic)
    return {exc: topics for exc, topics in by_text.values()}
