"""A real Prometheus process (Debian's ``/usr/bin/prometheus``) on a loopback port.

The integration tests and the comparison benchmark both need the query-time rules evaluated by
Prometheus itself rather than re-implemented, so the figure is what a dashboard shows. This
runs one: its own config, rule files and data directory under a work directory, listening on
127.0.0.1 only, stopped (its own process only) by :meth:`PrometheusProcess.stop`.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from devstack.processes import free_port

__all__ = ["PrometheusAPIError", "PrometheusProcess", "ScrapeJob", "prometheus_binary",
           "prometheus_version"]


class PrometheusAPIError(AssertionError):
    """An HTTP API call that did not succeed. An AssertionError so that a test reading the API
    fails as an assertion (and :meth:`PrometheusProcess.wait` retries it)."""


@dataclass(frozen=True)
class ScrapeJob:
    """One scrape job: its name, ``host:port`` targets and, if not the global one, its own
    interval in seconds (the scrape timeout is the interval, capped at 10 s)."""

    name: str
    targets: tuple[str, ...]
    interval_s: float | None = None

    def config(self) -> dict[str, Any]:
        job: dict[str, Any] = {"job_name": self.name,
                               "static_configs": [{"targets": list(self.targets)}]}
        if self.interval_s is not None:
            job["scrape_interval"] = _duration(self.interval_s)
            job["scrape_timeout"] = _duration(min(self.interval_s, 10.0))
        return job


def _duration(seconds: float) -> str:
    """A Prometheus duration: whole milliseconds ("1500ms", "2s")."""
    ms = round(seconds * 1000)
    return f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"


def prometheus_binary() -> str | None:
    """Debian's Prometheus (``prometheus`` on PATH), or None."""
    return shutil.which("prometheus")


def prometheus_version(binary: str) -> str:
    """``prometheus --version``'s version word (e.g. ``2.42.0+ds``)."""
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30,
                         check=False)
    first = (out.stdout or out.stderr).splitlines()[0] if (out.stdout or out.stderr) else ""
    parts = first.split()
    return parts[2] if len(parts) > 2 and parts[1] == "version" else first.strip()


class PrometheusProcess:
    """``prometheus`` scraping ``jobs`` every ``scrape_interval_s`` (a job may set its own) and
    evaluating ``rule_files`` every ``evaluation_interval_s``; storage under ``workdir/data``."""

    def __init__(self, workdir: Path, jobs: Sequence[ScrapeJob],
                 rule_files: Sequence[Path] = (), *, scrape_interval_s: float = 1.0,
                 evaluation_interval_s: float = 1.0, binary: str | None = None) -> None:
        found = binary or prometheus_binary()
        if found is None:
            raise FileNotFoundError("prometheus is not installed (Debian: apt-get install "
                                    "prometheus)")
        self.binary = found
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = {
            "global": {"scrape_interval": _duration(scrape_interval_s),
                       "scrape_timeout": _duration(min(scrape_interval_s, 10.0)),
                       "evaluation_interval": _duration(evaluation_interval_s)},
            "rule_files": [str(p) for p in rule_files],
            "scrape_configs": [job.config() for job in jobs],
        }
        self.config = workdir / "prometheus.yml"
        self.config.write_text(yaml.safe_dump(config))
        self.log = workdir / "prometheus.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 60.0) -> PrometheusProcess:
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [self.binary, f"--config.file={self.config}",
                 f"--storage.tsdb.path={self.workdir / 'data'}",
                 f"--web.listen-address=127.0.0.1:{self.port}",
                 "--storage.tsdb.retention.time=1d", "--log.level=warn"],
                stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir)
        self.wait(lambda: self._get("/-/ready")[0] == 200, timeout_s, "Prometheus ready")
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def __enter__(self) -> PrometheusProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def log_tail(self, lines: int = 30) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def _get(self, path: str) -> tuple[int, Any]:
        try:
            with urllib.request.urlopen(self.url + path, timeout=30) as resp:
                body = resp.read()
                status = resp.status
        except urllib.error.HTTPError as err:
            body, status = err.read(), err.code
        except OSError:
            return 0, None
        try:
            return status, json.loads(body)
        except ValueError:
            return status, body.decode(errors="replace")

    def api(self, path: str, **params: str) -> Any:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        status, body = self._get(f"/api/v1/{path}{query}")
        if not (status == 200 and isinstance(body, dict) and body.get("status") == "success"):
            raise PrometheusAPIError(
                f"GET /api/v1/{path} {params}: HTTP {status} {body}\n{self.log_tail()}")
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """Instant query; the vector (or a scalar as one labelless sample)."""
        data = self.api("query", query=expr)
        if data["resultType"] == "vector":
            return list(data["result"])
        if data["resultType"] == "scalar":
            return [{"metric": {}, "value": data["result"]}]
        raise PrometheusAPIError(f"{expr}: unexpected result type {data['resultType']}")

    def query_range(self, expr: str, start_s: float, end_s: float,
                    step_s: float) -> list[dict[str, Any]]:
        """A range query: one matrix entry per series, ``values`` as [unix s, "value"] pairs.
        Split into chunks under Prometheus' 11,000 points per series."""
        out: dict[str, dict[str, Any]] = {}
        chunk = step_s * 10_000
        at = start_s
        while at <= end_s:
            stop = min(at + chunk, end_s)
            data = self.api("query_range", query=expr, start=f"{at:.3f}", end=f"{stop:.3f}",
                            step=f"{step_s:g}")
            for series in data["result"]:
                key = json.dumps(series["metric"], sort_keys=True)
                entry = out.setdefault(key, {"metric": series["metric"], "values": []})
                entry["values"] += [v for v in series["values"]
                                    if not entry["values"] or v[0] > entry["values"][-1][0]]
            at = stop + step_s
        return list(out.values())

    def wait(self, check: Callable[[], bool], timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with contextlib.suppress(AssertionError):
                if check():
                    return
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"prometheus exited: {self.log_tail()}")
            time.sleep(0.25)
        raise TimeoutError(f"waited {timeout_s} s for {what}\n{self.log_tail()}")
