"""Runs every shape concurrently against the real stack while sampling the exporter and Burrow.

The result (:class:`RunData`) holds everything needed to score and plot the run again later:
the harness's own log of produced timestamps and committed offsets per shape (the ground
truth), every sample, and the settings.
"""

from __future__ import annotations

import json
import logging
import math
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.accuracy.sampler import ExporterProcess, Sample, Sampler, Target
from benchmarks.accuracy.shapes import Shape, standard_shapes
from benchmarks.accuracy.traffic import ShapeDriver
from benchmarks.accuracy.truth import TruthLog
from benchmarks.common import create_topics
from devstack import RealStack

__all__ = ["HarnessConfig", "RunData", "ShapeRun", "replica_shapes", "run_harness",
           "scatter_cycles"]

log = logging.getLogger(__name__)


@dataclass
class HarnessConfig:
    duration_s: float = 480.0
    sample_interval_s: float = 1.0
    frequency_s: float = 2.0  # the exporter's frequency_sec
    threshold_s: float = 20.0  # alert threshold for false / missed alarms
    rate_window_s: float = 60.0  # lag ÷ rate: the rate's window
    table_limit: int = 60  # kafka-lag-exporter lookup-table.memory.size
    table_poll_s: float = 0.0  # kafka-lag-exporter poll interval (0: every sample)
    moment_window_s: float = 20.0  # "error after onset / recovery" averages this long
    refresh_allowance_s: float = 2.0  # Burrow offset-refresh (1 s) + reading the commit
    low_volume_interval_s: float = 45.0
    mode: str = "full"
    #: copies of each shape played at once, copy k shifted by k·frequency_s/replicas (see
    #: :func:`replica_shapes`)
    replicas: int = 1
    #: "scattered": copy k also shifted by a whole number of cycles, a different one per copy
    #: (:func:`scatter_cycles`); "phase": by its fraction of a cycle only, as every run
    #: recorded before the setting
    copy_spacing: str = "scattered"
    #: "paired": one sample at a random moment of every interval of the clock
    #: (`sampler.SampleTimes`), the same intervals for every sampler of the run, so the
    #: comparison scores every tool in every interval (one a sampler missed at the tool's last
    #: answer: `compare.accuracy.held_through_missed_slots`); "random": a random
    #: moment of each interval from the sampler's own start; "grid": on the dot of every
    #: interval, as every run recorded before either
    sampling: str = "paired"

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> HarnessConfig:
        # recorded before the settings: on a grid, copies a fraction of a cycle apart
        return cls(**{"sampling": "grid", "copy_spacing": "phase", **d})

    @property
    def random_moments(self) -> bool:
        """Whether the samplers read at a random moment of each interval."""
        return self.sampling in ("random", "paired")

    @property
    def shared_slots(self) -> bool:
        """Whether every sampler reads in the clock's intervals, so a missed one is known."""
        return self.sampling == "paired"


@dataclass
class ShapeRun:
    shape: Shape
    topic: str
    group: str
    truth: TruthLog
    samples: list[Sample]
    errors: list[str] = field(default_factory=list)
    replica: int = 0  # which copy of the shape (0: the unshifted one)


@dataclass
class RunData:
    config: HarnessConfig
    t0_ms: float
    end_ms: float
    shapes: list[ShapeRun]
    wall_s: float = 0.0
    sampler_failures: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "config": asdict(self.config), "t0_ms": self.t0_ms, "end_ms": self.end_ms,
            "wall_s": self.wall_s, "sampler_failures": self.sampler_failures,
            "sample_fields": list(Sample.__dataclass_fields__),
            "shapes": [{
                "shape": r.shape.to_json(), "topic": r.topic, "group": r.group,
                "truth": r.truth.to_json(), "samples": [s.to_json() for s in r.samples],
                "errors": r.errors, **({"replica": r.replica} if r.replica else {}),
            } for r in self.shapes],
        }

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json()))

    @classmethod
    def load(cls, path: Path) -> RunData:
        return cls.from_json(json.loads(path.read_text()))

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> RunData:
        return cls(
            config=HarnessConfig.from_json(d["config"]),
            t0_ms=d["t0_ms"], end_ms=d["end_ms"],
            wall_s=d.get("wall_s", 0.0), sampler_failures=d.get("sampler_failures", 0),
            shapes=[ShapeRun(Shape.from_json(s["shape"]), s["topic"], s["group"],
                             TruthLog.from_json(s["truth"]),
                             [Sample.from_json(row) for row in s["samples"]], s.get("errors", []),
                             s.get("replica", 0))
                    for s in d["shapes"]],
        )


def scatter_cycles(replicas: int) -> list[int]:
    """The whole cycles added to each copy's shift: ``k·a mod replicas`` for copy k, ``a`` the
    integer coprime with ``replicas`` nearest ``replicas/φ`` (φ the golden ratio).

    Why: a copy's first alert is one event, read at the first read of a sampler after the
    tool's first poll past the crossing. Copies a fraction of a cycle apart cross within one
    cycle of each other and meet the same one or two polls and reads, one draw for all. A
    different whole number of cycles per copy puts each at its own polls and reads; ours' and
    every tool polling at ``frequency_s`` keep the evenly spread phases (whole cycles change no
    phase of theirs), and the golden-ratio permutation leaves the phases under any other period
    scattered (a constant step of a cycle and a fraction lined up with a tool whose period is
    a cycle plus its own run: every copy met it at one phase)."""
    if replicas < 1:
        raise ValueError(f"replicas must be at least 1, not {replicas}")
    golden = replicas / ((1 + math.sqrt(5)) / 2)
    step = min((m for m in range(1, replicas + 1) if math.gcd(m, replicas) == 1),
               key=lambda m: (abs(m - golden), m))
    return [k * step % replicas for k in range(replicas)]


def replica_shapes(shapes: list[Shape], replicas: int, frequency_s: float,
                   scattered: bool = False) -> list[tuple[int, Shape]]:  # fmt: skip
    """``(k, shape shifted by k·frequency_s/replicas)`` for every shape and k < replicas, plus
    :func:`scatter_cycles` whole cycles if ``scattered``.

    Why: with one copy per shape, a poller's score depends on where its polls happen to fall
    relative to the few moments the truth drops (a commit); copies shifted evenly across one
    poll interval cover every phase, so their pooled score is the tool's, not its luck's."""
    if replicas < 1:
        raise ValueError(f"replicas must be at least 1, not {replicas}")
    cycles = scatter_cycles(replicas) if scattered else [0] * replicas
    return [(k, s.shifted(k * frequency_s / replicas + cycles[k] * frequency_s))
            for s in shapes for k in range(replicas)]


def run_harness(
    config: HarnessConfig,
    shapes: list[Shape] | None = None,
    stack: RealStack | None = None,
    workdir: Path | None = None,
    progress: Callable[[str], None] = lambda _m: None,
    kafka_version: str | None = None,
    on_ready: Callable[[str], None] | None = None,
) -> RunData:
    """Start the stack (unless given; ``kafka_version`` picks devstack's Kafka line), the
    exporter and the shapes; sample; return the run. ``on_ready`` runs once the topics, groups
    and exporter are up, just before the shapes play, with the exporter's URL (benchmarks.compare
    starts its peers and Prometheus)."""
    began = time.monotonic()
    shapes = shapes if shapes is not None else standard_shapes(
        config.duration_s, config.low_volume_interval_s)
    own_stack = stack is None
    if stack is None:
        stack = RealStack.from_env() or RealStack(kafka_version=kafka_version)
        progress(f"starting the local stack (Apache Kafka {stack.kafka_version} in KRaft mode, "
                 f"{'Burrow 1.2.1' if stack.burrow121 else 'FT_BURROW_BIN'})")
        stack.start()
    workdir = workdir or Path(tempfile.mkdtemp(prefix="ft-accuracy-"))
    workdir.mkdir(parents=True, exist_ok=True)
    prefix = f"acc-{uuid.uuid4().hex[:6]}-"
    replicas = replica_shapes(shapes, config.replicas, config.frequency_s,
                              scattered=config.copy_spacing == "scattered")
    names = [f"{prefix}{s.name}" + (f"-r{k}" if config.replicas > 1 else "")
             for k, s in replicas]
    drivers = [ShapeDriver(s, stack.bootstrap_servers, name, f"{name}-group")
               for (_k, s), name in zip(replicas, names, strict=True)]
    exporter = ExporterProcess(stack.burrow_url, stack.bootstrap_servers, stack.cluster, workdir,
                               config.frequency_s, group_allow=f"{prefix}.*")
    sampler: Sampler | None = None
    try:
        progress(f"creating {len(drivers)} topics and groups (prefix {prefix})")
        create_topics(stack, [(d.topic, 1) for d in drivers])
        for d in drivers:
            d.prepare()
        for d in drivers:
            stack.wait_for_burrow_lag(d.group, d.topic, 0, 0, 0, timeout_s=60)
        exporter.start()
        _wait_for_series(exporter.url, stack.cluster, drivers)
        if on_ready is not None:
            on_ready(exporter.url)
        progress(f"exporter ready at {exporter.url} (frequency_sec={config.frequency_s:g}); "
                 f"playing {len(drivers)} shapes for {config.duration_s:.0f} s")
        t0 = time.time() + 1.0
        sampler = Sampler(exporter.url, stack.burrow_url, stack.cluster,
                          [Target(d.group, d.group, d.topic) for d in drivers],  # by group: unique
                          config.sample_interval_s,
                          random_moment=config.random_moments,
                          shared_slots=config.shared_slots)
        for d in drivers:
            d.start(t0)
        sampler.start(t0)
        end = t0 + config.duration_s
        while time.time() < end:
            time.sleep(min(30.0, max(end - time.time(), 0.0)))
            left = end - time.time()
            if left > 1:
                progress(f"  {time.time() - t0:.0f} s played, {left:.0f} s to go")
            broken = [e for d in drivers for e in d.errors]
            if broken:
                raise RuntimeError(f"a shape failed: {broken[0]}")
        sampler.stop()
    finally:
        if sampler is not None:
            sampler.stop()
        for d in drivers:
            d.stop()
        exporter.stop()
        if own_stack:
            stack.stop()
    runs = [ShapeRun(d.shape, d.topic, d.group, d.truth, sampler.samples[d.group],
                     list(d.errors), k) for d, (k, _s) in zip(drivers, replicas, strict=True)]
    for r in runs:
        r.truth.check()
    return RunData(config, t0 * 1000, end * 1000, runs, wall_s=time.monotonic() - began,
                   sampler_failures=sampler.failures)


def _wait_for_series(url: str, cluster: str, drivers: list[ShapeDriver],
                     timeout_s: float = 60.0) -> None:  # fmt: skip
    """Until /metrics has a freshness series for every group (the first cycles can miss one)."""
    import requests

    from devstack.scrape import FRESHNESS, Scrape

    wanted = {d.group for d in drivers}
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        scrape = Scrape.parse(requests.get(url + "/metrics", timeout=5).text)
        if wanted <= scrape.consumers(FRESHNESS, cluster):
            return
        time.sleep(0.5)
    raise TimeoutError("the exporter never exported every group's freshness")
