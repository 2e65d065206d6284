"""Apache Kafka as local JVMs on 127.0.0.1: 1 or 3 KRaft combined broker+controller nodes
(the default; Kafka 3.9.1 unless ``kafka_version`` says 4.1.1, see :mod:`devstack.cache`), or 1
or 3 brokers on a ZooKeeper (``zookeeper_connect``, Kafka 3.9 only: the ZooKeeper-mode suite,
:mod:`devstack.legacy`).

Why these choices:

* **Combined nodes** (``process.roles=broker,controller``), static ``controller.quorum.voters``:
  the fewest JVMs for a real quorum, and ``StorageTool format`` needs no ``--standalone`` or
  ``--initial-controllers`` flag then. The cluster id is made here (Kafka's own format) so
  formatting is one JVM launch per node, all in parallel.
* **Small JVMs for 2 shared cores**: serial GC, C1 only (``TieredStopAtLevel=1``: starts in a few
  seconds; throughput is irrelevant for tests), 128-512 MB heap, 2 network/IO threads, a 16 MB
  cleaner dedupe buffer instead of 128 MB.
* **Test-friendly broker settings**: no auto topic creation (a typo fails loudly), few
  ``__consumer_offsets`` partitions, no initial rebalance delay, retention checked every second.
* **ZooKeeper mode** (``zookeeper_connect="host:port/chroot"``, Kafka < 4 only): ``broker.id``
  instead of ``node.id``/``process.roles``, no CONTROLLER listener, no storage format (the broker
  registers in ZooKeeper and creates the chroot itself). Everything else is the same.
* **Logging follows the version**: Kafka 4 uses log4j2 (a properties file via
  ``-Dlog4j2.configurationFile``), Kafka 3.x log4j 1 syntax (``-Dlog4j.configuration``, served by
  reload4j on the classpath ``devstack/poms/kafka-3.9.xml`` assembles).
* A node keeps its log dirs across :meth:`KafkaCluster.stop_broker`/:meth:`start_broker`, on the
  same ports, so a restart is a real broker restart with its data.
* Two listeners per node: ``CLIENT`` (what :attr:`KafkaCluster.bootstrap_servers` reaches, the one
  the code under test uses) and ``INTERNAL`` (replication, Burrow and the stack's own helpers).
  With ``proxied=True`` the CLIENT listener is advertised at a :class:`~devstack.proxy.FrameProxy`
  per node (added RTT, cut-off, request counts per broker) while INTERNAL stays direct, so a cut
  or a delay hits only the client under test.

Readiness is what a client sees: a metadata request through confluent-kafka lists every running
broker.
"""

from __future__ import annotations

import base64
import concurrent.futures
import logging
import os
import subprocess
import threading
import time
import uuid
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient  # type: ignore[attr-defined,unused-ignore]

from devstack.cache import default_kafka_version, kafka_classpath_dir
from devstack.processes import Daemon, ProcessStartError, free_port, log_tail, rss_bytes
from devstack.proxy import FrameProxy
from devstack.tls import DevCerts

__all__ = [
    "DEFAULT_JVM_OPTS",
    "LOG4J1_TO_FILE",
    "SCRAM_MECHANISM",
    "SECURITY_PROTOCOLS",
    "KafkaCluster",
    "KafkaNode",
    "new_cluster_id",
]

log = logging.getLogger(__name__)

DEFAULT_JVM_OPTS: tuple[str, ...] = (
    "-Xms128m",
    "-Xmx512m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
    "-Dfile.encoding=UTF-8",
)

#: ``security`` → the CLIENT listener's protocol (INTERNAL and CONTROLLER stay PLAINTEXT).
SECURITY_PROTOCOLS: Mapping[str, str] = {
    "plaintext": "PLAINTEXT",
    "tls": "SSL",
    "sasl_ssl": "SASL_SSL",
}
SCRAM_MECHANISM = "SCRAM-SHA-512"

_LOG4J2 = """\
# log4j2 (properties syntax) for one dev-stack broker: everything at INFO to one file.
status = warn
name = devstack
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = {log_file}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.statechange.name = state.change.logger
logger.statechange.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""

#: log4j 1 syntax (reload4j): everything at INFO to one file, ``{log_file}``. The base of every
#: log4j 1 JVM of the stack (Kafka 3.x, ZooKeeper), one layout for all their logs.
LOG4J1_TO_FILE = """\
log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File={log_file}
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
"""

_LOG4J1 = """\
# log4j 1 syntax (reload4j) for one dev-stack Kafka 3.x broker: everything at INFO to one file.
""" + LOG4J1_TO_FILE + """\
log4j.logger.state.change.logger=WARN
log4j.logger.kafka.request.logger=WARN
log4j.logger.org.apache.zookeeper=WARN
"""


def major_version(version: str) -> int:
    """``"3.9.1"`` -> 3."""
    return int(version.split(".", 1)[0])


def new_cluster_id() -> str:
    """A KRaft cluster id as ``kafka-storage random-uuid`` makes one: 16 random bytes, URL-safe
    base64 without padding, never starting with ``-`` (it would parse as a CLI flag)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


@dataclass
class KafkaNode:
    """One combined broker+controller: its ports, directory and JVM."""

    node_id: int
    port: int  # the CLIENT listener
    internal_port: int
    controller_port: int
    directory: Path
    proxy: FrameProxy | None = field(default=None, repr=False)
    daemon: Daemon | None = field(default=None, repr=False)

    @property
    def address(self) -> str:
        """Where clients reach this broker: its proxy when there is one."""
        return self.proxy.address if self.proxy is not None else f"127.0.0.1:{self.port}"

    @property
    def internal_address(self) -> str:
        return f"127.0.0.1:{self.internal_port}"

    @property
    def server_log(self) -> Path:
        return self.directory / "server.log"

    @property
    def running(self) -> bool:
        return self.daemon is not None and self.daemon.running

    @property
    def pid(self) -> int | None:
        return self.daemon.pid if self.daemon is not None else None


class KafkaCluster:
    """``nodes`` nodes (1 or 3) under ``workdir``; :meth:`start` / :meth:`stop`.

    With 3 nodes the internal topics and the default replication factor are 3, with
    ``min.insync.replicas=2``, so one broker can be stopped without losing writes.
    ``extra_config`` adds or overrides ``server.properties`` keys on every node.

    ``classpath_dir`` and ``kafka_version`` name the broker to run (default: the cache's
    Kafka of ``devstack/poms/kafka-3.9.xml``); ``zookeeper_connect`` runs the nodes as
    ZooKeeper-mode brokers of that ensemble (Kafka < 4) instead of a KRaft quorum.
    """

    def __init__(
        self,
        nodes: int = 1,
        workdir: Path | str = ".",
        *,
        jvm_opts: Sequence[str] = DEFAULT_JVM_OPTS,
        classpath_dir: Path | None = None,
        extra_config: Mapping[str, str] | None = None,
        start_timeout_s: float = 120.0,
        stop_grace_s: float = 10.0,
        proxied: bool = False,
        security: str = "plaintext",
        certs: DevCerts | None = None,
        kafka_version: str | None = None,
        zookeeper_connect: str | None = None,
    ) -> None:
        self.kafka_version = kafka_version or _default_kafka_version()
        if zookeeper_connect is not None and major_version(self.kafka_version) >= 4:
            raise ValueError(f"Kafka {self.kafka_version} has no ZooKeeper mode (removed in 4.0)")
        self.zookeeper_connect = zookeeper_connect
        if nodes not in (1, 3):
            raise ValueError(f"nodes must be 1 or 3, not {nodes}")
        if security not in SECURITY_PROTOCOLS:
            raise ValueError(f"security must be one of {sorted(SECURITY_PROTOCOLS)}")
        if security != "plaintext" and (proxied or certs is None):
            raise ValueError("a TLS CLIENT listener needs certs and no frame proxy (it cannot "
                             "read encrypted frames)")  # fmt: skip
        self.security = security
        self.certs = certs
        self.workdir = Path(workdir)
        self.jvm_opts = list(jvm_opts)
        self.classpath_dir = classpath_dir
        self.extra_config = dict(extra_config or {})
        self.start_timeout_s = start_timeout_s
        self.stop_grace_s = stop_grace_s
        self.proxied = proxied
        self.cluster_id = new_cluster_id()
        self.nodes: dict[int, KafkaNode] = {}
        self._formatted = False
        self._new_ports(nodes)
        # Kill the JVMs even if the owner forgets stop() (the guardian covers a killed parent).
        self._finalizer = weakref.finalize(self, _stop_nodes, self.nodes)

    # --- addresses -----------------------------------------------------------------------------

    @property
    def node_ids(self) -> list[int]:
        return sorted(self.nodes)

    @property
    def bootstrap_servers(self) -> str:
        """Every broker's CLIENT address (through its proxy when proxied)."""
        return ",".join(self.nodes[i].address for i in self.node_ids)

    @property
    def internal_bootstrap_servers(self) -> str:
        """Every broker's INTERNAL address: never proxied, never cut."""
        return ",".join(self.nodes[i].internal_address for i in self.node_ids)

    def proxy(self, node_id: int) -> FrameProxy:
        """The node's frame proxy (``proxied=True`` only)."""
        proxy = self._node(node_id).proxy
        if proxy is None:
            raise ValueError("this cluster was made without proxies (proxied=False)")
        return proxy

    @property
    def replication_factor(self) -> int:
        return 3 if len(self.nodes) == 3 else 1

    # --- life cycle ----------------------------------------------------------------------------

    def start(self, attempts: int = 3) -> KafkaCluster:
        """Format (once) and start every node; returns when a client sees all brokers.

        Ports are picked free but bound later by the JVM: on a lost race ("Address already in
        use") the whole cluster is re-made on new ports, up to ``attempts`` times.
        """
        for attempt in range(1, attempts + 1):
            try:
                self._start_once()
                return self
            except ProcessStartError as exc:
                self.stop(grace_s=0)
                if attempt == attempts or "address already in use" not in str(exc).lower():
                    raise
                log.warning("kafka: port race on try %d, retrying on new ports", attempt)
                self._new_ports(len(self.nodes))
        raise AssertionError("unreachable")

    @property
    def kraft(self) -> bool:
        """True for a KRaft quorum, False for ZooKeeper-mode brokers."""
        return self.zookeeper_connect is None

    def _start_once(self) -> None:
        for node in self.nodes.values():
            self._write_config(node)
            if node.proxy is not None:
                node.proxy.start()
        if self.kraft and not self._formatted:
            self._format()
        for node in self.nodes.values():
            self._spawn(node)
        self.wait_ready(self.node_ids)

    def stop(self, grace_s: float | None = None) -> None:
        """Stop every node (in parallel; SIGTERM, then SIGKILL after the grace) and proxy."""
        _stop_nodes(self.nodes, self.stop_grace_s if grace_s is None else grace_s)

    def stop_broker(self, node_id: int, grace_s: float | None = None) -> None:
        """Stop one node (a controlled shutdown when it has ``grace_s`` to do it)."""
        node = self._node(node_id)
        if node.daemon is not None:
            node.daemon.stop(self.stop_grace_s if grace_s is None else grace_s)

    def kill_broker(self, node_id: int) -> None:
        """SIGKILL one node: a crash, no controlled shutdown, so its leaderships move only once
        the controller fences it (``broker.session.timeout.ms``)."""
        node = self._node(node_id)
        if node.daemon is not None:
            node.daemon.kill()

    def start_broker(self, node_id: int, timeout_s: float | None = None) -> None:
        """(Re)start one node on its ports with its data; returns when clients see it."""
        self.start_brokers([node_id], timeout_s)

    def start_brokers(self, node_ids: Sequence[int], timeout_s: float | None = None) -> None:
        """(Re)start the stopped nodes among ``node_ids`` all at once (a quorum needs a majority
        up to elect a leader); returns when clients see every one of ``node_ids``."""
        for node_id in node_ids:
            node = self._node(node_id)
            if not node.running:
                self._spawn(node)
        self.wait_ready(node_ids, timeout_s)

    def wait_ready(self, node_ids: Sequence[int], timeout_s: float | None = None) -> None:
        """Until a metadata request lists every broker in ``node_ids``; ProcessStartError with
        the log tails when a JVM dies first or the deadline passes."""
        timeout = self.start_timeout_s if timeout_s is None else timeout_s
        admin = self._admin()  # INTERNAL: readiness of the brokers, not of a proxy
        want = set(node_ids)
        seen: set[int] = set()

        def ready() -> bool:
            nonlocal seen
            for node_id in want:
                daemon = self.nodes[node_id].daemon
                if daemon is None or daemon.returncode is not None:
                    code = None if daemon is None else daemon.returncode
                    raise ProcessStartError(
                        f"kafka node {node_id} exited (code {code}) before it was ready\n"
                        f"{self.logs_tail(node_ids=[node_id])}"
                    )
            try:
                meta = admin.list_topics(timeout=2)
            except Exception:  # not up yet: KafkaException, or a transport error
                return False
            seen = set(meta.brokers)
            return want <= seen

        deadline = time.monotonic() + timeout
        while not ready():
            if time.monotonic() >= deadline:
                raise ProcessStartError(
                    f"kafka nodes {sorted(want)} not all visible after {timeout:g} s "
                    f"(metadata lists {sorted(seen)})\n{self.logs_tail(node_ids=sorted(want))}"
                )
            time.sleep(0.2)

    # --- introspection -------------------------------------------------------------------------

    def rss_bytes(self) -> dict[int, int]:
        """Resident memory of every running node's JVM."""
        return {i: rss_bytes(n.pid) for i, n in self.nodes.items() if n.pid is not None}

    def logs_tail(self, lines: int = 30, node_ids: Sequence[int] | None = None) -> str:
        parts = []
        for node_id in node_ids or self.node_ids:
            node = self.nodes[node_id]
            parts.append(log_tail(f"kafka-{node_id} server.log", node.server_log, lines))
            parts.append(log_tail(f"kafka-{node_id} stdout", node.directory / "stdout.log", 10))
        return "\n".join(parts)

    # --- internals -----------------------------------------------------------------------------

    def _node(self, node_id: int) -> KafkaNode:
        try:
            return self.nodes[node_id]
        except KeyError:
            raise ValueError(f"no kafka node {node_id}; nodes are {self.node_ids}") from None

    def _new_ports(self, count: int) -> None:
        ports = iter(_distinct_free_ports(4 * count))
        for node in self.nodes.values():
            if node.proxy is not None:
                node.proxy.stop()
        self.nodes.clear()
        for i in range(1, count + 1):
            port, internal, controller, proxy_port = (next(ports) for _ in range(4))
            proxy = FrameProxy(("127.0.0.1", port), port=proxy_port) if self.proxied else None
            self.nodes[i] = KafkaNode(i, port, internal, controller, self.workdir / f"kafka-{i}",
                                      proxy=proxy)  # fmt: skip
        self._formatted = False

    def server_properties(self, node: KafkaNode) -> dict[str, str]:
        """The broker config of one node (before ``extra_config``)."""
        rf = str(self.replication_factor)
        min_isr = "2" if len(self.nodes) == 3 else "1"
        listeners = f"CLIENT://127.0.0.1:{node.port},INTERNAL://{node.internal_address}"
        protocols = f"CLIENT:{SECURITY_PROTOCOLS[self.security]},INTERNAL:PLAINTEXT"
        props = {
            # a client gets the addresses of the listener it came in on: the proxies' for CLIENT
            "advertised.listeners": f"CLIENT://{node.address},INTERNAL://{node.internal_address}",
            "inter.broker.listener.name": "INTERNAL",
            "log.dirs": str(node.directory / "data"),
            "num.partitions": "1",
            "default.replication.factor": rf,
            "min.insync.replicas": min_isr,
            "offsets.topic.replication.factor": rf,
            "offsets.topic.num.partitions": "4",
            "transaction.state.log.replication.factor": rf,
            "transaction.state.log.min.isr": min_isr,
            "transaction.state.log.num.partitions": "4",
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "false",
            "log.retention.check.interval.ms": "1000",
            "num.network.threads": "2",
            "num.io.threads": "2",
            "num.recovery.threads.per.data.dir": "1",
            "num.replica.fetchers": "1",
            "background.threads": "2",
            "log.cleaner.threads": "1",
            "log.cleaner.dedupe.buffer.size": str(16 * 1024 * 1024),
            "log.cleaner.backoff.ms": "1000",
        }
        if major_version(self.kafka_version) >= 4:
            props |= {
                "share.coordinator.state.topic.replication.factor": rf,
                "share.coordinator.state.topic.min.isr": min_isr,
            }
        if self.zookeeper_connect is not None:
            props |= {
                "broker.id": str(node.node_id),
                "zookeeper.connect": self.zookeeper_connect,
                "zookeeper.connection.timeout.ms": "30000",
                "listeners": listeners,
                "listener.security.protocol.map": protocols,
            }
        else:
            voters = ",".join(
                f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in self.nodes.values()
            )
            props |= {
                "process.roles": "broker,controller",
                "node.id": str(node.node_id),
                "controller.quorum.voters": voters,
                "listeners": f"{listeners},CONTROLLER://127.0.0.1:{node.controller_port}",
                "controller.listener.names": "CONTROLLER",
                "listener.security.protocol.map": f"{protocols},CONTROLLER:PLAINTEXT",
                # a stopped node is noticed and fenced within seconds, not after the 9 s default
                "broker.session.timeout.ms": "4000",
                "broker.heartbeat.interval.ms": "500",
            }
        return props | self._security_properties()

    def _security_properties(self) -> dict[str, str]:
        """TLS (PEM key store and trust store) and SCRAM on the CLIENT listener only."""
        if self.security == "plaintext" or self.certs is None:
            return {}
        props = {
            "listener.name.client.ssl.keystore.type": "PEM",
            "listener.name.client.ssl.keystore.location": str(self.certs.keystore),
            "listener.name.client.ssl.truststore.type": "PEM",
            "listener.name.client.ssl.truststore.location": str(self.certs.ca),
            "listener.name.client.ssl.client.auth": "none",
        }
        if self.security == "sasl_ssl":
            module = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
            props |= {
                "listener.name.client.sasl.enabled.mechanisms": SCRAM_MECHANISM,
                f"listener.name.client.{SCRAM_MECHANISM.lower()}.sasl.jaas.config": module,
            }
        return props

    def _write_config(self, node: KafkaNode) -> None:
        node.directory.mkdir(parents=True, exist_ok=True)
        props = self.server_properties(node) | self.extra_config
        text = "".join(f"{k}={v}\n" for k, v in props.items())
        (node.directory / "server.properties").write_text(text)
        name, template, _ = self._logging(node)
        (node.directory / name).write_text(template.format(log_file=node.server_log))

    def _logging(self, node: KafkaNode) -> tuple[str, str, str]:
        """(file name, template, JVM flag): log4j2 for Kafka 4, log4j 1 syntax for 3.x."""
        if major_version(self.kafka_version) >= 4:
            path = node.directory / "log4j2.properties"
            return path.name, _LOG4J2, f"-Dlog4j2.configurationFile={path}"
        path = node.directory / "log4j.properties"
        return path.name, _LOG4J1, f"-Dlog4j.configuration=file:{path}"

    def _java(self, node: KafkaNode, main: Sequence[str]) -> list[str]:
        classpath = self.classpath_dir or kafka_classpath_dir(self.kafka_version)
        return [
            "java", *self.jvm_opts, self._logging(node)[2],
            f"-Dkafka.logs.dir={node.directory}",
            "-cp", f"{classpath}/*", *main,
        ]  # fmt: skip

    def _format(self) -> None:
        """``StorageTool format`` for every node, in parallel (each is one short JVM)."""

        def run(node: KafkaNode) -> None:
            cmd = self._java(node, ["kafka.tools.StorageTool", "format", "-t", self.cluster_id,
                                    "-c", str(node.directory / "server.properties")])  # fmt: skip
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
            if done.returncode != 0:
                raise ProcessStartError(
                    f"kafka-storage format of node {node.node_id} failed "
                    f"(code {done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
                )

        with concurrent.futures.ThreadPoolExecutor(len(self.nodes)) as pool:
            list(pool.map(run, self.nodes.values()))
        self._formatted = True

    def _spawn(self, node: KafkaNode) -> None:
        node.daemon = Daemon(
            f"kafka-{node.node_id}",
            self._java(node, ["kafka.Kafka", str(node.directory / "server.properties")]),
            node.directory / "stdout.log",
            cwd=node.directory,
            grace_s=self.stop_grace_s,
        )
        node.daemon.spawn()

    def _admin(self) -> AdminClient:
        conf: dict[str, Any] = {
            "bootstrap.servers": self.internal_bootstrap_servers,
            "logger": _QUIET,  # connection refused while booting is expected, not news
            "socket.connection.setup.timeout.ms": 2000,
            "reconnect.backoff.max.ms": 500,
        }
        return AdminClient(conf)


def _default_kafka_version() -> str:
    """The version of the default classpath: the default stack's
    (``devstack/poms/kafka-3.9.xml``), or the broker jar's in ``FT_KAFKA_CLASSPATH``
    (``kafka_2.13-<version>.jar``)."""
    override = os.environ.get("FT_KAFKA_CLASSPATH")
    if override:
        for jar in Path(override).glob("kafka_2.13-*.jar"):
            return jar.name.removeprefix("kafka_2.13-").removesuffix(".jar")
    return default_kafka_version()


_QUIET = logging.getLogger("devstack.kafka.readiness")
_QUIET.setLevel(logging.CRITICAL)


def _distinct_free_ports(count: int) -> list[int]:
    ports: list[int] = []
    while len(ports) < count:
        port = free_port()
        if port not in ports:
            ports.append(port)
    return ports


def _stop_nodes(nodes: Mapping[int, KafkaNode], grace_s: float = 10.0) -> None:
    """Stop the nodes' JVMs in parallel (sequentially once the interpreter is shutting down),
    then their proxies."""
    try:
        _stop_daemons(nodes, grace_s)
    finally:
        for node in nodes.values():
            if node.proxy is not None:
                node.proxy.stop()


def _stop_daemons(nodes: Mapping[int, KafkaNode], grace_s: float) -> None:
    daemons = [n.daemon for n in nodes.values() if n.daemon is not None and n.daemon.pid]
    if len(daemons) <= 1:
        for daemon in daemons:
            daemon.stop(grace_s)
        return
    threads = [threading.Thread(target=d.stop, args=(grace_s,), daemon=True) for d in daemons]
    try:
        for thread in threads:
            thread.start()
    except RuntimeError:  # no new threads at interpreter shutdown
        pass
    for thread in threads:
        if thread.is_alive():
            thread.join()
    for daemon in daemons:
        daemon.stop(grace_s)  # a no-op for those the threads stopped
