"""A Spark standalone cluster on loopback from the `pyspark` pip package: a master and N workers.

The wheel ships `bin/spark-class` but not always `sbin/start-*.sh`, so the daemons are started
directly (`spark-class org.apache.spark.deploy.master.Master` / `...worker.Worker`), each in its
own process group, and stopped as groups (a worker's executors are its children). For the test
suite, the benchmarks and trying `--master spark://...` on one machine:

    with LoopbackCluster(workers=2, cores=1) as cluster:
        subprocess.run([spark_submit(), "--master", cluster.url, app, "report", ...])
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

__all__ = ["LoopbackCluster", "spark_home", "spark_submit"]

log = logging.getLogger(__name__)

#: Small, quick-starting daemons: they only schedule; the executors do the work.
_DAEMON_JAVA_OPTS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def spark_submit() -> str:
    return str(spark_home() / "bin" / "spark-submit")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LoopbackCluster:
    """`workers` workers of `cores` cores and `memory` each, bound to 127.0.0.1."""

    def __init__(self, workers: int = 2, cores: int = 1, memory: str = "2g",
                 workdir: str | None = None, start_timeout_s: float = 120.0) -> None:
        self.workers, self.cores, self.memory = workers, cores, memory
        self._own_dir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="ft-spark-standalone-"))
        self.start_timeout_s = start_timeout_s
        self.port, self.ui_port = _free_port(), _free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.processes: list[subprocess.Popen[bytes]] = []

    def env(self) -> dict[str, str]:
        return {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_LOCAL_IP": "127.0.0.1",
                "SPARK_LOG_DIR": str(self.workdir / "logs"), "SPARK_DAEMON_MEMORY": "256m",
                "SPARK_DAEMON_JAVA_OPTS": _DAEMON_JAVA_OPTS, "PYSPARK_PYTHON": sys.executable}

    def _spawn(self, name: str, args: list[str]) -> None:
        out = open(self.workdir / f"{name}.log", "wb")  # noqa: SIM115 - the daemon keeps it
        try:
            process = subprocess.Popen(
                [str(spark_home() / "bin" / "spark-class"), *args], env=self.env(),
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)  # its own process group: stopped as one
        finally:
            out.close()
        self.processes.append(process)

    def start(self) -> LoopbackCluster:
        try:
            self._spawn("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                   "--port", str(self.port), "--webui-port", str(self.ui_port)])
            self._wait(lambda s: s is not None, "the master")
            for i in range(self.workers):
                self.add_worker(wait=False, index=i)
            self._wait(lambda s: s is not None and s.get("aliveworkers", 0) >= self.workers,
                       f"{self.workers} workers")
        except BaseException:
            self.stop()
            raise
        return self

    def add_worker(self, *, wait: bool = True, index: int | None = None) -> None:
        i = len(self.processes) - 1 if index is None else index
        work = self.workdir / f"worker-{i}"
        work.mkdir(parents=True, exist_ok=True)
        self._spawn(f"worker-{i}", [
            "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--cores",
            str(self.cores), "--memory", self.memory, "--webui-port", "0", "--work-dir",
            str(work), self.url])
        if wait:
            want = len(self.processes) - 1
            self._wait(lambda s: s is not None and s.get("aliveworkers", 0) >= want,
                       f"{want} workers")

    def state(self) -> Mapping[str, object] | None:
        """The master's JSON status, or None while it does not answer."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/",
                                        timeout=5) as response:
                state: Mapping[str, object] = json.load(response)
                return state
        except (OSError, ValueError):
            return None

    def _wait(self, ready: object, what: str) -> None:
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            for p in self.processes:
                if p.poll() is not None:
                    raise RuntimeError(f"a Spark daemon exited with {p.returncode} while "
                                       f"waiting for {what}: {self.log_tail()}")
            if ready(self.state()):  # type: ignore[operator]
                return
            time.sleep(0.5)
        raise TimeoutError(f"Spark standalone: no {what} within {self.start_timeout_s:g} s: "
                           f"{self.log_tail()}")

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(f"--- {path.name}\n"
                         + "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
                         for path in sorted(self.workdir.glob("*.log")))

    def stop(self) -> None:
        """Every daemon's process group (executors included): TERM, then KILL after 10 s."""
        for p in reversed(self.processes):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
        for p in reversed(self.processes):
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=10)
            # executors and their Python workers share the group; whatever is left goes too
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
        self.processes.clear()

    def __enter__(self) -> LoopbackCluster:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
        if self._own_dir:
            import shutil

            shutil.rmtree(self.workdir, ignore_errors=True)
