"""Accuracy side by side: the accuracy harness's run, with the peers scraped beside ours.

One stack, one set of shapes, one run: :func:`benchmarks.accuracy.harness.run_harness` plays the
six shapes with real consumer groups and samples ours and Burrow; meanwhile
:class:`PeerSampler` scrapes every peer's ``/metrics`` on the same grid. The harness's ground
truth and scoring (:mod:`benchmarks.accuracy.analysis`) are used as they are: each peer is scored
by the same scorer as ours, on its own samples, raw (what a Prometheus scrape would see).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.accuracy.analysis import MethodScore, ShapeResult, _Scorer, analyse
from benchmarks.accuracy.harness import HarnessConfig, RunData, run_harness
from benchmarks.accuracy.shapes import Shape
from benchmarks.compare.exposition import parse_exposition
from benchmarks.compare.peers import Tool, make_tool
from devstack import RealStack

__all__ = [
    "ACC_PREFIX",
    "PeerSample",
    "PeerSampler",
    "offset_alert_delay",
    "run_accuracy",
    "score_peer",
    "score_peers",
]

log = logging.getLogger(__name__)

ACC_PREFIX = "^acc-"  # the harness's topics and groups (acc-<random>-<shape>)


@dataclass
class PeerSample:
    t_ms: float  # the middle of the scrape
    time_lag_s: float | None  # None: the tool gave no number for the partition
    offset_lag: float | None

    def to_json(self) -> list[Any]:
        return [self.t_ms, self.time_lag_s, self.offset_lag]

    @classmethod
    def from_json(cls, row: Sequence[Any]) -> PeerSample:
        return cls(float(row[0]), row[1], row[2])


@dataclass
class PeerSampler:
    """Scrapes every tool every ``interval_s``; keeps partition 0 of every ``acc-`` group."""

    tools: list[Tool]
    interval_s: float = 1.0
    # tool key -> "group/topic" -> samples
    samples: dict[str, dict[str, list[PeerSample]]] = field(default_factory=dict)
    failures: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="peer-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _run(self) -> None:
        next_at = time.time()
        while not self._stop.is_set():
            for tool in self.tools:
                try:
                    self.sample(tool)
                except Exception as exc:  # a gap, never fatal
                    self.failures += 1
                    log.warning("scraping %s failed: %s", tool.spec.key, exc)
            next_at += self.interval_s
            delay = next_at - time.time()
            if delay < 0:
                next_at = time.time()
            elif self._stop.wait(delay):
                return

    def sample(self, tool: Tool) -> None:
        started = time.time()
        text = tool.metrics_text(timeout_s=5)
        stamp = (started + time.time()) / 2 * 1000
        expo = parse_exposition(text, tool.spec.metrics, cluster="local")
        by_tool = self.samples.setdefault(tool.spec.key, {})
        keys = {k for k in (*expo.time_lag_s, *expo.offset_lag) if k[2] == 0}
        for key in keys:
            by_tool.setdefault(f"{key[0]}/{key[1]}", []).append(
                PeerSample(stamp, expo.time_lag_s.get(key), expo.offset_lag.get(key))
            )

    def to_json(self) -> dict[str, Any]:
        return {
            tool: {k: [s.to_json() for s in v] for k, v in series.items()}
            for tool, series in self.samples.items()
        }


def load_peer_samples(data: dict[str, Any]) -> dict[str, dict[str, list[PeerSample]]]:
    return {
        tool: {k: [PeerSample.from_json(r) for r in rows] for k, rows in series.items()}
        for tool, series in data.items()
    }


def run_accuracy(
    config: HarnessConfig,
    shapes: list[Shape],
    tools: list[str],
    workdir: Path,
    kafka_version: str | None = None,
    progress: Callable[[str], None] = print,
) -> tuple[RunData, dict[str, Any]]:
    """Start a one-node stack, run the harness, and once its topics, groups and our exporter are
    up start the peers (so none starts before the topics exist: klag-exporter caches topic
    metadata for 5 minutes) and scrape them until the run ends. Returns the harness's run and
    the peers' samples (``{tool: {"group/topic": [PeerSample json]}}``)."""
    stack = RealStack(kafka_version=kafka_version)
    progress(f"starting a one-node stack (Apache Kafka {stack.kafka_version}) for accuracy")
    stack.start()
    running: list[Tool] = []
    sampler = PeerSampler(running, config.sample_interval_s)

    def start_peers() -> None:
        for key in tools:
            tool = make_tool(
                key,
                burrow_url=stack.burrow_url,
                bootstrap=stack.bootstrap_servers,
                cluster=stack.cluster,
                workdir=workdir / key,
                poll_s=config.frequency_s,
                group_regex=ACC_PREFIX,
                topic_regex=ACC_PREFIX,
            )
            tool.start()
            running.append(tool)
        for tool in running:
            _wait_for_groups(tool, len(shapes))
            progress(f"  {tool.spec.title} serving {tool.url}, every group exported")
        sampler.start()

    try:
        run = run_harness(
            config,
            shapes,
            stack=stack,
            workdir=workdir / "harness",
            progress=progress,
            on_ready=start_peers,
        )
        sampler.stop()
        return run, sampler.to_json()
    finally:
        sampler.stop()
        for tool in running:
            tool.stop()
        stack.stop()


def _wait_for_groups(tool: Tool, groups: int, timeout_s: float = 90.0) -> None:
    """Until the tool exports partition 0 of ``groups`` groups (time or offset lag)."""
    deadline = time.monotonic() + timeout_s
    seen = 0
    while time.monotonic() < deadline:
        expo = parse_exposition(tool.metrics_text(timeout_s=5), tool.spec.metrics, "local")
        seen = len({k[0] for k in (*expo.time_lag_s, *expo.offset_lag) if k[2] == 0})
        if seen >= groups:
            return
        time.sleep(0.5)
    raise TimeoutError(
        f"{tool.spec.key} exported {seen} of {groups} groups in {timeout_s} s:\n{tool.log_tail()}"
    )


# ---- scoring -------------------------------------------------------------------------------


def _scorer(res: ShapeResult, cfg: HarnessConfig) -> _Scorer:
    onsets = [t for _, kind, t in res.events if kind == "onset"]
    recoveries = [t for _, kind, t in res.events if kind == "recovery"]
    return _Scorer(cfg, onsets[:1], recoveries[:1], res.curve_t_s, res.curve_s)


def score_peer(
    res: ShapeResult,
    cfg: HarnessConfig,
    t0_ms: float,
    end_ms: float,
    samples: Sequence[PeerSample],
    method: str,
) -> tuple[MethodScore, list[float], list[float]]:
    """A peer's time-lag samples scored exactly as the harness scores ours (raw)."""
    picked = [s for s in samples if t0_ms <= s.t_ms <= end_ms]
    t_s = [(s.t_ms - t0_ms) / 1000 for s in picked]
    values = [math.nan if s.time_lag_s is None else float(s.time_lag_s) for s in picked]
    truth = []
    for s in picked:
        v = res.run.truth.freshness_ms(s.t_ms)
        truth.append(math.nan if v is None else v / 1000)
    return _scorer(res, cfg)(method, t_s, values, truth, truth, truth), t_s, values


def offset_alert_delay(
    res: ShapeResult,
    cfg: HarnessConfig,
    t0_ms: float,
    samples: Sequence[PeerSample],
    threshold_records: float,
) -> float | None:
    """Seconds from the truth crossing ``cfg.threshold_s`` (after the shape's first onset) to the
    first sample whose offset lag exceeds ``threshold_records`` (None without an onset or a
    crossing; +inf if it never does)."""
    onsets = [t for _, kind, t in res.events if kind == "onset"]
    if not onsets:
        return None
    crossing = next(
        (
            t
            for t, v in zip(res.curve_t_s, res.curve_s, strict=True)
            if t >= onsets[0] and v >= cfg.threshold_s
        ),
        None,
    )
    if crossing is None:
        return None
    first = next(
        (
            (s.t_ms - t0_ms) / 1000
            for s in samples
            if (s.t_ms - t0_ms) / 1000 >= onsets[0]
            and s.offset_lag is not None
            and s.offset_lag > threshold_records
        ),
        None,
    )
    return math.inf if first is None else first - crossing


@dataclass
class PeerCurve:
    t_s: list[float]
    values: list[float]


@dataclass
class CompareShape:
    result: ShapeResult  # the harness's own analysis (ours + the two re-implementations)
    peers: dict[str, MethodScore]
    curves: dict[str, PeerCurve]
    offset_alert_s: dict[str, float | None]


def score_peers(
    run: RunData, peer_json: dict[str, Any], offset_rate_per_s: dict[str, float]
) -> list[CompareShape]:
    """Every shape: the harness's analysis plus each peer's score and curve.

    ``offset_rate_per_s``: per shape, the produce rate that turns the time threshold into an
    offset threshold for offsets-only tools (threshold_s × rate records)."""
    peers = load_peer_samples(peer_json)
    out = []
    for res in analyse(run):
        key = f"{res.run.group}/{res.run.topic}"
        scores: dict[str, MethodScore] = {}
        curves: dict[str, PeerCurve] = {}
        alerts: dict[str, float | None] = {}
        for tool, series in peers.items():
            samples = series.get(key, [])
            if tool == "kafka_exporter":
                rate = offset_rate_per_s.get(res.run.shape.name)
                alerts[tool] = (
                    None
                    if rate is None
                    else offset_alert_delay(
                        res, run.config, run.t0_ms, samples, run.config.threshold_s * rate
                    )
                )
                continue
            score, t_s, values = score_peer(res, run.config, run.t0_ms, run.end_ms, samples, tool)
            scores[tool] = score
            curves[tool] = PeerCurve(t_s, values)
        out.append(CompareShape(res, scores, curves, alerts))
    return out


def pre_onset_rate(shape: Shape) -> float | None:
    """Records per second produced in the 30 s before the shape's first onset (None: no onset)."""
    onset = next((e.at_s for e in shape.events if e.kind == "onset" and e.at_s is not None), None)
    if onset is None:
        return None
    window = [t for t in shape.produce_at_s if onset - 30 <= t < onset]
    span = min(30.0, onset)
    return len(window) / span if span > 0 else None
