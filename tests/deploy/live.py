"""A real Prometheus (the Debian binary), for the integration tests: devstack's runner with the
tests' conventions (skip locally / fail in CI when it is missing; one job, 1 s everything)."""

from __future__ import annotations

from pathlib import Path

from devstack.prometheus import PrometheusProcess, ScrapeJob
from tests.deploy.tools import require_tool

JOB = "freshness-tracker"  # the job name the rules select (the chart's default Service name)


class Prometheus(PrometheusProcess):
    """`prometheus` on a free loopback port, temp storage, scraping `targets` every second and
    evaluating `rule_files` every second. Stopped (its own process only) by :meth:`stop`."""

    def __init__(self, workdir: Path, targets: list[str], rule_files: list[Path] | None = None,
                 job: str = JOB) -> None:
        super().__init__(workdir, [ScrapeJob(job, tuple(targets))], rule_files or [],
                         scrape_interval_s=1.0, evaluation_interval_s=1.0,
                         binary=require_tool("prometheus"))

    def start(self, timeout_s: float = 60.0) -> Prometheus:
        super().start(timeout_s)
        return self

    def __enter__(self) -> Prometheus:
        return self.start()
