"""One standalone ZooKeeper as a local JVM, for Burrow 1.2.1 (its ``[zookeeper]`` section is
mandatory: the coordinator creates its root path at start) and for ZooKeeper-mode Kafka 3.9.

It runs ``ZooKeeperServerMain`` from the Kafka 3.9.1 classpath (the zookeeper 3.8.4 jar the 3.9
distribution's ``zookeeper-server-start.sh`` runs): the version the broker's client is built
against, one classpath and one logging setup for every JVM of the stack.
"""

from __future__ import annotations

from pathlib import Path

from devstack import zk
from devstack.cache import default_kafka_version, kafka_classpath_dir
from devstack.kafka import DEFAULT_JVM_OPTS, LOG4J1_TO_FILE
from devstack.processes import Daemon, ProcessStartError, free_port, log_tail

__all__ = ["ZooKeeperServer"]

_ZK_LOG4J1 = """\
# log4j 1 syntax (reload4j) for the dev-stack ZooKeeper: INFO to one file.
""" + LOG4J1_TO_FILE


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
        classpath = self.classpath_dir or kafka_classpath_dir(default_kafka_version())
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
