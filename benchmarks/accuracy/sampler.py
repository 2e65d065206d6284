"""The exporter under test (a real ``freshness-tracker run`` subprocess) and the sampler.

Every ``interval`` the sampler scrapes the exporter's ``/metrics`` and, for each shape, asks Burrow
for the group's ``/lag`` (committed offset C) and the topic's offsets (LEO). Both are stamped with
the wall-clock time halfway through their request; the estimators later run on these very
samples, so all three methods see the same Burrow data at the same moments.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import requests
from prometheus_client.parser import text_string_to_metric_families

from devstack.demo import exporter_config
from devstack.processes import free_port

__all__ = ["ExporterProcess", "Sample", "Sampler"]

log = logging.getLogger(__name__)


@dataclass
class Sample:
    metrics_ms: float  # when /metrics was read
    ours_ms: float | None  # kafka_consumer_freshness_ms, None if absent
    ours_offset: int | None  # kafka_consumer_committed_offset
    ours_lag: int | None  # kafka_consumer_offset_lag
    cycle_start_ms: float | None  # freshness_tracker_cluster_last_attempt_timestamp_seconds
    cycle_s: float | None  # freshness_tracker_cluster_cycle_duration_seconds
    burrow_ms: float  # when Burrow answered
    committed: int | None  # Burrow end.offset
    current_lag: int | None  # Burrow current_lag
    leo: int | None  # Burrow's broker offset for the partition
    commit_ts_ms: float | None = None  # Burrow end.timestamp (the broker's commit time)
    ours_catch_up_s: float | None = None  # kafka_consumer_group_catch_up_estimate_seconds
    ours_catching_up: float | None = None  # kafka_consumer_group_catching_up (1/0)

    def to_json(self) -> list[Any]:
        return list(asdict(self).values())

    @classmethod
    def from_json(cls, row: list[Any]) -> Sample:
        return cls(*row)


class ExporterProcess:
    """``python -m freshness_tracker run --config ...`` against the stack; logs to a file."""

    def __init__(self, burrow_url: str, bootstrap: str, cluster: str, workdir: Path,
                 frequency_s: float, group_allow: str) -> None:  # fmt: skip
        self.port = free_port()
        self.workdir = workdir
        self.config_path = workdir / "exporter.conf"
        self.log_path = workdir / "exporter.log"
        text = exporter_config(burrow_url, bootstrap, cluster, port=self.port,
                               frequency_sec=frequency_s)  # type: ignore[arg-type]
        text += f'filters.groups.allow = ["{group_allow}"]\nlistenAddress = "127.0.0.1"\n'
        self.config_path.write_text(text)
        self.url = f"http://127.0.0.1:{self.port}"
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: Any = None

    def start(self, timeout_s: float = 60.0) -> None:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("FRESHNESS_TRACKER_", "BURROW_"))}
        self._log = self.log_path.open("wb")
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "freshness_tracker", "run", "--config", str(self.config_path)],
            stdout=self._log, stderr=subprocess.STDOUT, env=env,
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"exporter exited with {self._proc.returncode}:\n"
                                   f"{self.log_tail()}")
            try:
                if requests.get(self.url + "/readyz", timeout=1).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.2)
        raise TimeoutError(f"exporter not ready in {timeout_s} s:\n{self.log_tail()}")

    def stop(self) -> None:
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

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no exporter log)"


@dataclass(frozen=True)
class Target:
    shape: str
    group: str
    topic: str


class Sampler:
    """Samples the exporter and Burrow every ``interval_s`` on a background thread."""

    def __init__(self, metrics_url: str, burrow_url: str, cluster: str, targets: list[Target],
                 interval_s: float = 1.0) -> None:  # fmt: skip
        self.metrics_url = metrics_url
        self.burrow_url = burrow_url.rstrip("/")
        self.cluster = cluster
        self.targets = targets
        self.interval_s = interval_s
        self.samples: dict[str, list[Sample]] = {t.shape: [] for t in targets}
        self.failures = 0
        self._session = requests.Session()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, at: float) -> None:
        self._thread = threading.Thread(target=self._run, args=(at,), name="sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        self._session.close()

    def _run(self, at: float) -> None:
        next_at = at
        while not self._stop.is_set():
            delay = next_at - time.time()
            if delay > 0 and self._stop.wait(delay):
                return
            try:
                self.sample_once()
            except Exception as exc:  # a missed sample is recorded as a gap, never fatal
                self.failures += 1
                log.warning("sample failed: %s", exc)
            next_at += self.interval_s
            if next_at < time.time():  # fell behind: skip, keep the grid
                next_at = time.time() + self.interval_s

    def _get(self, url: str) -> tuple[float, Any]:
        started = time.time()
        resp = self._session.get(url, timeout=5)
        stamp = (started + time.time()) / 2 * 1000
        resp.raise_for_status()
        return stamp, resp

    def sample_once(self) -> None:
        metrics_ms, resp = self._get(self.metrics_url + "/metrics")
        ours = _parse_metrics(resp.text, self.cluster)
        cycle_start, cycle_s = ours.get(("__cycle__",), (None, None))
        for target in self.targets:
            lag_ms, lag = self._get(
                f"{self.burrow_url}/v3/kafka/{self.cluster}/consumer/{target.group}/lag")
            topic_ms, topic = self._get(
                f"{self.burrow_url}/v3/kafka/{self.cluster}/topic/{target.topic}")
            committed = current_lag = leo = commit_ts = None
            for part in lag.json().get("status", {}).get("partitions", []):
                if part.get("topic") == target.topic and part.get("partition") == 0:
                    end = part.get("end") or {}
                    committed = end.get("offset")
                    commit_ts = end.get("timestamp")
                    current_lag = part.get("current_lag")
            offsets = topic.json().get("offsets") or []
            if offsets:
                leo = int(offsets[0])
            key = (target.group, target.topic)
            fresh, offset, olag = ours.get(key, (None, None, None))
            estimate, catching_up = ours.get(("__group__", target.group), (None, None))
            self.samples[target.shape].append(Sample(
                metrics_ms=metrics_ms, ours_ms=fresh, ours_offset=offset, ours_lag=olag,
                cycle_start_ms=cycle_start, cycle_s=cycle_s,
                burrow_ms=(lag_ms + topic_ms) / 2, committed=committed,
                current_lag=current_lag, leo=leo, commit_ts_ms=commit_ts,
                ours_catch_up_s=estimate, ours_catching_up=catching_up,
            ))


def _parse_metrics(text: str, cluster: str) -> dict[tuple[str, ...], Any]:
    """{(group, topic): (freshness ms, committed offset, offset lag)} for partition 0, plus
    {("__cycle__",): (cycle start ms, cycle duration s)} and {("__group__", group): (catch-up
    estimate s, catching up 1/0)} for ``cluster``."""
    values: dict[tuple[str, str], dict[str, float]] = {}
    groups: dict[str, dict[str, float]] = {}
    group_wanted = {"kafka_consumer_group_catch_up_estimate_seconds": "estimate",
                    "kafka_consumer_group_catching_up": "catching_up"}
    cycle_start = cycle_s = None
    wanted = {"kafka_consumer_freshness_ms": "fresh", "kafka_consumer_committed_offset": "offset",
              "kafka_consumer_offset_lag": "lag"}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.labels.get("cluster") != cluster:
                continue
            if s.name in wanted and s.labels.get("partition") == "0":
                values.setdefault((s.labels["consumer"], s.labels["topic"]), {})[
                    wanted[s.name]] = s.value
            elif s.name in group_wanted:
                groups.setdefault(s.labels["consumer"], {})[group_wanted[s.name]] = s.value
            elif s.name == "freshness_tracker_cluster_last_attempt_timestamp_seconds":
                cycle_start = s.value * 1000
            elif s.name == "freshness_tracker_cluster_cycle_duration_seconds":
                cycle_s = s.value
    result: dict[tuple[str, ...], Any] = {("__cycle__",): (cycle_start, cycle_s)}
    for key, v in values.items():
        offset, lag = v.get("offset"), v.get("lag")
        result[key] = (v.get("fresh"), None if offset is None else int(offset),
                       None if lag is None else int(lag))
    for group, g in groups.items():
        result[("__group__", group)] = (g.get("estimate"), g.get("catching_up"))
    return result
