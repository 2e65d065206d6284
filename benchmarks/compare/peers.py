"""The tools under comparison as local processes: ours, klag-exporter (two modes), kafka_exporter.

Peers are never built here and never a dependency of the package or of CI: their binaries come
from ``FT_KLAG_BIN`` / ``FT_KAFKA_EXPORTER_BIN``, else from what
``benchmarks/compare/build_peers.sh`` put under ``~/.cache/freshness-tracker/peers``. A peer
whose binary is missing is reported as "not run" with the reason, and the rest goes on.

Every tool binds 127.0.0.1 only. :class:`Tool` gives one interface over all of them: start,
ready, ``/metrics`` text, and the process's CPU seconds and peak RSS from ``/proc``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import requests

from benchmarks.accuracy.sampler import ExporterProcess
from devstack.processes import free_port
from tests.support.config import cluster_entry, exporter_config
from tests.support.exporter import ExporterProcess as SupportExporterProcess

__all__ = [
    "KAFKA_EXPORTER_VERSION",
    "KLAG_VERSION",
    "PEERS_DIR",
    "Tool",
    "ToolSpec",
    "kafka_exporter_bin",
    "klag_bin",
    "klag_config",
    "make_tool",
    "proc_cpu_s",
    "proc_peak_rss_mib",
]

KLAG_VERSION = "0.1.22"
KAFKA_EXPORTER_VERSION = "1.9.0"
KMINION_VERSION = "2.3.5"
PEERS_DIR = Path(
    os.environ.get("FT_PEERS_DIR", Path.home() / ".cache" / "freshness-tracker" / "peers")
)

_CLK_TCK = os.sysconf("SC_CLK_TCK")


def klag_bin() -> Path | None:
    path = Path(os.environ.get("FT_KLAG_BIN") or PEERS_DIR / "klag" / "bin" / "klag-exporter")
    return path if path.is_file() and os.access(path, os.X_OK) else None


def kafka_exporter_bin() -> Path | None:
    path = Path(
        os.environ.get("FT_KAFKA_EXPORTER_BIN")
        or PEERS_DIR / "kafka_exporter" / "bin" / "kafka_exporter"
    )
    return path if path.is_file() and os.access(path, os.X_OK) else None


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


@dataclass(frozen=True)
class ToolSpec:
    """One column of the comparison."""

    key: str  # "ours", "klag_message", "klag_rate", "kafka_exporter"
    title: str
    metrics: str  # key into exposition.TOOLS
    version: str
    collects_on_scrape: bool = False


SPECS = {
    "ours": ToolSpec("ours", "freshness-tracker", "ours", "this tree"),
    # ours with librdkafka's statistics on, as before they became opt-in: what they cost
    "ours_stats": ToolSpec(
        "ours_stats", "freshness-tracker, statistics.interval.ms = 10000", "ours", "this tree"
    ),
    "klag_message": ToolSpec("klag_message", 'klag-exporter, mode "message"', "klag", KLAG_VERSION),
    "klag_rate": ToolSpec("klag_rate", 'klag-exporter, mode "rate"', "klag", KLAG_VERSION),
    "kafka_exporter": ToolSpec(
        "kafka_exporter",
        "kafka_exporter (offsets only)",
        "kafka_exporter",
        KAFKA_EXPORTER_VERSION,
        collects_on_scrape=True,
    ),
}


class Tool:
    """A running tool: ``url``, ``pid``, ``metrics_text()``, ``stop()``."""

    def __init__(
        self,
        spec: ToolSpec,
        cmd: list[str] | None,
        workdir: Path,
        port: int,
        exporter: SupportExporterProcess | None = None,
    ) -> None:
        self.spec = spec
        self.cmd = cmd
        self.workdir = workdir
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self._exporter = exporter
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._session = requests.Session()

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
        env = {**os.environ, "RUST_LOG": os.environ.get("FT_PEER_LOG", "warn")}
        self._proc = subprocess.Popen(
            self.cmd, stdout=self._log, stderr=subprocess.STDOUT, env=env, cwd=self.workdir
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
        resp = self._session.get(self.url + "/metrics", timeout=timeout_s)
        resp.raise_for_status()
        return resp.text

    def cpu_s(self) -> float:
        return proc_cpu_s(self.pid)

    def peak_rss_mib(self) -> float:
        return proc_peak_rss_mib(self.pid)

    def stop(self) -> None:
        self._session.close()
        if self._exporter is not None:
            self._exporter.stop()
            return
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(5)
        self._proc = None
        if self._log is not None:
            self._log.close()
            self._log = None

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


def missing_reason(key: str) -> str | None:
    """Why a tool cannot run here (None: it can)."""
    if key.startswith("klag") and klag_bin() is None:
        return (
            f"klag-exporter {KLAG_VERSION} binary not found (FT_KLAG_BIN or "
            f"{PEERS_DIR}/klag/bin; benchmarks/compare/build_peers.sh builds it)"
        )
    if key == "kafka_exporter" and kafka_exporter_bin() is None:
        return (
            f"kafka_exporter {KAFKA_EXPORTER_VERSION} binary not found "
            f"(FT_KAFKA_EXPORTER_BIN or {PEERS_DIR}/kafka_exporter/bin)"
        )
    return None


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
    spec = SPECS[key]
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
        return Tool(spec, None, workdir, exporter.port, exporter)
    port = free_port()
    if key.startswith("klag"):
        binary = klag_bin()
        assert binary is not None, missing_reason(key)
        config = workdir / f"{key}.toml"
        config.write_text(
            klag_config(
                bootstrap,
                port,
                key.removeprefix("klag_"),
                poll_s,
                group_regex,
                topic_regex,
                cluster,
            )
        )
        return Tool(
            spec, [str(binary), "--config", str(config), "--log-level", "warn"], workdir, port
        )
    if key == "kafka_exporter":
        binary = kafka_exporter_bin()
        assert binary is not None, missing_reason(key)
        servers = [f"--kafka.server={s}" for s in bootstrap.split(",")]
        return Tool(
            spec,
            [
                str(binary),
                *servers,
                f"--web.listen-address=127.0.0.1:{port}",
                "--kafka.version=3.6.0",
                f"--group.filter={group_regex}",
                f"--topic.filter={topic_regex}",
                "--log.level=warn",
            ],
            workdir,
            port,
        )
    raise KeyError(key)
