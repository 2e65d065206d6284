"""``LocalStack``: ZooKeeper + tansu + frame proxy + offsets bridge + Burrow, as local processes.

Why: the integration tests, the benchmarks and ``freshness-tracker demo`` need a real Burrow reading
a real Kafka-protocol broker, without Docker. Every client (Burrow included) talks to tansu through
:class:`~freshness_tracker.devstack.proxy.KafkaProxy`, which tansu advertises; the bridge mirrors
tansu's group offsets into ``__consumer_offsets`` for Burrow. All bind 127.0.0.1 on free ports.

Bring your own stack: with ``FT_STACK_BOOTSTRAP`` and ``FT_STACK_BURROW_URL`` set (and optionally
``FT_STACK_CLUSTER``), :meth:`LocalStack.from_env` returns an unmanaged stack that starts nothing;
helpers that need the managed pieces (chosen commit times, stopping Burrow or the broker, RTT)
then raise :class:`StackFeatureUnavailable`.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import shutil
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined,unused-ignore]

from freshness_tracker.devstack import zk
from freshness_tracker.devstack.bridge import OFFSETS_TOPIC, OffsetsBridge
from freshness_tracker.devstack.processes import (
    BurrowProcess,
    ManagedProcess,
    ProcessStartError,
    TansuProcess,
    ZooKeeperProcess,
    free_port,
    wait_until,
)
from freshness_tracker.devstack.proxy import KafkaProxy

__all__ = ["DEFAULT_RETENTION_MS", "LocalStack", "ProcessStartError", "StackFeatureUnavailable"]

log = logging.getLogger(__name__)

_T = TypeVar("_T")

DEFAULT_RETENTION_MS = 7 * 24 * 3600 * 1000


class StackFeatureUnavailable(RuntimeError):
    """The helper needs a piece this stack does not manage (an externally provided stack)."""


class LocalStack:
    """A started-on-demand local stack; use as a context manager or call :meth:`start`/:meth:`stop`.

    Attributes once started: ``bootstrap_servers`` (the proxy), ``burrow_url``, ``cluster``
    (``"local"``), ``zookeeper_address``, ``workdir`` (configs and logs), ``proxy``, ``bridge``.
    """

    cluster = "local"

    def __init__(
        self,
        rtt_ms: float = 0.0,
        start_timeout_s: float = 90.0,
        workdir: str | Path | None = None,
        keep_workdir: bool = False,
        bridge_poll_interval_s: float = 0.5,
    ) -> None:
        self.managed = True
        self.start_timeout_s = start_timeout_s
        self.keep_workdir = keep_workdir or bool(os.environ.get("FT_STACK_KEEP"))
        self._own_workdir = workdir is None
        self._workdir = Path(workdir) if workdir else None
        self._rtt_ms = rtt_ms
        self._bridge_poll_interval_s = bridge_poll_interval_s
        self._bootstrap = ""
        self._burrow_url = ""
        self.zookeeper: ZooKeeperProcess | None = None
        self.tansu: TansuProcess | None = None
        self.burrow: BurrowProcess | None = None
        self.proxy: KafkaProxy | None = None
        self.bridge: OffsetsBridge | None = None
        self._admin: AdminClient | None = None
        self._producer: Producer | None = None
        self._committers: dict[str, Consumer] = {}
        self._lock = threading.Lock()
        self._started = False

    # ---- construction -------------------------------------------------------------------------

    @classmethod
    def from_env(cls) -> LocalStack | None:
        """An unmanaged stack from ``FT_STACK_BOOTSTRAP``/``FT_STACK_BURROW_URL``, else None."""
        bootstrap = os.environ.get("FT_STACK_BOOTSTRAP", "")
        burrow_url = os.environ.get("FT_STACK_BURROW_URL", "")
        if not (bootstrap and burrow_url):
            return None
        stack = cls()
        stack.managed = False
        stack._bootstrap = bootstrap
        stack._burrow_url = burrow_url.rstrip("/")
        stack.cluster = os.environ.get("FT_STACK_CLUSTER", "local")
        return stack

    @property
    def bootstrap_servers(self) -> str:
        return self._bootstrap

    @property
    def burrow_url(self) -> str:
        return self._burrow_url

    @property
    def workdir(self) -> Path:
        """Configs and logs; a fresh temporary directory unless one was given."""
        if self._workdir is None:
            self._workdir = Path(tempfile.mkdtemp(prefix="ft-devstack-"))
        return self._workdir

    @property
    def zookeeper_address(self) -> str:
        return self._need(self.zookeeper, "ZooKeeper").address

    # ---- life cycle ---------------------------------------------------------------------------

    def start(self) -> Self:
        """Start every component (ZooKeeper and tansu in parallel); on failure stop what started.

        Raises ProcessStartError (with log tails) or TimeoutError.
        """
        if self._started:
            return self
        began = time.monotonic()
        atexit.register(self.stop)
        self._started = True
        try:
            if self.managed:
                self._start_managed_with_retries()
            else:
                wait_until(self._burrow_good, self.start_timeout_s, f"Burrow at {self.burrow_url}")
        except BaseException:
            where = self._workdir or "(none)"
            log.error("local stack failed to start; logs in %s\n%s", where, self.logs_tail())
            self.keep_workdir = True
            self.stop()
            raise
        log.info("local stack up in %.1f s: kafka=%s burrow=%s", time.monotonic() - began,
                 self.bootstrap_servers, self.burrow_url)  # fmt: skip
        return self

    def _start_managed_with_retries(self, attempts: int = 3) -> None:
        """Ports are picked free but bound later, so another binder can win the race: retry then."""
        for attempt in range(1, attempts + 1):
            try:
                self._start_managed()
                return
            except (ProcessStartError, OSError) as exc:
                if attempt == attempts or "in use" not in str(exc).lower():
                    raise
                log.warning("port conflict while starting the stack (try %d): %s", attempt, exc)
                self._stop_components()

    def _start_managed(self) -> None:
        timeout = self.start_timeout_s
        self.zookeeper = ZooKeeperProcess(self.workdir)
        proxy_port = free_port()
        self.tansu = TansuProcess(self.workdir, advertised=f"127.0.0.1:{proxy_port}")
        self.zookeeper.spawn()
        self.tansu.spawn()
        self.proxy = KafkaProxy(
            ("127.0.0.1", self.tansu.port), port=proxy_port, delay_ms=self._rtt_ms
        )
        self.proxy.start()
        self._bootstrap = self.proxy.address
        self.tansu.wait_ready(timeout)
        self._create_topics(
            [NewTopic(OFFSETS_TOPIC, 1, 1, config=self._topic_config(None))], timeout
        )
        self.zookeeper.wait_ready(timeout)
        zk.ensure_path(self.zookeeper.address, "/consumers")
        self.bridge = OffsetsBridge(self._bootstrap, poll_interval_s=self._bridge_poll_interval_s)
        self.bridge.start()
        self.burrow = BurrowProcess(
            self.workdir, self._bootstrap, self.zookeeper.address, cluster=self.cluster
        )
        self._burrow_url = self.burrow.url
        self.start_burrow()

    def stop(self) -> None:
        """Stop everything this stack started (idempotent); removes the workdir unless kept."""
        if not self._started:
            return
        self._started = False
        atexit.unregister(self.stop)
        self._stop_components()
        if self._own_workdir and not self.keep_workdir and self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None

    def _stop_components(self) -> None:
        for consumer in self._committers.values():
            with contextlib.suppress(Exception):
                consumer.close()
        self._committers.clear()
        if self._producer is not None:
            self._producer.flush(2)
        self._producer = None
        self._admin = None
        if self.bridge is not None:
            self.bridge.stop()
        if self.burrow is not None:
            self.burrow.stop()
        if self.proxy is not None:
            self.proxy.stop()  # first: tansu's graceful shutdown waits for open connections
        for proc in (self.tansu, self.zookeeper):
            if proc is not None:
                proc.stop()
        self.bridge = self.burrow = self.proxy = self.tansu = self.zookeeper = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def logs_tail(self, lines: int = 40) -> str:
        """The last ``lines`` of every component's log, for failure reports."""
        procs: list[ManagedProcess | None] = [self.zookeeper, self.tansu, self.burrow]
        return "\n".join(p.log_tail(lines) for p in procs if p is not None)

    # ---- faults and RTT -----------------------------------------------------------------------

    def stop_burrow(self) -> None:
        self._need(self.burrow, "Burrow").stop()

    def start_burrow(self) -> None:
        """(Re)start Burrow on the same port; returns once it lists ``__consumer_offsets``."""
        burrow = self._need(self.burrow, "Burrow")
        burrow.start(self.start_timeout_s)
        wait_until(
            lambda: self.burrow_get(f"/v3/kafka/{self.cluster}/topic/{OFFSETS_TOPIC}")[0] == 200,
            self.start_timeout_s,
            "Burrow to read the cluster's topics",
        )

    def stop_broker(self) -> None:
        """Cut every client off the broker: the proxy closes its port and all connections.

        tansu itself keeps running because its only usable storage engine here is ``memory://``
        (this build has no file/sqlite/postgres engine; s3 needs a server), so a real restart
        would lose every topic and offset. For a client this is indistinguishable from a dead
        broker: connections drop and reconnects are refused.
        """
        if self.bridge is not None:
            self.bridge.pause()
        self._need(self.proxy, "the broker").stop()

    def start_broker(self) -> None:
        """Bring the broker back on the same address (see :meth:`stop_broker`).

        The stack's own admin and committing consumers and the bridge's AdminClient are replaced:
        after a cut connection librdkafka's group requests can time out until a client is recreated.
        """
        self._need(self.proxy, "the broker").start()
        with self._lock:
            self._admin = None
            committers, self._committers = self._committers, {}
        for consumer in committers.values():
            with contextlib.suppress(Exception):
                consumer.close()
        if self.bridge is not None:
            self.bridge.resume()

    @property
    def rtt_ms(self) -> float:
        return self.proxy.delay_ms if self.proxy is not None else 0.0

    @rtt_ms.setter
    def rtt_ms(self, value: float) -> None:
        self._need(self.proxy, "the RTT proxy").delay_ms = value

    @property
    def burrow_env_free(self) -> bool:
        """True when the running Burrow has no ``BURROW_*`` variable in its environment."""
        env = self._need(self.burrow, "Burrow").environ_of_running()
        return bool(env) and not any(k.upper().startswith("BURROW_") for k in env)

    # ---- Kafka helpers ------------------------------------------------------------------------

    def admin(self) -> AdminClient:
        with self._lock:
            if self._admin is None:
                conf: dict[str, Any] = {"bootstrap.servers": self._bootstrap, "logger": log}
                self._admin = AdminClient(conf)
            return self._admin

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        retention_ms: int | None = DEFAULT_RETENTION_MS,
        timeout_s: float = 60.0,
        wait_for_burrow: bool = True,
    ) -> None:
        """Create a topic (``retention.ms`` set explicitly: tansu's describe_configs returns only
        explicit configs) and wait until Burrow has head offsets for every partition, since Burrow
        silently drops commits for a topic it does not know yet."""
        self._create_topics(
            [NewTopic(name, partitions, 1, config=self._topic_config(retention_ms))], timeout_s
        )
        if wait_for_burrow:
            wait_until(
                lambda: self._burrow_partitions(name) >= partitions,
                timeout_s,
                f"Burrow to list topic {name} with {partitions} partitions",
                interval_s=0.1,
            )

    def produce(
        self,
        topic: str,
        partition: int,
        timestamps_ms: Sequence[int],
        value_size: int = 16,
        timeout_s: float = 60.0,
    ) -> list[int]:
        """Produce one record per timestamp (explicit CreateTime); returns their offsets in order.

        One record per batch, because tansu's high watermark is only right then.
        """
        producer = self._get_producer()
        offsets: list[int] = [-1] * len(timestamps_ms)
        errors: list[object] = []
        value = b"x" * value_size

        def delivered(index: int) -> Any:
            def callback(err: object, msg: Any) -> None:
                if err is not None:
                    errors.append(err)
                else:
                    offsets[index] = int(msg.offset())

            return callback

        for i, ts in enumerate(timestamps_ms):
            while True:
                try:
                    producer.produce(topic, value, partition=partition, timestamp=int(ts),
                                     on_delivery=delivered(i))  # fmt: skip
                    break
                except BufferError:
                    producer.poll(0.1)
        if producer.flush(timeout_s) > 0:
            raise TimeoutError(f"produce to {topic}[{partition}] not delivered in {timeout_s} s")
        if errors:
            raise KafkaException(errors[0])
        return offsets

    def commit(
        self, group: str, topic: str, partition: int, offset: int, commit_time_ms: int | None = None
    ) -> None:
        """Make Burrow see ``group`` committed ``offset`` on ``topic[partition]``.

        Without ``commit_time_ms``: a real commit into tansu (a confluent-kafka consumer with the
        group id, no join, ``commit(offsets=...)``); the bridge mirrors it within ~1 s with its own
        detection time as the commit timestamp, and re-emits it while the group is live.
        With ``commit_time_ms``: one OffsetCommit record written straight into
        ``__consumer_offsets`` with exactly that timestamp; tansu never sees it (the group is not
        in :meth:`group_ids`) and the bridge never overwrites that partition afterwards.
        Burrow's ``min-distance=1``: commits less than 1 s apart keep the earlier timestamp.
        """
        if commit_time_ms is not None:
            self._need(self.bridge, "the offsets bridge").write_commit(
                group, topic, partition, offset, commit_time_ms
            )
            return
        consumer = self._committer(group)
        consumer.commit(offsets=[TopicPartition(topic, partition, offset)], asynchronous=False)

    def commit_zk(self, group: str, topic: str, partition: int, offset: int) -> None:
        """An old-style ZooKeeper commit for Burrow's ``kafka_zk`` module (timestamp = mtime)."""
        path = f"/consumers/{group}/offsets/{topic}/{partition}"
        zk.set_znode(self.zookeeper_address, path, str(offset).encode())

    def group_ids(self) -> set[str]:
        """Every consumer group tansu knows (to prove a client never created one)."""
        result = self.admin().list_consumer_groups(request_timeout=10).result(timeout=15)
        return {g.group_id for g in result.valid}

    # ---- Burrow helpers -----------------------------------------------------------------------

    def burrow_get(self, path: str, timeout_s: float = 5.0) -> tuple[int, Any]:
        """GET ``burrow_url + path``: (HTTP status, JSON or text); (0, None) if unreachable."""
        try:
            with urllib.request.urlopen(self._burrow_url + path, timeout=timeout_s) as resp:
                return resp.status, _parse(resp.read())
        except urllib.error.HTTPError as err:
            return err.code, _parse(err.read())
        except (OSError, ValueError):
            return 0, None

    def wait_for_burrow_lag(
        self,
        group: str,
        topic: str,
        partition: int,
        committed_offset: int,
        current_lag: int,
        timeout_s: float = 30.0,
    ) -> dict[str, Any]:
        """Poll ``/lag`` until ``topic[partition]`` shows exactly that ``end.offset`` and
        ``current_lag`` (the first answers after a commit can be partial); returns it."""
        path = f"/v3/kafka/{self.cluster}/consumer/{group}/lag"
        seen: list[Any] = [None]

        def matches() -> bool:
            status, body = self.burrow_get(path)
            seen[0] = (status, body)
            if status != 200 or not isinstance(body, dict):
                return False
            for part in body.get("status", {}).get("partitions", []):
                if part.get("topic") == topic and part.get("partition") == partition:
                    end = part.get("end") or {}
                    if (
                        end.get("offset") == committed_offset
                        and part.get("current_lag") == current_lag
                    ):
                        seen.append(part)
                        return True
            return False

        try:
            wait_until(
                matches, timeout_s, f"Burrow lag {group} {topic}[{partition}]", interval_s=0.2
            )
        except TimeoutError as exc:
            raise TimeoutError(
                f"{exc}: wanted end.offset={committed_offset} current_lag={current_lag}; "
                f"last answer: {json.dumps(seen[0])[:2000]}"
            ) from None
        result: dict[str, Any] = seen[-1]
        return result

    # ---- internals ----------------------------------------------------------------------------

    @staticmethod
    def _topic_config(retention_ms: int | None) -> dict[str, str]:
        return {"retention.ms": str(retention_ms or DEFAULT_RETENTION_MS)}

    def _create_topics(self, topics: list[NewTopic], timeout_s: float) -> None:
        futures = self.admin().create_topics(topics, request_timeout=timeout_s)
        for name, future in futures.items():
            try:
                future.result(timeout=timeout_s)
            except KafkaException as exc:
                raise RuntimeError(f"cannot create topic {name}: {exc}") from exc

    def _burrow_partitions(self, topic: str) -> int:
        status, body = self.burrow_get(f"/v3/kafka/{self.cluster}/topic/{topic}")
        if status != 200 or not isinstance(body, dict):
            return 0
        return len(body.get("offsets") or [])

    def _burrow_good(self) -> bool:
        return bool(self.burrow_get("/burrow/admin")[1] == "GOOD")

    def _get_producer(self) -> Producer:
        with self._lock:
            if self._producer is None:
                conf: dict[str, Any] = {
                    "bootstrap.servers": self._bootstrap,
                    "batch.num.messages": 1,
                    "linger.ms": 0,
                    "acks": "all",
                    "logger": log,
                }
                self._producer = Producer(conf)
            return self._producer

    def _committer(self, group: str) -> Consumer:
        with self._lock:
            consumer = self._committers.get(group)
            if consumer is None:
                conf: dict[str, Any] = {
                    "bootstrap.servers": self._bootstrap,
                    "group.id": group,
                    "enable.auto.commit": False,
                    "logger": log,
                }
                consumer = Consumer(conf)
                self._committers[group] = consumer
            return consumer

    def _need(self, component: _T | None, what: str) -> _T:
        if not self.managed:
            raise StackFeatureUnavailable(f"{what} is not managed by this (external) stack")
        if component is None:
            raise RuntimeError(f"{what} is not running: call start() first")
        return component


def _parse(raw: bytes) -> Any:
    text = raw.decode(errors="replace").strip()
    try:
        return json.loads(text)
    except ValueError:
        return text
