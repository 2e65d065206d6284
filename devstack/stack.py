"""``RealStack``: Apache Kafka (KRaft, 1 or 3 nodes) + Burrow, as local processes.

Why: the exporter's claims (exact freshness from genuine group commits, data loss when the log
start passes a commit, one batch per partition leader) are only worth something when proven on
the broker and the Burrow users run. Two lines (:mod:`devstack.cache` says why):

* **the default: Kafka 3.9.1 + Debian's Burrow 1.2.1** (with the ZooKeeper Burrow 1.2.1 needs for
  itself), everything a fresh machine can install from the registries;
* ``kafka_version="4.1.1"``: Kafka 4.1 with no Burrow (``burrow=False``: the lookup engine on a
  current broker), or with a Burrow >= 1.9.5 the user brings in ``FT_BURROW_BIN``.

What the suites rely on:

* commits are real group commits; the broker stamps them, so ``commit_time_ms`` cannot be chosen
  (:meth:`RealStack.commit` returns the window the stamp lies in instead);
* ``stop_broker``/``start_broker`` really stop and restart a JVM (one node, or all) with its data;
* :meth:`RealStack.delete_records` moves a partition's log start (data loss on demand);
* ZooKeeper commits (``commit_zk``) need a ZooKeeper-mode Kafka: :mod:`devstack.legacy`;
* with ``proxied=True`` (implied by ``rtt_ms``) each broker's client listener sits behind a
  :class:`~devstack.proxy.FrameProxy`: ``rtt_ms`` adds a round trip, :meth:`RealStack.cut_broker`
  makes a live broker unreachable, :meth:`RealStack.request_counts` tells Fetch requests per
  broker. Burrow and the stack's own helpers use the brokers' internal listener, never proxied:
  a cut or a delay hits only the client under test (``bootstrap_servers``).

Bring your own stack: with ``FT_STACK_BOOTSTRAP`` and ``FT_STACK_BURROW_URL`` set,
:meth:`RealStack.from_env` returns an unmanaged stack that starts nothing.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import json
import logging
import os
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, NamedTuple, Self, TypeVar

from confluent_kafka import (
    Consumer,
    ElectionType,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import (  # type: ignore[attr-defined,unused-ignore]
    AdminClient,
    NewTopic,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from tenacity import retry, retry_if_exception, stop_after_attempt, wait_fixed

from devstack.burrow import BurrowServer, ConfigRenderer, burrow121_config, http_get
from devstack.cache import burrow_binary, debian_burrow_binary, default_kafka_version
from devstack.kafka import SCRAM_MECHANISM, SECURITY_PROTOCOLS, KafkaCluster, major_version
from devstack.processes import ProcessStartError, wait_until
from devstack.proxy import FrameProxy
from devstack.tls import DevCerts, make_certs
from devstack.zookeeper import ZooKeeperServer

__all__ = [
    "DEFAULT_RETENTION_MS",
    "OFFSETS_TOPIC",
    "CommitWindow",
    "MultiClusterStack",
    "ProcessStartError",
    "RealStack",
    "StackFeatureUnavailable",
]

log = logging.getLogger(__name__)

_T = TypeVar("_T")

DEFAULT_RETENTION_MS = 7 * 24 * 3600 * 1000
OFFSETS_TOPIC = "__consumer_offsets"


class StackFeatureUnavailable(RuntimeError):
    """The helper needs something this stack cannot do (an external stack, a chosen commit time,
    ZooKeeper commits, RTT emulation)."""


class CommitWindow(NamedTuple):
    """Wall-clock ms just before a commit was sent and just after the broker acknowledged it: the
    broker's commit timestamp (Burrow's ``end.timestamp``) lies within."""

    before_ms: int
    after_ms: int


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def _lost_answer(exc: BaseException) -> bool:
    """A request whose answer was lost, not refused: librdkafka drops the bootstrap broker's
    handle once it learns that broker's id (`_DESTROY_BROKER`), and retriable errors say so."""
    if not isinstance(exc, KafkaException):
        return False
    err = exc.args[0]
    return bool(err.code() == KafkaError._DESTROY_BROKER or err.retriable())


def create_topic_once(admin: Callable[[], AdminClient], new: NewTopic, timeout_s: float) -> None:
    """Create `new`, asking again when the answer was lost; on a second ask, "already exists"
    means the first one did it. RuntimeError when Kafka refuses."""
    asked = 0

    @retry(retry=retry_if_exception(_lost_answer), stop=stop_after_attempt(3),
           wait=wait_fixed(0.5), reraise=True)
    def ask() -> None:
        nonlocal asked
        asked += 1
        (future,) = admin().create_topics([new], request_timeout=timeout_s).values()
        try:
            future.result(timeout=timeout_s)
        except KafkaException as exc:
            if asked == 1 or exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise

    try:
        ask()
    except KafkaException as exc:
        raise RuntimeError(f"cannot create topic {new.topic}: {exc}") from exc


class _Started:
    """`with` a stack: started on entry, stopped on exit (also on an error)."""

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class RealStack(_Started):
    """Kafka (``nodes`` = 1 or 3) + Burrow; a context manager, or :meth:`start`/:meth:`stop`.

    Attributes once started: ``bootstrap_servers`` (every broker), ``burrow_url``, ``cluster``
    (``"local"``), ``workdir`` (configs, data and logs), ``kafka`` (:class:`KafkaCluster`),
    ``burrow`` (:class:`BurrowServer`).
    """

    cluster = "local"

    def __init__(
        self,
        nodes: int = 1,
        rtt_ms: float = 0.0,
        start_timeout_s: float = 120.0,
        workdir: str | Path | None = None,
        keep_workdir: bool = False,
        proxied: bool | None = None,
        security: str = "plaintext",
        kafka_version: str | None = None,
        burrow: bool = True,
        cluster: str = "local",
    ) -> None:
        #: The cluster's name in Burrow (and in the exporter's config).
        self.cluster = cluster
        #: The broker's version: the default stack's 3.9.1, or 4.1.1 (see the module docstring).
        self.kafka_version = kafka_version or default_kafka_version()
        #: Whether a Burrow runs (Kafka 4 needs ``FT_BURROW_BIN`` for one).
        self.with_burrow = burrow
        #: The ZooKeeper Burrow 1.2.1 coordinates through (and a ZooKeeper-mode Kafka's).
        self.zookeeper: ZooKeeperServer | None = None
        #: ``/chroot`` for a ZooKeeper-mode Kafka on :attr:`zookeeper` (:mod:`devstack.legacy`).
        self.zookeeper_chroot: str | None = None
        self.proxied = bool(rtt_ms) if proxied is None else proxied
        if rtt_ms and not self.proxied:
            raise StackFeatureUnavailable("rtt_ms needs the frame proxies: proxied=True")
        if security not in SECURITY_PROTOCOLS:
            raise ValueError(f"security must be one of {sorted(SECURITY_PROTOCOLS)}")
        if security != "plaintext" and self.proxied:
            raise StackFeatureUnavailable("the frame proxies cannot read TLS: proxied=False")
        #: The CLIENT listener's security ("plaintext", "tls", "sasl_ssl"); Burrow reads through
        #: it too when it is not plaintext. INTERNAL (the stack's own helpers) stays plaintext.
        self.security = security
        self.certs: DevCerts | None = None
        #: SCRAM-SHA-512 (user, password) of a ``sasl_ssl`` stack, made through the admin API.
        self.scram_credentials: tuple[str, str] | None = None
        self._initial_rtt_ms = rtt_ms
        self.nodes = nodes
        self.managed = True
        self.start_timeout_s = start_timeout_s
        self.keep_workdir = keep_workdir or bool(os.environ.get("FT_STACK_KEEP"))
        self._own_workdir = workdir is None
        self._workdir = Path(workdir) if workdir else None
        self._bootstrap = ""
        self._internal = ""  # the brokers' unproxied listener: Burrow and our own helpers
        self._burrow_url = ""
        self.kafka: KafkaCluster | None = None
        self.burrow: BurrowServer | None = None
        #: False while :attr:`burrow` is another's (a :class:`MultiClusterStack`'s): not stopped
        #: with this stack.
        self._owns_burrow = True
        self._admin: AdminClient | None = None
        self._producer: Producer | None = None
        self._committers: dict[str, Consumer] = {}
        self._lock = threading.Lock()
        self._started = False
        #: Seconds each phase of the last start() took ("kafka", "offsets_topic", "burrow").
        self.start_timings: dict[str, float] = {}

    # ---- construction -------------------------------------------------------------------------

    @classmethod
    def from_env(cls) -> RealStack | None:
        """An unmanaged stack from ``FT_STACK_BOOTSTRAP``/``FT_STACK_BURROW_URL``, else None."""
        bootstrap = os.environ.get("FT_STACK_BOOTSTRAP", "")
        burrow_url = os.environ.get("FT_STACK_BURROW_URL", "")
        if not (bootstrap and burrow_url):
            return None
        stack = cls()
        stack.managed = False
        stack._bootstrap = stack._internal = bootstrap
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
    def client_config(self) -> dict[str, str]:
        """The librdkafka properties (besides ``bootstrap.servers``) a client of
        :attr:`bootstrap_servers` needs: TLS trusting the stack's CA with hostname verification,
        and SCRAM credentials on a ``sasl_ssl`` stack. Empty on a plaintext stack."""
        if self.security == "plaintext" or self.certs is None:
            return {}
        conf = {
            "security.protocol": SECURITY_PROTOCOLS[self.security],
            "ssl.ca.location": str(self.certs.ca),
            "ssl.endpoint.identification.algorithm": "https",
        }
        if self.scram_credentials is not None:
            user, password = self.scram_credentials
            conf |= {"sasl.mechanism": SCRAM_MECHANISM, "sasl.username": user,
                     "sasl.password": password}  # fmt: skip
        return conf

    @property
    def workdir(self) -> Path:
        """Configs, data and logs; a fresh temporary directory unless one was given."""
        if self._workdir is None:
            self._workdir = Path(tempfile.mkdtemp(prefix="ft-realstack-"))
        return self._workdir

    # ---- life cycle ---------------------------------------------------------------------------

    def start(self) -> Self:
        """Kafka, then ``__consumer_offsets``, then Burrow; on failure stop what started.

        Raises ProcessStartError (with log tails) or TimeoutError.
        """
        if self._started:
            return self
        began = time.monotonic()
        atexit.register(self.stop)
        self._started = True
        try:
            if self.managed:
                self._start_managed()
            else:
                wait_until(self._burrow_good, self.start_timeout_s, f"Burrow at {self.burrow_url}")
        except BaseException:
            log.error("real stack failed to start; logs in %s\n%s", self._workdir or "(none)",
                      self.logs_tail())  # fmt: skip
            self.keep_workdir = True
            self.stop()
            raise
        log.info("real stack up in %.1f s (%s): kafka=%s burrow=%s", time.monotonic() - began,
                 self.start_timings, self.bootstrap_servers, self.burrow_url)  # fmt: skip
        return self

    @property
    def burrow121(self) -> bool:
        """Debian's Burrow 1.2.1 reads this Kafka (< 4); Kafka 4 needs Burrow >= 1.9.5."""
        return major_version(self.kafka_version) < 4

    def _start_managed(self) -> None:
        t0 = time.monotonic()
        if self.with_burrow:  # a missing binary fails before any JVM starts
            binary = debian_burrow_binary() if self.burrow121 else burrow_binary()
        if self.security != "plaintext":
            self.certs = make_certs(self.workdir / "tls")
        zookeeper_connect = None
        if (self.with_burrow and self.burrow121) or self.zookeeper_chroot is not None:
            self.zookeeper = ZooKeeperServer(self.workdir)
            self.zookeeper.start(self.start_timeout_s)
            if self.zookeeper_chroot is not None:
                zookeeper_connect = self.zookeeper.address + self.zookeeper_chroot
        self.kafka = KafkaCluster(self.nodes, self.workdir, start_timeout_s=self.start_timeout_s,
                                  proxied=self.proxied, security=self.security,
                                  certs=self.certs, kafka_version=self.kafka_version,
                                  zookeeper_connect=zookeeper_connect)  # fmt: skip
        self.kafka.start()
        self._bootstrap = self.kafka.bootstrap_servers
        self._internal = self.kafka.internal_bootstrap_servers
        if self.proxied:
            self.rtt_ms = self._initial_rtt_ms
        if self.security == "sasl_ssl":
            self._create_scram_user(self.start_timeout_s)
        t1 = time.monotonic()
        self._ensure_offsets_topic(self.start_timeout_s)
        t2 = time.monotonic()
        if self.with_burrow:
            self.burrow = self._burrow_server(binary)
            self._burrow_url = self.burrow.url
            self.start_burrow()
        self.start_timings = {"kafka": round(t1 - t0, 2), "offsets_topic": round(t2 - t1, 2),
                              "burrow": round(time.monotonic() - t2, 2)}  # fmt: skip

    def _burrow_server(self, binary: Path) -> BurrowServer:
        """Burrow reads through the secured CLIENT listener where it can (TLS; SASL_SSL with a
        Burrow >= 1.9.5), else through the internal plaintext one."""
        ca = self.certs.ca if self.certs is not None else None
        if self.burrow121:  # Sarama 1.20: TLS yes, SCRAM no
            tls = self.security == "tls" and self.certs is not None
            tls_files = (self.certs.ca, self.certs.keystore) if tls and self.certs else None
            servers = (self._bootstrap if tls else self._internal).split(",")
            zookeeper = self._need(self.zookeeper, "ZooKeeper").address
            chroot = self.zookeeper_chroot

            def render(http_port: int, pidfile: Path) -> str:
                return burrow121_config(cluster=self.cluster, servers=servers,
                                        zookeeper=zookeeper, http_port=http_port,
                                        pidfile=pidfile, tls=tls_files,
                                        zk_offsets_path=chroot)  # fmt: skip

            return BurrowServer(self.workdir, servers, self.cluster, binary=binary,
                                render_config=render)  # fmt: skip
        if self.security == "plaintext":
            return BurrowServer(self.workdir, self._internal.split(","), self.cluster,
                                binary=binary)  # fmt: skip
        sasl = None
        if self.scram_credentials is not None:
            sasl = (SCRAM_MECHANISM, *self.scram_credentials)
        return BurrowServer(self.workdir, self._bootstrap.split(","), self.cluster, binary=binary,
                            tls_ca=ca, sasl=sasl)  # fmt: skip

    def stop(self) -> None:
        """Stop everything this stack started (idempotent); removes the workdir unless kept."""
        if not self._started:
            return
        self._started = False
        atexit.unregister(self.stop)
        self._close_clients()
        if self.burrow is not None and self._owns_burrow:
            self.burrow.stop()
        if self.kafka is not None:
            # The data goes with the workdir, so no clean shutdown is owed: a 3-node cluster
            # stopping as a whole waits for a quorum that is gone before it exits.
            self.kafka.stop(grace_s=2.0)
        if self.zookeeper is not None:  # last: a ZooKeeper-mode broker's shutdown needs it
            self.zookeeper.stop()
        self.burrow = None
        self.kafka = None
        self.zookeeper = None
        if self._own_workdir and not self.keep_workdir and self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None

    def _close_clients(self) -> None:
        with self._lock:
            committers, self._committers = self._committers, {}
            producer, self._producer = self._producer, None
            self._admin = None
        for consumer in committers.values():
            with contextlib.suppress(Exception):
                consumer.close()
        if producer is not None:
            producer.flush(2)

    def logs_tail(self, lines: int = 40) -> str:
        """The last ``lines`` of every component's log, for failure reports."""
        parts = []
        if self.zookeeper is not None:
            parts.append(self.zookeeper.log_tail(lines))
        if self.kafka is not None:
            parts.append(self.kafka.logs_tail(lines))
        if self.burrow is not None:
            parts.append(self.burrow.log_tail(lines))
        return "\n".join(parts)

    # ---- faults -------------------------------------------------------------------------------

    def stop_burrow(self) -> None:
        self._need(self.burrow, "Burrow").stop()

    def share_burrow(self, burrow: BurrowServer) -> None:
        """Use a Burrow that reads this cluster among others (:class:`MultiClusterStack`'s): the
        Burrow helpers ask it about :attr:`cluster`, and :meth:`stop` leaves it running."""
        self.burrow = burrow
        self._burrow_url = burrow.url
        self._owns_burrow = False

    def start_burrow(self) -> None:
        """(Re)start Burrow on the same port; returns once it lists ``__consumer_offsets``."""
        burrow = self._need(self.burrow, "Burrow")
        burrow.start(self.start_timeout_s)
        burrow.wait_for_topic(OFFSETS_TOPIC, 1, self.start_timeout_s, cluster=self.cluster)

    def stop_broker(self, node_id: int | None = None) -> None:
        """Stop one Kafka node (``node_id``), or every node (None): a real JVM shutdown.

        The stack's own clients are closed first (recreated on next use), so no librdkafka
        object of the calling process lives through the outage.
        """
        kafka = self._need(self.kafka, "the broker")
        self._close_clients()
        if node_id is None:
            kafka.stop()
        else:
            kafka.stop_broker(node_id)

    def start_broker(self, node_id: int | None = None) -> None:
        """Restart one node (or every stopped one) with its data, on the same address (its
        proxy listens again too).

        The stack's own admin and committing consumers are replaced, as on the old stack: a
        client that saw its connections drop can keep timing out on group requests for a while.
        """
        kafka = self._need(self.kafka, "the broker")
        kafka.start_brokers(kafka.node_ids if node_id is None else [node_id])
        if self.proxied:  # stopping every node also closed their proxies: clients come back too
            self.restore_broker(node_id)
        with self._lock:
            self._admin = None
            committers, self._committers = self._committers, {}
        for consumer in committers.values():
            with contextlib.suppress(Exception):
                consumer.close()

    def cut_broker(self, node_id: int | None = None) -> None:
        """Make one broker (or all) unreachable for ``bootstrap_servers`` clients while it keeps
        running: its proxy closes the port and every connection. Burrow is not cut."""
        for proxy in self._proxies(node_id):
            proxy.stop()

    def restore_broker(self, node_id: int | None = None) -> None:
        """Undo :meth:`cut_broker`: the proxy listens again on the same address."""
        for proxy in self._proxies(node_id):
            proxy.start()

    @property
    def rtt_ms(self) -> float:
        """Round trip added to every client request (0 without proxies)."""
        if not self.proxied or self.kafka is None:
            return 0.0
        return self.kafka.proxy(self.kafka.node_ids[0]).delay_ms

    @rtt_ms.setter
    def rtt_ms(self, value: float) -> None:
        if not value and not self.proxied:
            return
        for proxy in self._proxies(None):
            proxy.delay_ms = value

    def request_counts(self) -> dict[int, dict[int, int]]:
        """Broker id → API key → client request frames since :meth:`reset_request_counts`
        (``devstack.proxy.API_FETCH`` is Fetch)."""
        kafka = self._need(self.kafka, "the brokers")
        return {i: kafka.proxy(i).request_counts() for i in kafka.node_ids if self.proxied}

    def reset_request_counts(self) -> None:
        for proxy in self._proxies(None):
            proxy.reset_counts()

    @property
    def burrow_env_free(self) -> bool:
        """True when the running Burrow has no ``BURROW_*`` variable in its environment."""
        env = self._need(self.burrow, "Burrow").environ_of_running()
        return bool(env) and not any(k.upper().startswith("BURROW_") for k in env)

    # ---- Kafka helpers ------------------------------------------------------------------------

    def admin(self) -> AdminClient:
        with self._lock:
            if self._admin is None:
                conf: dict[str, Any] = {"bootstrap.servers": self._internal, "logger": log}
                self._admin = AdminClient(conf)
            return self._admin

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        retention_ms: int | None = DEFAULT_RETENTION_MS,
        timeout_s: float = 60.0,
        wait_for_burrow: bool = True,
        config: Mapping[str, str] | None = None,
        replicas: Sequence[Sequence[int]] | None = None,
    ) -> None:
        """Create a topic (replicated on every node) and wait until every partition has a leader
        and, unless told otherwise, until Burrow has broker offsets for every partition: Burrow
        drops commits for a topic it does not know yet, for good.

        ``replicas`` places partition ``p`` on the brokers ``replicas[p]`` and waits until the
        first of them leads it (``partitions``, if given, must be ``len(replicas)``); without
        it the controller places them, and a broker restarted a moment ago and not yet
        unfenced leads none of them."""
        topic_config = {"retention.ms": str(retention_ms or DEFAULT_RETENTION_MS)}
        topic_config |= dict(config or {})
        if replicas is not None:
            if partitions not in (1, len(replicas)):
                raise ValueError(f"{partitions} partitions but {len(replicas)} replica lists")
            partitions = len(replicas)
            new = NewTopic(name, partitions, replica_assignment=[list(r) for r in replicas],
                           config=topic_config)  # fmt: skip
        else:
            rf = self.kafka.replication_factor if self.kafka is not None else 1
            new = NewTopic(name, partitions, rf, config=topic_config)
        create_topic_once(self.admin, new, timeout_s)

        wait_until(lambda: len(self.leaders(name)) == partitions, timeout_s,
                   f"a leader for every partition of {name}", interval_s=0.1)
        if replicas is not None:
            self._elect_preferred_leaders(name, {p: r[0] for p, r in enumerate(replicas)},
                                          timeout_s)
        if wait_for_burrow:
            self._need(self.burrow, "Burrow").wait_for_topic(name, partitions, timeout_s,
                                                             cluster=self.cluster)

    def _elect_preferred_leaders(self, topic: str, wanted: Mapping[int, int],
                                 timeout_s: float) -> None:
        """Until every partition is led by its preferred replica (`wanted`), as three metadata
        answers in a row say (each may come from another broker, which applies the change a
        moment later): a replica not in sync when the topic was created leads only after an
        election, which Kafka's own rebalancing holds only every
        ``leader.imbalance.check.interval.seconds``."""
        admin = self.admin()
        tps = [TopicPartition(topic, p) for p in wanted]
        agreed = 0

        def preferred() -> bool:
            nonlocal agreed
            if self.leaders(topic) == wanted:
                agreed += 1
                return agreed >= 3
            agreed = 0
            # per-partition errors (not in sync yet, no election needed) come back as values;
            # the next round asks again
            with contextlib.suppress(KafkaException):  # (its request_timeout is broken in 2.16)
                admin.elect_leaders(ElectionType.PREFERRED, tps).result(timeout=30)
            return False

        wait_until(preferred, timeout_s, f"the preferred leaders {dict(wanted)} of {topic}",
                   interval_s=0.2)  # fmt: skip

    def leaders(self, topic: str) -> dict[int, int]:
        """Partition → leader broker id, for partitions that have a leader now: none while the
        topic is unknown or no metadata answer comes within 10 s (a busy controller), so
        callers poll it."""
        try:
            meta = self.admin().list_topics(topic, timeout=10)
        except KafkaException:
            return {}
        found = meta.topics.get(topic)
        if found is None or found.error is not None:
            return {}
        return {p: part.leader for p, part in found.partitions.items() if part.leader >= 0}

    def produce(
        self,
        topic: str,
        partition: int,
        timestamps_ms: Sequence[int],
        value_size: int = 16,
        timeout_s: float = 60.0,
    ) -> list[int]:
        """Produce one record per timestamp (explicit CreateTime), in order; returns offsets."""
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
    ) -> CommitWindow:
        """A real group commit of ``offset`` (a confluent-kafka consumer with that ``group.id``,
        no join): Kafka writes it to ``__consumer_offsets``, stamped with the broker's clock, and
        Burrow reads it from there. Returns the window the stamp lies in.

        ``commit_time_ms`` is refused: a real broker stamps commits itself. Assert commit times
        within the returned window instead. Burrow's ``min-distance=1``: commits of one group
        less than 1 s apart keep the earlier timestamp.
        """
        if commit_time_ms is not None:
            raise StackFeatureUnavailable(
                "commit_time_ms cannot be chosen on real Kafka: the broker stamps every commit "
                "with its own clock; assert within the CommitWindow that commit() returns"
            )
        consumer = self._committer(group)
        before = now_ms()
        consumer.commit(offsets=[TopicPartition(topic, partition, offset)], asynchronous=False)
        return CommitWindow(before, now_ms())

    def commit_offsets(
        self, group: str, offsets: Sequence[tuple[str, int, int]], chunk: int = 1000
    ) -> CommitWindow:
        """Real group commits of many ``(topic, partition, offset)`` at once: one OffsetCommit
        request per ``chunk`` partitions instead of one per partition (committing 2,000
        partitions one by one takes a round trip each). Same stamping and Burrow path as
        :meth:`commit`; raises ``KafkaException`` if the broker refuses any partition.
        """
        consumer = self._committer(group)
        before = now_ms()
        tps = [TopicPartition(topic, partition, offset) for topic, partition, offset in offsets]
        for start in range(0, len(tps), chunk):
            done = consumer.commit(offsets=tps[start : start + chunk], asynchronous=False)
            failed = [tp for tp in done or [] if tp.error is not None]
            if failed:
                raise KafkaException(failed[0].error)
        return CommitWindow(before, now_ms())

    def commit_zk(self, group: str, topic: str, partition: int, offset: int) -> CommitWindow:
        """Refused: no ZooKeeper here. ``devstack.legacy.LegacyStack`` implements it."""
        raise StackFeatureUnavailable(
            "no ZooKeeper in the real stack: ZooKeeper commits (Burrow's kafka_zk module) are "
            "covered by the Burrow 1.2.1 compatibility suite (devstack.legacy.LegacyStack, "
            "tests/legacy/)"
        )

    def delete_records(
        self, topic: str, partition: int, before_offset: int, timeout_s: float = 30.0
    ) -> int:
        """Delete every record of ``topic[partition]`` below ``before_offset`` (moves the log
        start, as retention would); returns the new low watermark."""
        futures = self.admin().delete_records(
            [TopicPartition(topic, partition, before_offset)], request_timeout=timeout_s
        )
        (future,) = futures.values()
        return int(future.result(timeout=timeout_s).low_watermark)

    def group_ids(self) -> set[str]:
        """Every consumer group the cluster knows."""
        result = self.admin().list_consumer_groups(request_timeout=10).result(timeout=15)
        return {g.group_id for g in result.valid}

    # ---- Burrow helpers -----------------------------------------------------------------------

    def burrow_get(self, path: str, timeout_s: float = 5.0) -> tuple[int, Any]:
        """GET ``burrow_url + path``: (HTTP status, JSON or text); (0, None) if unreachable."""
        if self.burrow is not None:
            return self.burrow.get(path, timeout_s)
        return http_get(self._burrow_url + path, timeout_s)

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

    def _ensure_offsets_topic(self, timeout_s: float) -> None:
        """Make Kafka create ``__consumer_offsets`` (it does so on the first FindCoordinator)
        and wait for a leader on every partition: Burrow's consumer module asks for its
        partitions once at start and exits if the topic is missing.

        A group consumer's ``committed()`` does the FindCoordinator, not the AdminClient's
        ``list_consumer_group_offsets``: librdkafka 2.16 segfaults in that call
        (``rd_kafka_cgrp_op`` from ``rd_kafka_handle_OffsetFetch``, an admin client has no
        cgrp) when the coordinator answers "load in progress", which a fresh 3-node cluster does.
        """
        consumer = Consumer({"bootstrap.servers": self._internal, "logger": log,
                             "group.id": "ft-devstack-bootstrap"})  # fmt: skip
        admin = self.admin()

        def created() -> bool:
            with contextlib.suppress(KafkaException):
                consumer.committed([TopicPartition(OFFSETS_TOPIC, 0)], timeout=5)
            meta = admin.list_topics(OFFSETS_TOPIC, timeout=10).topics.get(OFFSETS_TOPIC)
            if meta is None or meta.error is not None or not meta.partitions:
                return False
            return all(p.leader >= 0 for p in meta.partitions.values())

        try:
            wait_until(created, timeout_s, f"Kafka to create {OFFSETS_TOPIC}", interval_s=0.2)
        finally:
            consumer.close()

    def _create_scram_user(self, timeout_s: float) -> None:
        """A SCRAM-SHA-512 user through the admin API (``AlterUserScramCredentials`` on the
        plaintext INTERNAL listener), then wait until the CLIENT listener authenticates it:
        the controller commits the credential before every broker has applied it."""
        user, password = "ft-exporter", secrets.token_urlsafe(18)
        upsert = UserScramCredentialUpsertion(
            user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), password.encode()
        )
        for future in self.admin().alter_user_scram_credentials([upsert]).values():
            future.result(timeout=timeout_s)
        self.scram_credentials = (user, password)
        conf: dict[str, Any] = {"bootstrap.servers": self._bootstrap, "logger": log,
                                **self.client_config}  # fmt: skip
        client = AdminClient(conf)

        def authenticated() -> bool:
            try:
                meta = client.list_topics(timeout=2)
            except KafkaException:
                return False
            return len(meta.brokers) == self.nodes

        wait_until(authenticated, timeout_s, f"SCRAM user {user} accepted", interval_s=0.2)

    def kill_broker(self, node_id: int) -> None:
        """SIGKILL one Kafka node (a crash: no controlled shutdown, leaderships move only once
        the controller fences it); :meth:`start_broker` brings it back with its data."""
        kafka = self._need(self.kafka, "the broker")
        self._close_clients()
        kafka.kill_broker(node_id)

    def _burrow_good(self) -> bool:
        return bool(self.burrow_get("/burrow/admin")[1] == "GOOD")

    def _get_producer(self) -> Producer:
        with self._lock:
            if self._producer is None:
                conf: dict[str, Any] = {
                    "bootstrap.servers": self._internal,
                    "linger.ms": 0,
                    "acks": "all",
                    "enable.idempotence": True,  # in order, exactly once, across retries
                    "logger": log,
                }
                self._producer = Producer(conf)
            return self._producer

    def _committer(self, group: str) -> Consumer:
        with self._lock:
            consumer = self._committers.get(group)
            if consumer is None:
                conf: dict[str, Any] = {
                    "bootstrap.servers": self._internal,
                    "group.id": group,
                    "enable.auto.commit": False,
                    "logger": log,
                }
                consumer = Consumer(conf)
                self._committers[group] = consumer
            return consumer

    def _proxies(self, node_id: int | None) -> list[FrameProxy]:
        kafka = self._need(self.kafka, "the brokers")
        if not self.proxied:
            raise StackFeatureUnavailable("no frame proxies in this stack: RealStack(proxied=True)")
        return [kafka.proxy(i) for i in (kafka.node_ids if node_id is None else [node_id])]

    def _need(self, component: _T | None, what: str) -> _T:
        if not self.managed:
            raise StackFeatureUnavailable(f"{what} is not managed by this (external) stack")
        if component is None:
            raise RuntimeError(f"{what} is not running: call start() first")
        return component


class MultiClusterStack(_Started):
    """Several Kafka clusters read by **one** Burrow, as users run Burrow: each cluster a
    :class:`RealStack` of its own (JVMs, ports, workdir, helpers), the Burrow (and the ZooKeeper
    Burrow 1.2.1 coordinates through) the group's.

    Why not N RealStacks: each would bring its own Burrow, and what users run (one Burrow, one
    ``/v3/kafka`` listing every cluster, one process whose refreshes, consumer modules and
    failures are shared) would go untested. ``stack[name]`` is that cluster's RealStack; its
    Burrow helpers (``create_topic``'s wait, ``wait_for_burrow_lag``, ``burrow_get``) ask the
    shared Burrow about its own cluster, and ``stack[name].stop_broker()`` /
    ``start_broker()`` stop and restart that cluster's JVMs only (same ports, same log dirs),
    Burrow and the other clusters running on.

    Burrow reads every cluster through its INTERNAL listener (``/v3/kafka/<name>``
    ``module.servers``), never the CLIENT one (``stack[name].bootstrap_servers``, proxied by
    default): a client that used the address Burrow gives is told apart by the proxy's
    request counts. Plaintext only.
    """

    def __init__(
        self,
        clusters: Sequence[str] = ("alpha", "beta"),
        *,
        nodes: int = 1,
        proxied: bool = True,
        start_timeout_s: float = 120.0,
        workdir: str | Path | None = None,
        keep_workdir: bool = False,
        kafka_version: str | None = None,
    ) -> None:
        if not clusters or len(set(clusters)) != len(clusters):
            raise ValueError(f"clusters must be distinct names, not {list(clusters)}")
        self.names = list(clusters)
        self.nodes = nodes
        self.proxied = proxied
        self.start_timeout_s = start_timeout_s
        self.kafka_version = kafka_version or default_kafka_version()
        self.keep_workdir = keep_workdir or bool(os.environ.get("FT_STACK_KEEP"))
        self._own_workdir = workdir is None
        self._workdir = Path(workdir) if workdir else None
        #: Cluster name -> its RealStack (made by :meth:`start`).
        self.stacks: dict[str, RealStack] = {}
        self.zookeeper: ZooKeeperServer | None = None
        self.burrow: BurrowServer | None = None
        self._started = False
        #: Seconds each phase of the last start() took ("kafka" for all clusters, "burrow").
        self.start_timings: dict[str, float] = {}

    @property
    def workdir(self) -> Path:
        """One directory per cluster, Burrow's config and log, ZooKeeper's data."""
        if self._workdir is None:
            self._workdir = Path(tempfile.mkdtemp(prefix="ft-multistack-"))
        return self._workdir

    @property
    def burrow_url(self) -> str:
        return self.burrow.url if self.burrow is not None else ""

    def __getitem__(self, name: str) -> RealStack:
        try:
            return self.stacks[name]
        except KeyError:
            raise KeyError(f"no cluster {name!r}; clusters are {self.names} (started: "
                           f"{self._started})") from None

    def start(self) -> Self:
        """ZooKeeper (Burrow 1.2.1), every cluster's Kafka at once, then one Burrow reading
        them all; on failure stop what started and raise (ProcessStartError, TimeoutError)."""
        if self._started:
            return self
        atexit.register(self.stop)
        self._started = True
        try:
            self._start()
        except BaseException:
            log.error("multi-cluster stack failed to start; logs in %s\n%s", self._workdir,
                      self.logs_tail())  # fmt: skip
            self.keep_workdir = True
            self.stop()
            raise
        log.info("multi-cluster stack up (%s): %s, burrow=%s", self.start_timings,
                 {n: s.bootstrap_servers for n, s in self.stacks.items()}, self.burrow_url)
        return self

    def _start(self) -> None:
        t0 = time.monotonic()
        burrow121 = major_version(self.kafka_version) < 4
        binary = debian_burrow_binary() if burrow121 else burrow_binary()  # before any JVM
        self.stacks = {name: RealStack(nodes=self.nodes, proxied=self.proxied, burrow=False,
                                       kafka_version=self.kafka_version, cluster=name,
                                       start_timeout_s=self.start_timeout_s,
                                       workdir=self.workdir / name)
                       for name in self.names}  # fmt: skip
        jobs: list[Callable[[], object]] = [stack.start for stack in self.stacks.values()]
        if burrow121:
            zookeeper = self.zookeeper = ZooKeeperServer(self.workdir)
            jobs.append(lambda: zookeeper.start(self.start_timeout_s))
        # the JVMs start together: on 2 cores their waits overlap (each waits for its own ports,
        # format and metadata); every job ends before the first failure is raised
        with concurrent.futures.ThreadPoolExecutor(len(jobs)) as pool:
            futures = [pool.submit(job) for job in jobs]
            for future in futures:
                future.result()
        t1 = time.monotonic()
        servers = {n: s._internal.split(",") for n, s in self.stacks.items()}
        first, *others = self.names
        more = {n: servers[n] for n in others}
        render: ConfigRenderer | None = None
        if burrow121:
            zk_address = self.zookeeper.address if self.zookeeper is not None else ""

            def render(http_port: int, pidfile: Path) -> str:
                return burrow121_config(cluster=first, servers=servers[first],
                                        zookeeper=zk_address, http_port=http_port,
                                        pidfile=pidfile, more_clusters=more)  # fmt: skip

        self.burrow = BurrowServer(self.workdir, servers[first], first, binary=binary,
                                   render_config=render, more_clusters=more)  # fmt: skip
        self.burrow.start(self.start_timeout_s)
        for name, stack in self.stacks.items():
            self.burrow.wait_for_topic(OFFSETS_TOPIC, 1, self.start_timeout_s, cluster=name)
            stack.share_burrow(self.burrow)
        self.start_timings = {"kafka": round(t1 - t0, 2), "burrow": round(time.monotonic() - t1, 2)}

    def stop(self) -> None:
        """Stop Burrow, every cluster and ZooKeeper (idempotent); removes the workdir unless
        kept."""
        if not self._started:
            return
        self._started = False
        atexit.unregister(self.stop)
        if self.burrow is not None:
            self.burrow.stop()
        for stack in self.stacks.values():
            stack.stop()
        if self.zookeeper is not None:
            self.zookeeper.stop()
        self.burrow = None
        self.zookeeper = None
        if self._own_workdir and not self.keep_workdir and self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None

    def logs_tail(self, lines: int = 40) -> str:
        """The last ``lines`` of every component's log: ZooKeeper, each cluster, Burrow."""
        parts = [self.zookeeper.log_tail(lines)] if self.zookeeper is not None else []
        parts += [f"--- cluster {name} ---\n{stack.kafka.logs_tail(lines)}"
                  for name, stack in self.stacks.items() if stack.kafka is not None]
        if self.burrow is not None:
            parts.append(self.burrow.log_tail(lines))
        return "\n".join(parts)

