"""A real Prometheus (the Debian binary), for the integration tests."""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from tests.deploy.tools import free_port, require_tool

JOB = "freshness-tracker"  # the job name the rules select (the chart's default Service name)


class Prometheus:
    """`prometheus` on a free loopback port, temp storage, scraping `targets` every second and
    evaluating `rule_files` every second. Stopped (its own process only) by :meth:`stop`."""

    def __init__(self, workdir: Path, targets: list[str], rule_files: list[Path] | None = None,
                 job: str = JOB) -> None:
        self.binary = require_tool("prometheus")
        self.workdir = workdir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = {
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s",
                       "evaluation_interval": "1s"},
            "rule_files": [str(p) for p in rule_files or []],
            "scrape_configs": [{"job_name": job, "static_configs": [{"targets": targets}]}],
        }
        self.config = workdir / "prometheus.yml"
        self.config.write_text(yaml.safe_dump(config))
        self.log = workdir / "prometheus.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 60.0) -> Prometheus:
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [self.binary, f"--config.file={self.config}",
                 f"--storage.tsdb.path={self.workdir / 'data'}",
                 f"--web.listen-address=127.0.0.1:{self.port}",
                 "--storage.tsdb.retention.time=1h", "--log.level=warn"],
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

    def __enter__(self) -> Prometheus:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def log_tail(self, lines: int = 30) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def _get(self, path: str) -> tuple[int, Any]:
        try:
            with urllib.request.urlopen(self.url + path, timeout=10) as resp:
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
        assert status == 200 and isinstance(body, dict) and body.get("status") == "success", \
            f"GET /api/v1/{path} {params}: HTTP {status} {body}\n{self.log_tail()}"
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """Instant query; the vector (or a scalar as one labelless sample)."""
        data = self.api("query", query=expr)
        if data["resultType"] == "vector":
            return list(data["result"])
        if data["resultType"] == "scalar":
            return [{"metric": {}, "value": data["result"]}]
        raise AssertionError(f"{expr}: unexpected result type {data['resultType']}")

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
