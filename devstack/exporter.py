"""The exporter under test, three ways: in this process (:func:`exporter`, one cycle at a time),
in this process with its listener (:func:`running_exporter`), and as a real
``python -m freshness_tracker`` process (:class:`ExporterProcess`, :func:`run_cli`)."""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from devstack import RealStack
from devstack.exporter_config import stack_config
from devstack.logfmt import log_messages
from devstack.processes import free_port, poll
from devstack.scrape import Scrape, scrape_until
from freshness_tracker import metrics
from freshness_tracker.app import Exporter
from freshness_tracker.config import load_settings
from freshness_tracker.config.settings import Settings
from freshness_tracker.http import MetricsServer, make_app

REPO = Path(__file__).resolve().parents[1]


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment without our FRESHNESS_TRACKER_* and Burrow's BURROW_*
    variables (a stray override must not reach the exporter), plus ``extra``."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("FRESHNESS_TRACKER_", "BURROW_"))}  # fmt: skip
    env.update(extra or {})
    return env


def cli(*args: str) -> list[str]:
    """The command line ``python -m freshness_tracker ARGS``."""
    return [sys.executable, "-m", "freshness_tracker", *args]


def run_cli(*args: str, timeout_s: float = 30, env: Mapping[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """``python -m freshness_tracker ARGS`` to completion, output captured (TimeoutExpired
    past ``timeout_s``)."""
    return subprocess.run(cli(*args), capture_output=True, text=True, timeout=timeout_s,
                          cwd=REPO, env=clean_env(env))


def run_all(commands: Sequence[Sequence[str]], timeout_s: float = 90
            ) -> list[subprocess.CompletedProcess[str]]:  # fmt: skip
    """``python -m freshness_tracker ARGS`` for each ARGS, concurrently (the machine is small;
    imports dominate); the test fails if one does not finish in ``timeout_s``."""
    procs = [subprocess.Popen(cli(*c), cwd=REPO, env=clean_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for c in commands]  # fmt: skip
    results = []
    for args, proc in zip(commands, procs, strict=True):
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            raise AssertionError(
                f"{args} did not finish in {timeout_s} s; stderr:\n{err}") from None
        results.append(subprocess.CompletedProcess(cli(*args), proc.returncode, out, err))
    return results


@contextlib.contextmanager
def exporter(stack: RealStack, groups_allow: str, extra: str = "", **kw: Any
             ) -> Iterator[Exporter]:  # fmt: skip
    """An Exporter in this process for :func:`~devstack.exporter_config.stack_config` (``kw`` as
    there), closed afterwards."""
    exp = Exporter(load_settings(text=stack_config(stack, groups_allow, extra=extra, **kw)))
    try:
        yield exp
    finally:
        exp.close()


@contextlib.contextmanager
def looping(exporter: Exporter) -> Iterator[Exporter]:
    """``exporter.run_forever`` on a thread for the block; stopped and the exporter closed after."""
    stop = threading.Event()
    loop = threading.Thread(target=exporter.run_forever, args=(stop,), daemon=True,
                            name="exporter")
    loop.start()
    try:
        yield exporter
    finally:
        stop.set()
        loop.join(timeout=10)
        exporter.close()


@contextlib.contextmanager
def running_exporter(settings: Settings) -> Iterator[tuple[Exporter, int]]:
    """The exporter's `run` in this process: cluster loops + the HTTP listener; (exporter, port)."""
    exporter = Exporter(settings)
    server = MetricsServer(make_app(exporter.exposition, exporter.health, exporter.ready,
                                    settings.web, exporter.status_page), settings.web).start()
    with looping(exporter):
        try:
            yield exporter, server.port
        finally:
            server.stop()


class ExporterProcess:
    """``python3 -m freshness_tracker run --config FILE`` with its output in a log file."""

    def __init__(self, workdir: Path, config: str, *, name: str = "exporter",
                 env: Mapping[str, str] | None = None, port: int | None = None,
                 host: str = "127.0.0.1", scheme: str = "http",
                 auth: tuple[str, str] | None = None, cafile: str | None = None,
                 command: str = "run") -> None:
        self.workdir = workdir
        self.port = port or free_port()
        self.host = host
        self.scheme = scheme
        self.config_path = workdir / f"{name}.conf"
        self.config_path.write_text(config.replace("@PORT@", str(self.port)))
        self.log_path = workdir / f"{name}.log"
        self.env = clean_env({**(env or {}), "PYTHONUNBUFFERED": "1"})
        self.auth = auth
        self.command = command
        self._context: ssl.SSLContext | None = None
        if scheme == "https":
            self._context = ssl.create_default_context(cafile=cafile)
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        """The process id while it runs."""
        return self.proc.pid if self.proc is not None and self.proc.poll() is None else None

    def start(self, timeout_s: float = 30.0, *, wait: bool = True,
              ready: bool = False) -> ExporterProcess:
        """Start it; with ``wait``, until it listens; with ``ready``, until /readyz answers 200
        (a first cycle published)."""
        with open(self.log_path, "wb") as out:
            self.proc = subprocess.Popen(
                cli(self.command, "--config", str(self.config_path)),
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=REPO,
                env=self.env, start_new_session=True)
        if wait or ready:
            poll(self._listening, timeout_s, lambda: f"the exporter to listen\n{self.log_tail()}")
        if ready:
            poll(lambda: self._listening() and self.get("/readyz")[0] == 200, timeout_s,
                 lambda: f"the exporter to be ready\n{self.log_tail()}", interval_s=0.2)
        return self

    def _listening(self) -> bool:
        if self.proc is not None and self.proc.poll() is not None:
            raise RuntimeError(f"exporter exited with {self.proc.returncode}\n{self.log_tail()}")
        try:
            status, _ = self.get("/healthz", timeout_s=1.0)
        except OSError:
            return False
        return status in (200, 503)

    def get(self, path: str, *, auth: tuple[str, str] | bool | None = True,
            timeout_s: float = 5.0) -> tuple[int, str]:
        """(status, body); ``auth=True`` uses the configured credentials, None sends none."""
        request = urllib.request.Request(self.url + path)
        creds = self.auth if auth is True else (auth or None)
        if creds:
            token = base64.b64encode(f"{creds[0]}:{creds[1]}".encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        try:
            with urllib.request.urlopen(request, timeout=timeout_s,
                                        context=self._context) as resp:
                return int(resp.status), resp.read().decode()
        except urllib.error.HTTPError as err:
            return int(err.code), err.read().decode()

    def scrape(self) -> Scrape:
        began = time.monotonic()
        status, body = self.get("/metrics")
        for _ in range(3):  # paused after a failed login from this address: scrape again later
            if status != 429:
                break
            time.sleep(1.0)  # its Retry-After
            began = time.monotonic()
            status, body = self.get("/metrics")
        elapsed = time.monotonic() - began
        if status != 200:
            raise AssertionError(f"/metrics answered {status}: {body[:500]}")
        return Scrape.parse(body, elapsed)

    def wait_for(self, predicate: Callable[[Scrape], bool], timeout_s: float,
                 what: str) -> Scrape:
        """Scrape until ``predicate`` holds; the matching scrape, or TimeoutError with context."""

        def explain(last: Scrape | None) -> str:
            text = last.text if last else "(no scrape)"
            lines = [ln for ln in text.splitlines()
                     if ln.startswith(("freshness_tracker_cluster", "kafka_consumer_freshness",
                                       metrics.CYCLES.total))]
            return f"{what}\n--- last scrape ---\n" + "\n".join(lines[:40]) + \
                f"\n--- exporter log ---\n{self.log_tail()}"

        return scrape_until(self.scrape, predicate, timeout_s, explain)

    def wait_cycles(self, cluster: str, n: int, timeout_s: float) -> Scrape:
        """Wait until ``n`` more cycles of ``cluster`` have completed."""
        start = self.scrape().cycles(cluster)
        return self.wait_for(lambda s: s.cycles(cluster) >= start + n, timeout_s,
                             f"{n} more cycles of {cluster}")

    def signal(self, sig: int = signal.SIGTERM) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    def stop(self, timeout_s: float = 10.0) -> tuple[int | None, float]:
        """SIGTERM, wait; (exit code, seconds it took). SIGKILL if it overstays (code None)."""
        if self.proc is None:
            return None, 0.0
        if self.proc.poll() is not None:
            return self.proc.returncode, 0.0
        began = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            code: int | None = self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
            code = None
        return code, time.monotonic() - began

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def messages(self) -> list[str]:
        """The `msg` of every log line, unescaped (logfmt escapes quotes and backslashes)."""
        return log_messages(self.log())

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log().splitlines()[-lines:])

    def __enter__(self) -> ExporterProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
