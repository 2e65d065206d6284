"""``LegacyStack``: ZooKeeper + Apache Kafka 3.9.1 (ZooKeeper mode) + Debian's Burrow 1.2.1.

Why this stack exists: Debian still ships Burrow 1.2.1 (2018, Sarama 1.20.1). It sends
ListOffsets **v0** for every broker offset (``&sarama.OffsetRequest{}`` in its cluster module),
which Kafka 4.0 removed (KIP-896), so it cannot read the Kafka 4.1 of :class:`RealStack`. Kafka
3.9 is the last line that answers v0, and Maven Central serves ``kafka_2.13`` 3.9.1.

Why Kafka runs on ZooKeeper (not KRaft) here: Burrow 1.2.1 needs a ZooKeeper for itself anyway
(its ``[zookeeper]`` section is mandatory: the coordinator creates ``/burrow`` at start) and its
``kafka_zk`` consumer module reads the ``/consumers`` tree of the ZooKeeper the Kafka cluster
keeps its metadata in. A 2018-era deployment is exactly that: one ensemble, Kafka under a chroot
(``/kafka`` here), Burrow's own root beside it. One ZooKeeper JVM serves all three, and both
consumer modules run: ``kafka`` (``__consumer_offsets``, real group commits) and ``kafka_zk``
(``/kafka/consumers/<group>/offsets/<topic>/<partition>``, what old ZooKeeper-committing
consumers wrote; the znode's mtime is the commit time).

ZooKeeper runs from the Kafka 3.9.1 classpath (``ZooKeeperServerMain`` of its zookeeper 3.8.4
jar, what the 3.9 distribution's ``zookeeper-server-start.sh`` runs): the version the broker's
client is built against, one classpath and one logging setup for both JVMs.

Everything else is :class:`RealStack` (same helpers: ``create_topic``, ``produce``, ``commit``,
``delete_records``, ``wait_for_burrow_lag``...), with :meth:`LegacyStack.commit_zk` working. One
node, plaintext, no frame proxies: the suite proves compatibility, not faults.
"""

from __future__ import annotations

import os
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from devstack.burrow import BurrowServer
from devstack.cache import cache_dir
from devstack.kafka import DEFAULT_JVM_OPTS, KafkaCluster
from devstack.legacy import zk
from devstack.processes import Daemon, ProcessStartError, free_port, log_tail
from devstack.stack import CommitWindow, RealStack, now_ms

__all__ = [
    "BURROW_KAFKA_VERSION",
    "KAFKA_CHROOT",
    "LEGACY_POM",
    "LegacyStack",
    "ZooKeeperServer",
    "legacy_burrow_binary",
    "legacy_burrow_config",
    "legacy_kafka_classpath_dir",
    "legacy_kafka_version",
]

LEGACY_POM = Path(__file__).with_name("pom.xml")
#: Where Debian's ``burrow`` package puts the binary (``dpkg -L burrow``).
DEBIAN_BURROW = Path("/usr/bin/Burrow")
#: The newest version in Burrow 1.2.1's own table (``helpers/sarama.go``): anything else, "3.9.0"
#: included, panics with "Unknown Kafka Version". Its broker offsets are ListOffsets v0 whatever
#: this says.
BURROW_KAFKA_VERSION = "2.1.0"
#: Kafka's chroot in the shared ZooKeeper; ``kafka_zk`` reads ``<chroot>/consumers``.
KAFKA_CHROOT = "/kafka"
_INSTALL_HINT = "run scripts/install (it assembles the Kafka 3.9 classpath once)"

_ZK_LOG4J1 = """\
# log4j 1 syntax (reload4j) for the dev-stack ZooKeeper: INFO to one file.
log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File={log_file}
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
"""


def legacy_kafka_version() -> str:
    """``kafka.version`` of devstack/legacy/pom.xml."""
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    node = ET.parse(LEGACY_POM).getroot().find("m:properties/m:kafka.version", ns)
    if node is None or not (node.text or "").strip():
        raise ProcessStartError(f"no <kafka.version> property in {LEGACY_POM}")
    return (node.text or "").strip()


def legacy_kafka_classpath_dir() -> Path:
    """The Kafka 3.9 jars (``FT_LEGACY_KAFKA_CLASSPATH`` overrides); ProcessStartError if
    missing."""
    override = os.environ.get("FT_LEGACY_KAFKA_CLASSPATH")
    path = Path(override) if override else cache_dir() / f"kafka-{legacy_kafka_version()}"
    if not any(path.glob("kafka_2.13-*.jar")) or not any(path.glob("zookeeper-3*.jar")):
        raise ProcessStartError(f"no Kafka/ZooKeeper jars in {path}: {_INSTALL_HINT}")
    return path


def legacy_burrow_binary() -> Path:
    """Debian's Burrow 1.2.1 (``FT_LEGACY_BURROW_BIN`` overrides); ProcessStartError if
    missing."""
    path = Path(os.environ.get("FT_LEGACY_BURROW_BIN") or DEBIAN_BURROW)
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise ProcessStartError(f"no Burrow 1.2.1 at {path}: {_INSTALL_HINT} (apt burrow)")
    return path


def legacy_burrow_config(
    *, cluster: str, servers: list[str], zookeeper: str, http_port: int, pidfile: Path,
    chroot: str = KAFKA_CHROOT, refresh_s: int = 1,
) -> str:  # fmt: skip
    """Burrow 1.2.1's TOML (key names checked against its v1.2.1 source): both consumer modules,
    ``kafka`` (``__consumer_offsets``) and ``kafka_zk`` (``<chroot>/consumers``)."""
    q = '", "'
    return f"""\
# Burrow 1.2.1 for the freshness-tracker legacy dev stack (written by devstack/legacy/stack.py).
[general]
pidfile = "{pidfile}"
env-var-prefix = "ftdevstackburrow"

[logging]
level = "info"

# Burrow's own coordination (mandatory in 1.2.1): it creates root-path at start.
[zookeeper]
servers = ["{zookeeper}"]
timeout = 6
root-path = "/burrow"

[client-profile.devstack]
client-id = "burrow-devstack"
kafka-version = "{BURROW_KAFKA_VERSION}"

[cluster.{cluster}]
class-name = "kafka"
servers = ["{q.join(servers)}"]
client-profile = "devstack"
topic-refresh = {refresh_s}
offset-refresh = {refresh_s}

[consumer.{cluster}]
class-name = "kafka"
cluster = "{cluster}"
servers = ["{q.join(servers)}"]
client-profile = "devstack"
offsets-topic = "__consumer_offsets"
start-latest = false

[consumer.{cluster}_zk]
class-name = "kafka_zk"
cluster = "{cluster}"
servers = ["{zookeeper}"]
zookeeper-path = "{chroot}"
zookeeper-timeout = 6

[httpserver.default]
address = "127.0.0.1:{http_port}"

[storage.default]
class-name = "inmemory"
workers = 4
intervals = 10
min-distance = 1
expire-group = 604800

[evaluator.default]
class-name = "caching"
expire-cache = 1
"""


class ZooKeeperServer:
    """One standalone ZooKeeper (``ZooKeeperServerMain`` from the Kafka 3.9 classpath) on
    127.0.0.1; ready when it grants a session. 500 ms ticks: sessions of 1-10 s."""

    def __init__(self, workdir: Path, classpath_dir: Path | None = None) -> None:
        self.directory = workdir / "zookeeper"
        self.classpath_dir = classpath_dir
        self.port = free_port()
        self.daemon: Daemon | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.directory / "zookeeper.log"

    def start(self, timeout_s: float = 60.0, attempts: int = 3) -> None:
        """Start and wait for a session; a lost port race is retried on a new port."""
        for attempt in range(1, attempts + 1):
            self._spawn()
            assert self.daemon is not None
            try:
                self.daemon.wait_ready(lambda: zk.zk_ok(self.address), timeout_s)
                return
            except ProcessStartError as exc:
                self.stop()
                if attempt == attempts or "address already in use" not in str(exc).lower():
                    raise
                self.port = free_port()

    def _spawn(self) -> None:
        data = self.directory / "data"
        data.mkdir(parents=True, exist_ok=True)
        cfg = self.directory / "zoo.cfg"
        cfg.write_text(
            f"tickTime=500\ndataDir={data}\nclientPort={self.port}\nclientPortAddress=127.0.0.1\n"
            "admin.enableServer=false\nmaxClientCnxns=0\n"
        )
        log4j = self.directory / "log4j.properties"
        log4j.write_text(_ZK_LOG4J1.format(log_file=self.log_path))
        classpath = self.classpath_dir or legacy_kafka_classpath_dir()
        small_heap = ["-Xms32m", "-Xmx128m"]
        command = [
            "java", *small_heap, *[o for o in DEFAULT_JVM_OPTS if not o.startswith("-Xm")],
            f"-Dlog4j.configuration=file:{log4j}", "-Dzookeeper.admin.enableServer=false",
            "-cp", f"{classpath}/*", "org.apache.zookeeper.server.ZooKeeperServerMain", str(cfg),
        ]  # fmt: skip
        self.daemon = Daemon("zookeeper", command, self.directory / "stdout.log",
                             cwd=self.directory, grace_s=3.0)  # fmt: skip
        self.daemon.spawn()

    def stop(self) -> None:
        if self.daemon is not None:
            self.daemon.stop()

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join([log_tail("zookeeper", self.log_path, lines),
                          log_tail("zookeeper stdout", self.directory / "stdout.log", 10)])


class LegacyStack(RealStack):
    """ZooKeeper + one Kafka 3.9.1 broker on it + Burrow 1.2.1 (both consumer modules).

    Attributes once started, besides :class:`RealStack`'s: ``zookeeper``
    (:class:`ZooKeeperServer`), ``zookeeper_address``. ``start_timings`` has a "zookeeper" phase.
    """

    def __init__(
        self,
        start_timeout_s: float = 120.0,
        workdir: str | Path | None = None,
        keep_workdir: bool = False,
    ) -> None:
        super().__init__(nodes=1, start_timeout_s=start_timeout_s, workdir=workdir,
                         keep_workdir=keep_workdir, proxied=False)  # fmt: skip
        self.zookeeper: ZooKeeperServer | None = None

    @property
    def zookeeper_address(self) -> str:
        return self._need(self.zookeeper, "ZooKeeper").address

    def _start_managed(self) -> None:
        t0 = time.monotonic()
        classpath = legacy_kafka_classpath_dir()
        binary = legacy_burrow_binary()
        self.zookeeper = ZooKeeperServer(self.workdir, classpath)
        self.zookeeper.start(self.start_timeout_s)
        t1 = time.monotonic()
        self.kafka = KafkaCluster(1, self.workdir, classpath_dir=classpath,
                                  kafka_version=legacy_kafka_version(),
                                  zookeeper_connect=self.zookeeper.address + KAFKA_CHROOT,
                                  start_timeout_s=self.start_timeout_s)  # fmt: skip
        self.kafka.start()
        self._bootstrap = self.kafka.bootstrap_servers
        self._internal = self.kafka.internal_bootstrap_servers
        t2 = time.monotonic()
        self._ensure_offsets_topic(self.start_timeout_s)
        # kafka_zk lists <chroot>/consumers once at start and sets no watch when that fails: it
        # must exist first (Kafka 3.9 creates it with its other top-level znodes; made sure here).
        zk.ensure_path(self.zookeeper.address, f"{KAFKA_CHROOT}/consumers")
        t3 = time.monotonic()
        zookeeper, servers = self.zookeeper.address, self._internal.split(",")

        def render(http_port: int, pidfile: Path) -> str:
            return legacy_burrow_config(cluster=self.cluster, servers=servers,
                                        zookeeper=zookeeper, http_port=http_port,
                                        pidfile=pidfile)  # fmt: skip

        self.burrow = BurrowServer(self.workdir, servers, self.cluster, binary=binary,
                                   render_config=render)  # fmt: skip
        self._burrow_url = self.burrow.url
        self.start_burrow()
        self.start_timings = {"zookeeper": round(t1 - t0, 2), "kafka": round(t2 - t1, 2),
                              "offsets_topic": round(t3 - t2, 2),
                              "burrow": round(time.monotonic() - t3, 2)}  # fmt: skip

    def stop(self) -> None:
        """Burrow, then Kafka (its controlled shutdown needs ZooKeeper), then ZooKeeper, then
        what :meth:`RealStack.stop` does (the workdir)."""
        if not self._started:
            return
        self._close_clients()
        if self.burrow is not None:
            self.burrow.stop()
        if self.kafka is not None:
            self.kafka.stop(grace_s=5.0)
        if self.zookeeper is not None:
            self.zookeeper.stop()
            self.zookeeper = None
        super().stop()

    def logs_tail(self, lines: int = 40) -> str:
        parts = [self.zookeeper.log_tail(lines)] if self.zookeeper is not None else []
        return "\n".join([*parts, super().logs_tail(lines)])

    # ---- ZooKeeper commits --------------------------------------------------------------------

    def znode_path(self, group: str, topic: str, partition: int) -> str:
        return f"{KAFKA_CHROOT}/consumers/{group}/offsets/{topic}/{partition}"

    def commit_zk(self, group: str, topic: str, partition: int, offset: int) -> CommitWindow:
        """Commit ``offset`` the way ZooKeeper-committing consumers did: the decimal offset as
        the data of ``<chroot>/consumers/<group>/offsets/<topic>/<partition>`` (created with
        its parents when missing). Burrow's ``kafka_zk`` module reports the znode's mtime
        (ZooKeeper's clock) as the commit time: it lies in the returned window, and
        :meth:`znode_mtime` tells it exactly.

        ``kafka_zk`` numbers a topic's partitions by counting the children of its znode: commit
        partitions 0..n-1, never a later one alone.
        """
        before = now_ms()
        zk.set_znode(self.zookeeper_address, self.znode_path(group, topic, partition),
                     str(offset).encode())  # fmt: skip
        return CommitWindow(before, now_ms())

    def znode_mtime(self, group: str, topic: str, partition: int) -> int | None:
        """The commit znode's mtime (ms; None when missing): Burrow 1.2.1's ``end.timestamp``
        for that commit."""
        return zk.mtime(self.zookeeper_address, self.znode_path(group, topic, partition))
