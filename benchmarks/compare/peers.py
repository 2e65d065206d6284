"""The tools under comparison as local processes: ours, klag-exporter (two modes, at the run's
poll interval and at its own 30 s default), kafka_exporter, kminion and the Consumer Freshness
Tracker (CFT).

Peers are never built here and never a dependency of the package or of CI: each binary is
looked up under ``$FT_PEERS_DIR`` (default ``~/.cache/freshness-tracker/peers``), where a local
build put it (``<name>/bin/...``; the CFT's ``cft/run`` wrapper and ``cft/lib``), and each build
leaves ``<name>/VERSION`` (``<name> <version> <source commit> <toolchain>``) so a record names
what ran. A peer whose binary is missing is reported as "not run" with the reason (the build's
own ``<name>/REFUSED`` note when it left one) and the rest goes on.

:class:`Tool` gives one interface over all of them: start, ready, ``/metrics`` text, and the CPU
seconds and peak RSS of the process and its children from ``/proc`` (a wrapper script that
does not ``exec`` is counted with the JVM it starts). Every tool binds 127.0.0.1; upstream's
CFT cannot (``new HTTPServer(port)``), so the local build reads a ``host`` key for it (the one
change to its source: binding, not measuring).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

import requests

from benchmarks.accuracy.sampler import ExporterProcess
from devstack.exporter import ExporterProcess as SupportExporterProcess
from devstack.exporter_config import cluster_entry, exporter_config
from devstack.processes import free_port

__all__ = [
    "CFT_MAIN_CLASS",
    "KAFKA_EXPORTER_VERSION",
    "KLAG_DEFAULT_POLL_S",
    "KLAG_VERSION",
    "KMINION_VERSION",
    "PEERS_DIR",
    "SPECS",
    "Tool",
    "ToolSpec",
    "cft_bin",
    "cft_config",
    "kafka_exporter_bin",
    "klag_bin",
    "klag_config",
    "kminion_bin",
    "kminion_config",
    "make_tool",
    "missing_reason",
    "peer_version",
    "peer_version_line",
    "proc_cpu_s",
    "proc_peak_rss_mib",
    "tree_cpu_s",
    "tree_peak_rss_mib",
]

PEERS_DIR = Path(
    os.environ.get("FT_PEERS_DIR", Path.home() / ".cache" / "freshness-tracker" / "peers")
)

#: the CFT's entry point (its BUILD file's java_binary main_class)
CFT_MAIN_CLASS = "com.tesla.data.consumer.freshness.ConsumerFreshness"
#: klag-exporter's own poll interval when its config names none
KLAG_DEFAULT_POLL_S = 30.0

_CLK_TCK = os.sysconf("SC_CLK_TCK")


def peer_version_line(name: str) -> str | None:
    """``$PEERS/<name>/VERSION``'s line as the build wrote it (None: no such file)."""
    try:
        lines = (PEERS_DIR / name / "VERSION").read_text().strip().splitlines()
    except OSError:
        return None
    return lines[0].strip() if lines and lines[0].strip() else None


def peer_version(name: str, fallback: str = "unknown") -> str:
    """The version field of ``$PEERS/<name>/VERSION`` (its second word), else ``fallback``."""
    line = peer_version_line(name)
    words = line.split() if line else []
    return words[1] if len(words) > 1 else fallback


#: what each build put under $PEERS, read when this module is imported (make_tool reads again)
KLAG_VERSION = peer_version("klag")
KAFKA_EXPORTER_VERSION = peer_version("kafka_exporter", "1.9.0")
KMINION_VERSION = peer_version("kminion", "2.3.5")


def _executable(env: str, default: Path) -> Path:
    return Path(os.environ.get(env) or default)


def _found(path: Path) -> Path | None:
    return path if path.is_file() and os.access(path, os.X_OK) else None


def _klag_path() -> Path:
    return _executable("FT_KLAG_BIN", PEERS_DIR / "klag" / "bin" / "klag-exporter")


def _kafka_exporter_path() -> Path:
    return _executable(
        "FT_KAFKA_EXPORTER_BIN", PEERS_DIR / "kafka_exporter" / "bin" / "kafka_exporter"
    )


def _kminion_path() -> Path:
    return _executable("FT_KMINION_BIN", PEERS_DIR / "kminion" / "bin" / "kminion")


def _cft_path() -> Path:
    return _executable("FT_CFT_RUN", PEERS_DIR / "cft" / "run")


def klag_bin() -> Path | None:
    return _found(_klag_path())


def kafka_exporter_bin() -> Path | None:
    return _found(_kafka_exporter_path())


def kminion_bin() -> Path | None:
    return _found(_kminion_path())


def cft_bin() -> Path | None:
    """The CFT's ``run`` wrapper (``java -cp "$PEERS/cft/lib/*" <main class> "$@"``)."""
    return _found(_cft_path())


def klag_config(
    bootstrap: str,
    port: int,
    mode: str,
    poll_s: float,
    group_regex: str,
    topic_regex: str,
    cluster: str = "local",
) -> str:
    """klag-exporter's TOML: its defaults except the poll interval, per-partition series (what
    ours exports) and the sampling mode; 127.0.0.1 only."""
    if mode not in ("message", "rate"):
        raise ValueError(f"klag mode must be message or rate, not {mode!r}")
    return (
        "[exporter]\n"
        f'poll_interval = "{poll_s:g}s"\n'
        f"http_port = {port}\n"
        'http_host = "127.0.0.1"\n'
        'granularity = "partition"\n'
        "\n[exporter.timestamp_sampling]\n"
        "enabled = true\n"
        f'mode = "{mode}"\n'
        "\n[exporter.otel]\nenabled = false\n"
        "\n[[clusters]]\n"
        f'name = "{cluster}"\n'
        f'bootstrap_servers = "{bootstrap}"\n'
        f"group_whitelist = [{json.dumps(group_regex)}]\n"
        "group_blacklist = []\n"
        f"topic_whitelist = [{json.dumps(topic_regex)}]\n"
        'topic_blacklist = ["^__.*"]\n'
    )


def kminion_config(bootstrap: str, port: int, group_regex: str, topic_regex: str) -> str:
    """kminion's YAML (as JSON, which YAML reads; it refuses unknown keys): consumer-group
    offsets through the admin API per partition, filtered to the run's groups; its topic and
    log-dir collectors off (they export no lag, and would add requests the others do not
    make), the end-to-end probe off (its default); 127.0.0.1 only.

    kminion has no refresh interval of its own: it asks Kafka on every scrape of ``/metrics``,
    so the :class:`Tool` scrapes it at most once per poll interval. Its regexes are anchored
    unless written ``/.../``; ours are searched, so they are passed as ``/regex/``."""
    conf = {
        "logger": {"level": "warn"},
        "kafka": {"brokers": bootstrap.split(","), "clientId": "kminion"},
        "minion": {
            "consumerGroups": {
                "enabled": True,
                "scrapeMode": "adminApi",
                "granularity": "partition",
                "allowedGroups": [f"/{group_regex}/"],
                "ignoredGroups": [],
            },
            "topics": {
                "enabled": False,
                "granularity": "partition",
                "allowedTopics": [f"/{topic_regex}/"],
                "ignoredTopics": [],
            },
            "logDirs": {"enabled": False},
            "endToEnd": {"enabled": False},
        },
        "exporter": {"namespace": "kminion", "host": "127.0.0.1", "port": port},
    }
    return json.dumps(conf, indent=2) + "\n"


def cft_config(burrow_url: str, bootstrap: str, cluster: str, port: int, poll_s: float) -> str:
    """The CFT's YAML (as JSON): Burrow's URL, one cluster (Burrow's name for it) with its
    bootstrap servers, 127.0.0.1 and the port (``host`` is the local build's key), and
    ``frequency_sec`` (an integer: it casts the value to int, and sleeps that long after each
    run). Its worker threads and consumers per cluster stay at its defaults. It measures every
    group Burrow lists for the cluster (it has no filter), its own consumers' group included."""
    conf = {
        "burrow": {"url": burrow_url},
        "host": "127.0.0.1",
        "port": port,
        "frequency_sec": max(1, round(poll_s)),
        "clusters": [{"name": cluster, "kafka": {"bootstrap.servers": bootstrap}}],
    }
    return json.dumps(conf, indent=2) + "\n"


def proc_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a live process (and its reaped children)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    # after the command: state is fields[0]; utime, stime, cutime, cstime are fields 11..14
    return sum(int(v) for v in fields[11:15]) / _CLK_TCK


def proc_peak_rss_mib(pid: int) -> float:
    """VmHWM: the process's peak resident set, MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for pid {pid}")


def _tree(pid: int) -> list[int]:
    """``pid`` and its live descendants (from every thread's ``children`` list)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            tasks = list(Path(f"/proc/{p}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            try:
                todo.extend(int(c) for c in (task / "children").read_text().split())
            except (OSError, ValueError):
                continue
    return out


def _tree_sum(pid: int, figure: Callable[[int], float]) -> float:
    """``figure`` summed over ``pid`` and its live descendants. A process that exited between
    the listing and the read, or has no figure left (a zombie has no VmHWM), adds nothing."""
    total = 0.0
    for p in _tree(pid):
        try:
            total += figure(p)
        except (OSError, RuntimeError):
            continue
    return total


def tree_cpu_s(pid: int) -> float:
    """CPU seconds of ``pid`` and its live descendants (reaped ones are in its own figure)."""
    return _tree_sum(pid, proc_cpu_s)


def tree_peak_rss_mib(pid: int) -> float:
    """Sum of the peak resident sets of ``pid`` and its live descendants, MiB."""
    return _tree_sum(pid, proc_peak_rss_mib)


@dataclass(frozen=True)
class ToolSpec:
    """One column of the comparison."""

    key: str  # "ours", "klag_message", "klag_rate", "kafka_exporter", "kminion", "cft", ...
    title: str
    metrics: str  # key into exposition.TOOLS
    version: str
    collects_on_scrape: bool = False
    peer: str | None = None  # its folder under $PEERS (None: this tree)
    #: the poll interval it runs at whatever the run's is (klag's own default); None: the run's
    fixed_poll_s: float | None = None
    #: scraped at most once per poll interval (a tool that asks Kafka on every scrape), as a
    #: Prometheus with that scrape interval would
    scrape_every_poll: bool = False


def _klag_spec(mode: str, at_default: bool) -> ToolSpec:
    key = f"klag_{mode}" + ("_30s" if at_default else "")
    title = f'klag-exporter, mode "{mode}"' + (
        f", every {KLAG_DEFAULT_POLL_S:g} s (its default)" if at_default else ""
    )
    poll = KLAG_DEFAULT_POLL_S if at_default else None
    return ToolSpec(key, title, "klag", KLAG_VERSION, peer="klag", fixed_poll_s=poll)


SPECS = {
    "ours": ToolSpec("ours", "freshness-tracker", "ours", "this tree"),
    # ours with librdkafka's statistics on, as before they became opt-in: what they cost
    "ours_stats": ToolSpec(
        "ours_stats", "freshness-tracker, statistics.interval.ms = 10000", "ours", "this tree"
    ),
    "klag_message": _klag_spec("message", False),
    "klag_rate": _klag_spec("rate", False),
    "klag_message_30s": _klag_spec("message", True),
    "klag_rate_30s": _klag_spec("rate", True),
    "kafka_exporter": ToolSpec(
        "kafka_exporter",
        "kafka_exporter (offsets only)",
        "kafka_exporter",
        KAFKA_EXPORTER_VERSION,
        collects_on_scrape=True,
        peer="kafka_exporter",
    ),
    "kminion": ToolSpec(
        "kminion",
        "kminion (offsets only)",
        "kminion",
        KMINION_VERSION,
        collects_on_scrape=True,
        peer="kminion",
        scrape_every_poll=True,
    ),
    "cft": ToolSpec(
        "cft",
        "Consumer Freshness Tracker (kafka-helmsman)",
        "cft",
        peer_version("cft"),
        peer="cft",
    ),
}


def spec_for(key: str) -> ToolSpec:
    """``SPECS[key]`` with the version its build wrote now (it may have been built since this
    module was imported)."""
    spec = SPECS[key]
    if spec.peer is None:
        return spec
    return replace(spec, version=peer_version(spec.peer, spec.version))


class Tool:
    """A running tool: ``url``, ``pid``, ``metrics_text()``, ``stop()``."""

    def __init__(
        self,
        spec: ToolSpec,
        cmd: list[str] | None,
        workdir: Path,
        port: int,
        exporter: SupportExporterProcess | None = None,
        *,
        env: dict[str, str] | None = None,
        poll_s: float | None = None,
    ) -> None:
        self.spec = spec
        self.cmd = cmd
        self.workdir = workdir
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        #: the interval it polls at (None: not known to this object)
        self.poll_s = poll_s
        self._env = env
        self._exporter = exporter
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._session = requests.Session()
        self._last_text: str | None = None
        self._last_at = 0.0
        #: real scrapes of /metrics (for a tool scraped once per poll: fewer than calls)
        self.scrapes = 0

    @property
    def version(self) -> str:
        """The version that ran: ``VERSION``'s line for a peer, "this tree" for ours."""
        if self.spec.peer is None:
            return self.spec.version
        return peer_version_line(self.spec.peer) or self.spec.version

    @property
    def pid(self) -> int:
        pid = (
            self._exporter.pid
            if self._exporter is not None
            else (self._proc.pid if self._proc is not None else None)
        )
        if pid is None:
            raise RuntimeError(f"{self.spec.key} is not running")
        return pid

    @property
    def log_path(self) -> Path:
        return self.workdir / f"{self.spec.key}.log"

    def start(self, timeout_s: float = 60.0) -> None:
        if self._exporter is not None:
            self._exporter.start(timeout_s)
            return
        assert self.cmd is not None
        self._log = self.log_path.open("wb")
        env = (
            dict(self._env)
            if self._env is not None
            else {**os.environ, "RUST_LOG": os.environ.get("FT_PEER_LOG", "warn")}
        )
        # its own process group: stop() reaches what a wrapper script started, too
        self._proc = subprocess.Popen(
            self.cmd,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=self.workdir,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(
                    f"{self.spec.key} exited with {self._proc.returncode}:\n{self.log_tail()}"
                )
            if self._ready():
                return
            time.sleep(0.2)
        raise TimeoutError(
            f"{self.spec.key} not serving /metrics in {timeout_s} s:\n{self.log_tail()}"
        )

    def _ready(self) -> bool:
        """Serving: a tool that collects on scrape only has to accept connections (at 20,000
        partitions kafka_exporter's scrape takes longer than any probe should wait, and every
        probe it abandoned would start one more collection)."""
        if self.spec.collects_on_scrape:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=2).close()
            except OSError:
                return False
            return True
        try:
            return self._session.get(self.url + "/metrics", timeout=2).status_code == 200
        except requests.RequestException:
            return False

    def metrics_text(self, timeout_s: float = 30.0) -> str:
        """``/metrics``; for a tool scraped once per poll interval, the last text until 90 %
        of the interval has passed (a scraper's jitter must not skip a poll)."""
        if (
            self.spec.scrape_every_poll
            and self.poll_s
            and self._last_text is not None
            and time.monotonic() - self._last_at < 0.9 * self.poll_s
        ):
            return self._last_text
        at = time.monotonic()
        resp = self._session.get(self.url + "/metrics", timeout=timeout_s)
        resp.raise_for_status()
        self.scrapes += 1
        self._last_text, self._last_at = resp.text, at
        return resp.text

    def cpu_s(self) -> float:
        return tree_cpu_s(self.pid)

    def peak_rss_mib(self) -> float:
        return tree_peak_rss_mib(self.pid)

    def stop(self) -> None:
        self._session.close()
        if self._exporter is not None:
            self._exporter.stop()
            return
        if self._proc is not None:
            self._signal_group(signal.SIGTERM)
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._signal_group(signal.SIGKILL)
                self._proc.wait(5)
            self._signal_group(signal.SIGKILL)  # a child that outlived the wrapper
        self._proc = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def _signal_group(self, sig: int) -> None:
        if self._proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, sig)  # the group this Popen started (its pid is the pgid)

    def log_text(self) -> str:
        """The peer's whole log ('' for ours, whose log the exporter process keeps)."""
        try:
            return "" if self._exporter is not None else self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 30) -> str:
        if self._exporter is not None:
            return self._exporter.log_tail(lines)
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def __enter__(self) -> Tool:
        return self

    def __exit__(self, *_exc: Any) -> None:
        self.stop()


_PATHS = {
    "klag": (_klag_path, "klag-exporter", "FT_KLAG_BIN"),
    "kafka_exporter": (_kafka_exporter_path, "kafka_exporter", "FT_KAFKA_EXPORTER_BIN"),
    "kminion": (_kminion_path, "kminion", "FT_KMINION_BIN"),
    "cft": (_cft_path, "the Consumer Freshness Tracker's run wrapper", "FT_CFT_RUN"),
}


def missing_reason(key: str) -> str | None:
    """Why a tool cannot run here (None: it can): what its build refused it with when it left
    ``$PEERS/<name>/REFUSED``, else which binary is not where it is looked for."""
    spec = SPECS.get(key)
    if spec is None:
        return f"unknown tool {key!r} (known: {', '.join(SPECS)})"
    if spec.peer is None:
        return None
    path_of, what, env = _PATHS[spec.peer]
    path = path_of()
    if _found(path) is not None:
        return None
    try:
        refused = (PEERS_DIR / spec.peer / "REFUSED").read_text(errors="replace").strip()
    except OSError:
        refused = ""
    if refused:
        return f"{what} was not built: {' '.join(refused.split())[:500]}"
    return f"{what} binary not found at {path} (set {env} or build it there)"


#: ours_stats' librdkafka property: the statistics interval ours used before they became opt-in
STATISTICS_ON = {"statistics.interval.ms": "10000"}


def make_tool(
    key: str,
    *,
    burrow_url: str,
    bootstrap: str,
    cluster: str,
    workdir: Path,
    poll_s: float,
    group_regex: str,
    topic_regex: str,
) -> Tool:
    """A :class:`Tool` for ``key`` (see :data:`SPECS`), not started."""
    spec = spec_for(key)
    poll = spec.fixed_poll_s or poll_s
    workdir = workdir.resolve()  # the peer runs with workdir as its cwd
    workdir.mkdir(parents=True, exist_ok=True)
    if key.startswith("ours"):
        exporter: SupportExporterProcess
        if key != "ours_stats":
            exporter = ExporterProcess(
                burrow_url, bootstrap, cluster, workdir, poll_s, group_allow=group_regex
            )
        else:
            exporter = SupportExporterProcess(
                workdir,
                exporter_config(
                    burrow_url=burrow_url,
                    clusters=[cluster_entry(cluster, bootstrap, None, **STATISTICS_ON)],
                    groups_allow=group_regex,
                    frequency=poll_s,
                    port="@PORT@",
                    listen_address="127.0.0.1",
                ),
            )
        return Tool(spec, None, workdir, exporter.port, exporter, poll_s=poll)
    reason = missing_reason(key)
    if reason is not None:
        raise FileNotFoundError(f"{key}: {reason}")
    port = free_port()
    if spec.peer == "klag":
        config = workdir / f"{key}.toml"
        mode = key.removeprefix("klag_").removesuffix("_30s")
        config.write_text(
            klag_config(bootstrap, port, mode, poll, group_regex, topic_regex, cluster)
        )
        cmd = [str(_klag_path()), "--config", str(config), "--log-level", "warn"]
        return Tool(spec, cmd, workdir, port, poll_s=poll)
    if key == "kafka_exporter":
        servers = [f"--kafka.server={s}" for s in bootstrap.split(",")]
        cmd = [
            str(_kafka_exporter_path()),
            *servers,
            f"--web.listen-address=127.0.0.1:{port}",
            "--kafka.version=3.6.0",
            f"--group.filter={group_regex}",
            f"--topic.filter={topic_regex}",
            "--log.level=warn",
        ]
        return Tool(spec, cmd, workdir, port, poll_s=poll)
    if key == "kminion":
        config = workdir / "kminion.yaml"
        config.write_text(kminion_config(bootstrap, port, group_regex, topic_regex))
        # every variable of its environment is read as a config key: give it only these
        env = {"CONFIG_FILEPATH": str(config), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        return Tool(spec, [str(_kminion_path())], workdir, port, env=env, poll_s=poll)
    if key == "cft":
        config = workdir / "cft.yaml"
        config.write_text(cft_config(burrow_url, bootstrap, cluster, port, poll))
        cmd = [str(_cft_path()), "--conf", str(config)]
        return Tool(spec, cmd, workdir, port, poll_s=float(max(1, round(poll))))
    raise KeyError(key)
