"""Burrow as a local process: Debian's **Burrow 1.2.1** reading Kafka 3.9 (the default stack,
:func:`burrow121_config`), or a **Burrow >= 1.9.5** the user brings (``FT_BURROW_BIN``) reading
Kafka 4.1 (:func:`burrow_config`): no registry here serves a Burrow that reads Kafka 4.

Why Burrow 1.2.1's settings: ``kafka-version = "2.1.0"``, the newest in its own table (anything
else, "3.9.0" included, panics "Unknown Kafka Version"; its broker offsets are ListOffsets v0
whatever it says); the mandatory ``[zookeeper]`` (its coordinator's root path), on the stack's
own ZooKeeper; TLS through a ``[tls.*]`` profile (Sarama 1.20 verifies the chain and the host
name); no SASL/SCRAM (Sarama 1.20 speaks SASL/PLAIN only), so on a ``sasl_ssl`` stack it reads the
brokers' internal listener.

Why Burrow >= 1.9.5's settings:

* client profile ``kafka-version = "4.0.0"``: Sarama 1.46's newest known version (its
  ``MaxVersion``; ``ParseKafkaVersion`` accepts any x.y.z but picks request versions by comparing
  with the ones it knows, so 4.1.0 would behave exactly the same). Below 2.1 Sarama would send
  request versions Kafka 4 removed (KIP-896).
* consumer module ``kafka`` reads the real ``__consumer_offsets`` from the start; no
  ``[zookeeper]`` and no ``[notifier]`` section, so Burrow starts no ZooKeeper client at all.
  The topic must exist before Burrow starts: its consumer module asks for the partition count
  once and, on an error, Burrow logs "failed to start consumer" and exits with code 1 about a
  second later, after looking healthy (``/burrow/admin`` GOOD, the cluster listed) until then.
  Kafka creates the topic lazily, so :class:`~devstack.stack.RealStack` makes it exist first,
  and readiness here waits for the consumer module's "starting consumers" log line.
* refresh every second (topics and broker offsets) and a 1 s result cache, so a test waits
  about a second for Burrow, not the 10-60 s defaults; ``min-distance = 1`` as before.
* ``general.env-var-prefix`` is a name nobody sets and every ``BURROW_*`` variable is removed
  from its environment: viper maps ``BURROW_CLUSTER`` etc. onto config keys, and Burrow panics.
"""

from __future__ import annotations

import json
import logging
import os
import time
import urllib.error
import urllib.request
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from devstack.cache import burrow_binary
from devstack.processes import Daemon, ProcessStartError, free_port, log_tail, wait_until

__all__ = [
    "BURROW121_KAFKA_VERSION",
    "BurrowServer",
    "ConfigRenderer",
    "burrow121_config",
    "burrow_config",
    "http_get",
]

log = logging.getLogger(__name__)

KAFKA_VERSION = "4.0.0"

#: What Burrow 1.2.1 dies of when a topic's detail is asked during its partial first refresh.
_NIL_BROKER_OFFSET_PANIC = "interface conversion: interface {} is nil, not *storage.brokerOffset"

#: The newest version in Burrow 1.2.1's own table (``helpers/sarama.go``).
BURROW121_KAFKA_VERSION = "2.1.0"

#: ``(http_port, pidfile) -> TOML``: the config a BurrowServer writes before each start.
ConfigRenderer = Callable[[int, Path], str]


def _cluster_toml(cluster: str, brokers: str, refresh_s: int, more_consumers: str = "") -> str:
    """One Kafka cluster as Burrow reads it: its cluster module (topics and broker offsets) and
    its ``kafka`` consumer module (``__consumer_offsets``); the same keys in Burrow 1.2.1 and
    1.9.5. One Burrow reads several clusters with one such pair each."""
    return f"""\
[cluster.{cluster}]
class-name = "kafka"
servers = {brokers}
client-profile = "devstack"
topic-refresh = {refresh_s}
offset-refresh = {refresh_s}

[consumer.{cluster}]
class-name = "kafka"
cluster = {json.dumps(cluster)}
servers = {brokers}
client-profile = "devstack"
offsets-topic = "__consumer_offsets"
start-latest = false
{more_consumers}
"""


def _modules_toml(cluster: str, brokers: str, refresh_s: int, http_port: int,
                  more_consumers: str = "",
                  more_clusters: Mapping[str, Sequence[str]] | None = None) -> str:
    """Every cluster's modules (``cluster`` first, then ``more_clusters``: name -> servers),
    then HTTP, storage and evaluator: the same keys in Burrow 1.2.1 and 1.9.5."""
    clusters = _cluster_toml(cluster, brokers, refresh_s, more_consumers)
    for name, servers in (more_clusters or {}).items():
        if name == cluster:
            raise ValueError(f"cluster {name!r} given twice")
        clusters += "\n" + _cluster_toml(name, json.dumps(list(servers)), refresh_s)
    return clusters + f"""\
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


def _general_toml(version: str, pidfile: Path) -> str:
    """The head both Burrow versions' files share: who wrote it, the pidfile, the environment
    prefix and info logging."""
    return f"""\
# Burrow {version} for the freshness-tracker dev stack (written by devstack/burrow.py).
[general]
pidfile = {json.dumps(str(pidfile))}
env-var-prefix = "ftdevstackburrow"

[logging]
level = "info"
"""


def burrow121_config(
    *, cluster: str, servers: Sequence[str], zookeeper: str, http_port: int, pidfile: Path,
    refresh_s: int = 1, tls: tuple[Path, Path] | None = None,
    zk_offsets_path: str | None = None, more_clusters: Mapping[str, Sequence[str]] | None = None,
) -> str:  # fmt: skip
    """Burrow 1.2.1's TOML (key names checked against its v1.2.1 source): the ``kafka`` consumer
    module (``__consumer_offsets``), and ``kafka_zk`` (``<zk_offsets_path>/consumers``, what
    ZooKeeper-committing consumers wrote) when ``zk_offsets_path`` is given.

    ``tls``: (CA, a PEM holding a certificate and its key). Burrow 1.2.1 reads ``cafile`` only
    when ``certfile`` and ``keyfile`` are set too (``helpers/sarama.go``), else it trusts the
    system roots alone; the broker asks for no client certificate, so any one does.

    ``more_clusters`` (name -> servers): further Kafka clusters the same Burrow reads, as one
    Burrow serves several clusters in production; same client profile, ``kafka`` module only.
    """
    brokers = json.dumps(list(servers))
    tls_profile = ""
    if tls is not None:
        ca, pem = (json.dumps(str(p)) for p in tls)
        tls_profile = (f'tls = "devstack"\n\n[tls.devstack]\ncafile = {ca}\ncertfile = {pem}\n'
                       f"keyfile = {pem}\nnoverify = false\n")
    zk_module = ""
    if zk_offsets_path is not None:
        zk_module = f"""
[consumer.{cluster}_zk]
class-name = "kafka_zk"
cluster = {json.dumps(cluster)}
servers = [{json.dumps(zookeeper)}]
zookeeper-path = {json.dumps(zk_offsets_path)}
zookeeper-timeout = 6
"""
    return _general_toml("1.2.1", pidfile) + f"""
# Burrow's own coordination (mandatory in 1.2.1): it creates root-path at start.
[zookeeper]
servers = [{json.dumps(zookeeper)}]
timeout = 6
root-path = "/burrow"

[client-profile.devstack]
client-id = "burrow-devstack"
kafka-version = "{BURROW121_KAFKA_VERSION}"
{tls_profile}
""" + _modules_toml(cluster, brokers, refresh_s, http_port, zk_module, more_clusters)


def burrow_config(
    *,
    cluster: str,
    servers: Sequence[str],
    http_port: int,
    pidfile: Path,
    refresh_s: int = 1,
    kafka_version: str = KAFKA_VERSION,
    tls_ca: Path | None = None,
    sasl: tuple[str, str, str] | None = None,
    more_clusters: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """Burrow 1.9.5's TOML for one cluster, or several with ``more_clusters`` (name ->
    servers, same client profile); key names checked against its source.

    ``tls_ca``: read the brokers through TLS, trusting that CA (Go verifies chain and host
    name: ``noverify`` stays false). ``sasl``: (mechanism, user, password), SCRAM over that TLS
    (``core/internal/helpers/sarama.go``: ``tls.<name>.cafile``, ``sasl.<name>.mechanism``).
    """
    brokers = json.dumps(list(servers))
    security = ""
    if tls_ca is not None:
        security += 'tls = "devstack"\n'
    if sasl is not None:
        security += 'sasl = "devstack"\n'
    profiles = ""
    if tls_ca is not None:
        profiles += f'\n[tls.devstack]\ncafile = {json.dumps(str(tls_ca))}\nnoverify = false\n'
    if sasl is not None:
        mechanism, user, password = sasl
        profiles += (f"\n[sasl.devstack]\nmechanism = {json.dumps(mechanism)}\n"
                     f"username = {json.dumps(user)}\npassword = {json.dumps(password)}\n"
                     "handshake-first = true\n")  # fmt: skip
    return _general_toml("1.9.5", pidfile) + f"""
[client-profile.devstack]
client-id = "burrow-devstack"
kafka-version = {json.dumps(kafka_version)}
{security}{profiles}
""" + _modules_toml(cluster, brokers, refresh_s, http_port, more_clusters=more_clusters)


class BurrowServer:
    """One Burrow process; :meth:`start` returns once it serves the cluster (same port on
    every restart, so a client's URL stays valid).

    By default a Burrow >= 1.9.5 (``FT_BURROW_BIN``) with :func:`burrow_config`. ``binary`` and
    ``render_config`` run another Burrow with its own TOML (Burrow 1.2.1:
    :func:`burrow121_config`); readiness is the same (HTTP GOOD, the cluster listed, the ``kafka``
    consumer module's "starting consumers" log line, which every Burrow since 1.0 writes), so the
    config must have a ``kafka`` consumer module.

    ``more_clusters`` (name -> servers): the further clusters this Burrow reads (their modules
    in :func:`burrow_config`; a ``render_config`` writes them itself). Readiness then waits for
    every cluster to be listed and for every ``kafka`` consumer module to have started.
    """

    def __init__(
        self,
        workdir: Path,
        servers: Sequence[str],
        cluster: str = "local",
        *,
        port: int | None = None,
        binary: Path | None = None,
        refresh_s: int = 1,
        tls_ca: Path | None = None,
        sasl: tuple[str, str, str] | None = None,
        render_config: ConfigRenderer | None = None,
        more_clusters: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        self.render_config = render_config
        self.more_clusters = {k: list(v) for k, v in (more_clusters or {}).items()}
        self.tls_ca = tls_ca
        self.sasl = sasl
        self.workdir = workdir
        self.servers = list(servers)
        self.cluster = cluster
        self.port = port or free_port()
        self.binary = binary
        self.refresh_s = refresh_s
        self.config_dir = workdir / "burrow-config"
        self.log_path = workdir / "burrow.log"
        self.daemon: Daemon | None = None
        self._log_offset = 0  # where this start's output begins in log_path
        # Stop the process even if the owner forgets stop(); holds the daemon, not self.
        self._holder: list[Daemon] = []
        self._finalizer = weakref.finalize(self, _stop, self._holder)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def clusters(self) -> list[str]:
        """Every Kafka cluster this Burrow reads, :attr:`cluster` first."""
        return [self.cluster, *self.more_clusters]

    @property
    def pid(self) -> int | None:
        return self.daemon.pid if self.daemon is not None else None

    @property
    def running(self) -> bool:
        return self.daemon is not None and self.daemon.running

    def start(self, timeout_s: float = 60.0) -> None:
        """Write the config, start Burrow, wait for ``/burrow/admin`` = GOOD and the cluster in
        ``/v3/kafka``; ProcessStartError with the log tail otherwise."""
        if self.running:
            return
        self.config_dir.mkdir(parents=True, exist_ok=True)
        pidfile = self.workdir / "burrow.pid"
        pidfile.unlink(missing_ok=True)  # a killed Burrow leaves it behind and blocks the next
        if self.render_config is not None:
            config = self.render_config(self.port, pidfile)
        else:
            config = burrow_config(cluster=self.cluster, servers=self.servers,
                                   http_port=self.port, pidfile=pidfile, refresh_s=self.refresh_s,
                                   tls_ca=self.tls_ca, sasl=self.sasl,
                                   more_clusters=self.more_clusters)  # fmt: skip
        (self.config_dir / "burrow.toml").write_text(config)
        binary = self.binary or burrow_binary()
        env = {k: v for k, v in os.environ.items() if not k.upper().startswith("BURROW_")}
        if self.daemon is not None:  # one that exited by itself (a panic): reap it, unregister it
            self.daemon.stop()
        self.daemon = Daemon(
            "burrow", [str(binary), "--config-dir", str(self.config_dir)], self.log_path,
            cwd=self.workdir, env=env, grace_s=3.0,
        )  # fmt: skip
        self._holder[:] = [self.daemon]
        self._log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        self.daemon.spawn()
        try:
            self.daemon.wait_ready(self.ready, timeout_s)
        except ProcessStartError:
            self.daemon.stop()
            raise

    def stop(self) -> None:
        if self.daemon is not None:
            self.daemon.stop()

    def ready(self) -> bool:
        """HTTP up, every cluster listed, and every ``kafka`` consumer module reading its
        ``__consumer_offsets`` (one "starting consumers" line each); ProcessStartError when a
        consumer module failed (Burrow itself would carry on)."""
        log_text = self._log_since_start()
        if "failed to start consumer" in log_text:
            raise ProcessStartError(f"Burrow's consumer module failed\n{self.log_tail()}")
        if log_text.count('"starting consumers"') < len(self.clusters):
            return False
        if self.get("/burrow/admin") != (200, "GOOD"):
            return False
        status, body = self.get("/v3/kafka")
        listed = (body or {}).get("clusters", []) if isinstance(body, dict) else []
        return status == 200 and set(self.clusters) <= set(listed)

    def get(self, path: str, timeout_s: float = 5.0) -> tuple[int, Any]:
        """GET ``url + path``: (HTTP status, JSON or text); (0, None) when unreachable."""
        return http_get(self.url + path, timeout_s)

    def wait_for_topic(self, topic: str, partitions: int, timeout_s: float,
                       cluster: str | None = None) -> None:
        """Until Burrow has broker offsets for every partition of ``topic`` in ``cluster``
        (default :attr:`cluster`): it drops commits for topics it does not know yet, for good
        (it reads ``__consumer_offsets`` only once).

        Burrow 1.2.1 panics when a topic's detail is asked while some of its partitions have no
        broker offset yet (``storage.fetchTopic``: "interface conversion: interface {} is nil";
        a new topic whose first ListOffsets answer was partly "not leader"). A Burrow that died
        so is restarted on the same port, where it re-reads ``__consumer_offsets`` from the
        start (no commit is lost), and the wait goes on. Any other exit is an error.
        """
        deadline = time.monotonic() + timeout_s

        def known() -> bool:
            if not self.running:
                if _NIL_BROKER_OFFSET_PANIC not in self._log_since_start():
                    raise ProcessStartError(f"Burrow exited\n{self.log_tail()}")
                log.warning("Burrow 1.2.1 panicked on %s's partial broker offsets; restarting it",
                            topic)  # fmt: skip
                self.start(max(deadline - time.monotonic(), 1.0))
            status, body = self.get(f"/v3/kafka/{name}/topic/{topic}")
            return status == 200 and len((body or {}).get("offsets") or []) >= partitions

        name = cluster or self.cluster
        wait_until(known, timeout_s,
                   f"Burrow to list {topic} with {partitions} partitions in {name}", 0.25)

    def _log_since_start(self) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self._log_offset)
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 40) -> str:
        return log_tail("burrow", self.log_path, lines)

    def environ_of_running(self) -> dict[str, str]:
        """The live process's environment, from /proc (to prove no BURROW_* leaked in)."""
        if self.pid is None:
            return {}
        raw = Path(f"/proc/{self.pid}/environ").read_bytes()
        pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
        return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}


def _stop(daemons: list[Daemon]) -> None:
    for daemon in daemons:
        daemon.stop()


def http_get(url: str, timeout_s: float = 5.0) -> tuple[int, Any]:
    """GET ``url``: (HTTP status, JSON or text); (0, None) when unreachable."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            return resp.status, _parse(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, _parse(err.read())
    except (OSError, ValueError):
        return 0, None


def _parse(raw: bytes) -> Any:
    text = raw.decode(errors="replace").strip()
    try:
        return json.loads(text)
    except ValueError:
        return text

