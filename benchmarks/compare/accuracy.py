"""Accuracy side by side: the accuracy harness's run, with the peers scraped beside ours.

One stack, one set of shapes, one run: :func:`benchmarks.accuracy.harness.run_harness` plays the
six shapes with real consumer groups and samples ours and Burrow; meanwhile
:class:`PeerSampler` scrapes every peer's ``/metrics`` on the same grid. The harness's ground
truth and scoring (:mod:`benchmarks.accuracy.analysis`) are used as they are: each peer is scored
by the same scorer as ours, on its own samples, raw (what a Prometheus scrape would see).
"""

from __future__ import annotations

import bisect
import dataclasses
import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from benchmarks.accuracy.analysis import (
    MethodScore,
    ShapeResult,
    _Scorer,
    analyse,
    pool_delays,
    pool_replicas,
    pool_results,
    pool_scores,
)
from benchmarks.accuracy.harness import HarnessConfig, RunData, run_harness
from benchmarks.accuracy.sampler import SampleTimes, slot_of
from benchmarks.accuracy.scores import (
    CatchUpScore,
    ErrorScore,
    catch_up_score,
    commit_lag_truth_ms,
    data_as_of_truth_ms,
    error_score,
    offset_threshold,
    pre_onset_rate,
)
from benchmarks.accuracy.shapes import Shape
from benchmarks.compare.exposition import TOOLS, parse_exposition
from benchmarks.compare.peers import Tool, make_tool
from devstack import RealStack
from devstack.prometheus import PrometheusProcess, ScrapeJob

__all__ = [
    "ACC_PREFIX",
    "OURS_JOB",
    "RULE",
    "RULES_FILE",
    "PeerSample",
    "PeerSampler",
    "held_through_missed_slots",
    "offset_alert_delay",
    "pool_shapes",
    "pre_onset_rate",
    "run_accuracy",
    "score_peer",
    "score_peers",
]

log = logging.getLogger(__name__)
_T = TypeVar("_T")

ACC_PREFIX = "^acc-"  # the harness's topics and groups (acc-<random>-<shape>)
REPO = Path(__file__).resolve().parents[2]
#: the shipped rules with default values (generated from the chart by deploy/generate.py); a
#: run renders them from the chart as a user would, with freshnessRateWindow for its intervals
RULES_FILE = REPO / "examples" / "prometheus" / "freshness-tracker.rules.yml"
#: the query-time recording rule scored beside the gauge
RULE = "cluster_consumer:kafka_consumer_freshness_seconds:querytime_max"
OURS_JOB = "freshness-tracker"  # the job name the shipped rules select


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
    """Scrapes every tool once in every ``interval_s`` (:class:`SampleTimes`); keeps partition 0
    of every ``acc-`` group.

    Each tool has its own loop and thread: scraped one after the other, a loaded machine made a
    round longer than the interval and the sampler skipped slots of every tool for the slowest
    one's sake, exactly while the load held records back (the truth was high).
    ``shared_slots``: the slots are the clock's, as ours' sampler's, so a slot a tool's loop
    missed is known (:func:`held_through_missed_slots`)."""

    tools: list[Tool]
    interval_s: float = 1.0
    random_moment: bool = True
    shared_slots: bool = False
    # tool key -> "group/topic" -> samples
    samples: dict[str, dict[str, list[PeerSample]]] = field(default_factory=dict)
    failures: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> None:
        for tool in self.tools:
            thread = threading.Thread(target=self._run, args=(tool,), daemon=True,
                                      name=f"peer-sampler-{tool.spec.key}")
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)

    def _run(self, tool: Tool) -> None:
        # one seed for every tool: their moments coincide wherever no loop fell behind
        times = SampleTimes(time.time(), self.interval_s, random_moment=self.random_moment,
                            seed=1, shared_slots=self.shared_slots)
        while not self._stop.is_set():
            delay = times.next(time.time()) - time.time()
            if delay > 0 and self._stop.wait(delay):
                return
            try:
                self.sample(tool)
            except Exception as exc:  # a gap, never fatal
                with self._lock:
                    self.failures += 1
                log.warning("scraping %s failed: %s", tool.spec.key, exc)

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
    on_stack: Callable[[RealStack], None] | None = None,
) -> tuple[RunData, dict[str, Any], dict[str, Any]]:
    """Start a one-node stack, run the harness, and once its topics, groups and our exporter are
    up start the peers (so none starts before the topics exist: klag-exporter caches topic
    metadata for 5 minutes) and a Prometheus that scrapes ours and every peer at its poll
    interval and evaluates the shipped rules; scrape the peers until the run ends, then read the
    query-time rule from Prometheus on the sample grid. Returns the harness's run, the peers'
    samples (``{tool: {"group/topic": [PeerSample json]}}``) and ``{"rule": {group: [[t_ms,
    value_s]]}, "prometheus_failures": n}``."""
    stack = RealStack(kafka_version=kafka_version)
    progress(f"starting a one-node stack (Apache Kafka {stack.kafka_version}) for accuracy")
    stack.start()
    if on_stack is not None:
        on_stack(stack)
    running: list[Tool] = []
    sampler = PeerSampler(running, config.sample_interval_s,
                          random_moment=config.random_moments,
                          shared_slots=config.shared_slots)
    prom: list[PrometheusProcess] = []

    failed: dict[str, str] = {}

    def start_peers(exporter_url: str) -> None:
        started: list[Tool] = []
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
            try:
                tool.start()
            except Exception as exc:  # a peer that does not start is a result: recorded
                failed[key] = f"did not start: {' '.join(str(exc).split())[:400]}"
                tool.stop()
                continue
            started.append(tool)
        for tool in started:
            try:
                _wait_for_groups(tool, len(shapes) * config.replicas)
            except Exception as exc:
                why = " ".join(str(exc).split())[:400]
                failed[tool.spec.key] = f"did not export the groups: {why}"
                tool.stop()
                continue
            running.append(tool)
            progress(f"  {tool.spec.title} serving {tool.url}, every group exported")
        for key, why in failed.items():
            progress(f"  {key} not run: {why}")
        prom.append(_start_prometheus(workdir / "prometheus", exporter_url, running, config))
        progress(f"  Prometheus {prom[0].url} scraping {1 + len(running)} jobs, rules loaded")
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
        rule = read_rule(prom[0], run) if prom else {"rule": {}, "grid_after_scrape_s": None}
        return run, sampler.to_json(), {
            **rule,
            "peer_failures": sampler.failures,
            "peers_failed": failed,
        }
    finally:
        sampler.stop()
        for p in prom:
            p.stop()
        for tool in running:
            tool.stop()
        stack.stop()


def _hostport(url: str) -> str:
    return url.removeprefix("http://").removeprefix("https://").rstrip("/")


def _start_prometheus(
    workdir: Path, exporter_url: str, tools: Sequence[Tool], config: HarnessConfig
) -> PrometheusProcess:
    """Prometheus scraping ours (the rules' job) and each peer at its own poll interval,
    evaluating the shipped rules at the run's frequency; ready once the rule has a value."""
    # ours scraped about as often as the harness samples every tool's /metrics directly, so the
    # rule read through Prometheus is not a scrape older than the gauges it is scored beside
    jobs = [ScrapeJob(OURS_JOB, (_hostport(exporter_url),), ours_scrape_interval_s(config))]
    jobs += [
        ScrapeJob(t.spec.key, (_hostport(t.url),), t.poll_s or config.frequency_s) for t in tools
    ]
    rules = workdir / "freshness-tracker.rules.yml"
    rules.parent.mkdir(parents=True, exist_ok=True)
    rules.write_text(rules_for_run(config.frequency_s, ours_scrape_interval_s(config)))
    prom = PrometheusProcess(
        workdir,
        jobs,
        [rules],
        scrape_interval_s=config.frequency_s,
        evaluation_interval_s=config.frequency_s,
    ).start()
    try:
        prom.wait(lambda: bool(prom.query(RULE)), 60, f"{RULE} evaluated")
    except BaseException:
        prom.stop()
        raise
    return prom


def ours_scrape_interval_s(config: HarnessConfig) -> float:
    """How often Prometheus scrapes ours: the sample interval, stretched by a tenth in a run
    sampled at random moments. Ours starts a cycle every `frequency_sec` on the dot; scraped on a
    divisor of it, every scrape (and the rule's read-out just after it) would fall at the same
    phase of ours' cycles for the whole run, and the rule's score would be that phase's luck.
    A stretched interval sweeps every phase."""
    if not config.random_moments:
        return config.sample_interval_s
    return round(config.sample_interval_s * 1.1, 3)


def freshness_rate_window_s(frequency_s: float, scrape_s: float) -> int:
    """The chart's freshnessRateWindow for these intervals, as docs/querytime.md tells a user to
    choose it: three times the larger of the cycle (``frequency_sec`` plus up to a second of
    cycle here) and the scrape interval, so the window holds two cycles' values."""
    return max(1, math.ceil(3 * max(frequency_s + 1.0, scrape_s)))


def rules_for_run(frequency_s: float, scrape_s: float) -> str:
    """The chart's rules rendered as a user with these intervals would render them."""
    from deploy.generate import rules_text

    return rules_text({"freshnessRateWindow": f"{freshness_rate_window_s(frequency_s, scrape_s)}s"},
                      frequency_s=frequency_s)


def rule_expression(rules_yaml: str) -> str:
    """The PromQL of the query-time recording rule: a dashboard evaluates it at each step,
    where the recorded series is as old as the last rule evaluation."""
    import yaml

    doc = yaml.safe_load(rules_yaml)
    (expr,) = [r["expr"] for g in doc["groups"] for r in g["rules"] if r.get("record") == RULE]
    return str(expr)


#: How long after Prometheus starts a scrape of ours the rule's read-out grid is placed: the
#: scrape of a few-kilobyte exposition on the loopback is done by then.
SCRAPE_SETTLE_S = 0.1


def after_scrapes(start_s: float, step_s: float, scraped_s: float, settle_s: float) -> float:
    """The first instant at or after ``start_s`` that lies ``settle_s`` after one of the scrapes
    Prometheus makes every ``step_s`` at the phase of ``scraped_s`` (one scrape's time)."""
    return start_s + (scraped_s + settle_s - start_s) % step_s


def read_rule(prom: PrometheusProcess, run: RunData) -> dict[str, Any]:
    """The query-time rule per group, as a dashboard's range query reads it (the rule's
    expression evaluated at each of Prometheus' scrapes of ours, :func:`ours_scrape_interval_s`):
    ``{"rule": {group: [[t_ms, value_s], ...]}, "grid_after_scrape_s": ...}`` (no point where
    Prometheus had no value).

    The grid is placed just after each of Prometheus' scrapes of ours, so the rule works from
    data as fresh as the harness's own reads of the gauge and of every peer; a grid at a random
    phase would give the rule alone up to one scrape interval of older data."""
    step = ours_scrape_interval_s(run.config)
    groups = {r.group for r in run.shapes}
    expr = rule_expression((prom.workdir / "freshness-tracker.rules.yml").read_text())
    scraped = prom.query(f'timestamp(up{{job="{OURS_JOB}"}})')
    start = run.t0_ms / 1000
    if scraped:
        start = after_scrapes(start, step, float(scraped[0]["value"][1]), SCRAPE_SETTLE_S)
    out: dict[str, list[list[float]]] = {}
    for series in prom.query_range(expr, start, run.end_ms / 1000, step):
        group = series["metric"].get("consumer")
        if group in groups:
            out[group] = [[float(t) * 1000, float(v)] for t, v in series["values"]]
    return {"rule": out, "grid_after_scrape_s": SCRAPE_SETTLE_S if scraped else None}


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
    #: ours' query-time rule as Prometheus evaluated it (None: no Prometheus in the run)
    rule: MethodScore | None = None
    rule_curve: PeerCurve | None = None
    #: the offset-lag threshold offsets-only tools are judged with (records) and its basis
    offset_threshold: tuple[float, str] | None = None
    commit_lag: ErrorScore | None = None
    data_as_of: ErrorScore | None = None
    catch_up: CatchUpScore | None = None
    #: a pooled shape (:func:`pool_shapes`): every replica's own; curves above are the first's
    replicas: list[CompareShape] = field(default_factory=list)


def offset_only(tool: str, series: dict[str, list[PeerSample]]) -> bool:
    """A tool that exports no time lag: known as such, or without one in the whole run."""
    from benchmarks.compare.peers import SPECS

    spec = SPECS.get(tool)
    if spec is not None and spec.metrics in TOOLS:
        return TOOLS[spec.metrics].time_lag is None
    return all(s.time_lag_s is None for rows in series.values() for s in rows)


def score_peers(
    run: RunData, peer_json: dict[str, Any], rule_json: dict[str, Any] | None = None
) -> list[CompareShape]:
    """Every shape: the harness's analysis, ours' query-time rule, each peer's score and curve,
    and ours' other gauges (commit lag, data current as of, the catch-up estimate)."""
    peers = load_peer_samples(peer_json)
    if run.config.shared_slots:
        run, peers = held_through_missed_slots(run, peers)
    rules = (rule_json or {}).get("rule", {})
    duration_s = (run.end_ms - run.t0_ms) / 1000
    out = []
    for res in analyse(run):
        key = f"{res.run.group}/{res.run.topic}"
        scores: dict[str, MethodScore] = {}
        curves: dict[str, PeerCurve] = {}
        alerts: dict[str, float | None] = {}
        threshold = offset_threshold(res.run.shape, run.config.threshold_s, duration_s)
        for tool, series in peers.items():
            samples = series.get(key, [])
            if offset_only(tool, series):
                alerts[tool] = (
                    None
                    if threshold is None
                    else offset_alert_delay(res, run.config, run.t0_ms, samples, threshold[0])
                )
                continue
            score, t_s, values = score_peer(res, run.config, run.t0_ms, run.end_ms, samples, tool)
            scores[tool] = score
            curves[tool] = PeerCurve(t_s, values)
        shape = CompareShape(res, scores, curves, alerts, offset_threshold=threshold)
        if res.run.group in rules:
            points = [PeerSample(t, v, None) for t, v in rules[res.run.group]]
            shape.rule, t_s, values = score_peer(
                res, run.config, run.t0_ms, run.end_ms, points, "ours_rule"
            )
            shape.rule_curve = PeerCurve(t_s, values)
        _score_other_gauges(shape, run)
        out.append(shape)
    return pool_shapes(out)


PeerSeries = dict[str, dict[str, list[PeerSample]]]  # tool -> "group/topic" -> samples


def held_through_missed_slots(run: RunData, peers: PeerSeries) -> tuple[RunData, PeerSeries]:
    """The run and the peers' samples with a sample of every tool in every slot of the run (the
    clock's sample intervals, :func:`slot_of`): a slot a tool's sampler missed (its previous
    scrape still running) gets the tool's last answer before it, at a moment spread over the
    slot, as a dashboard shows a target that does not answer: its last scraped value.

    Why: a sampler misses slots when the machine is loaded, which is when records wait
    longest; a tool scored without those slots would be scored on an easier truth than the
    others. The query-time rule is read from Prometheus on its own schedule, which misses
    nothing."""
    interval_s = run.config.sample_interval_s
    slots = range(slot_of(run.t0_ms, interval_s), slot_of(run.end_ms, interval_s) + 1)

    def held(items: Sequence[_T], stamp: Callable[[_T], float],
             restamp: Callable[[_T, float], _T]) -> list[_T]:  # fmt: skip
        ordered = sorted(items, key=stamp)
        stamps = [stamp(item) for item in ordered]
        seen = {slot_of(t, interval_s) for t in stamps}
        # spread over the slot without a random generator: the golden ratio's multiples mod 1
        missed = [(k + (k * 0.6180339887) % 1.0) * interval_s * 1000
                  for k in slots if k not in seen]
        filled = [restamp(ordered[i - 1], at) for at in missed
                  if (i := bisect.bisect_right(stamps, at)) > 0]
        return sorted([*ordered, *filled], key=stamp)

    shapes = [dataclasses.replace(r, samples=held(
        r.samples, lambda s: s.metrics_ms, lambda s, at: dataclasses.replace(s, metrics_ms=at)))
        for r in run.shapes]
    kept = {tool: {key: held(rows, lambda p: p.t_ms,
                             lambda p, at: dataclasses.replace(p, t_ms=at))
                   for key, rows in by_key.items()}
            for tool, by_key in peers.items()}
    return dataclasses.replace(run, shapes=shapes), kept


def pool_shapes(shapes: Sequence[CompareShape]) -> list[CompareShape]:
    """Replicas of each shape as one shape, in first-seen order (one replica: as it is).

    Peers and the rule pooled as ours (:func:`benchmarks.accuracy.analysis.pool_scores`), the
    offset-lag alert as the mean over replicas, commit lag and data-as-of errors over all
    samples; curves, events and thresholds of the first replica."""
    def pool(group: list[CompareShape]) -> CompareShape:
        first = group[0]
        rules = [g.rule for g in group if g.rule is not None]
        return dataclasses.replace(
            first,
            result=pool_results([g.result for g in group])[0],
            peers={k: pool_scores([g.peers[k] for g in group if k in g.peers])
                   for k in first.peers},
            offset_alert_s={k: pool_delays([g.offset_alert_s.get(k) for g in group])[0]
                            for k in first.offset_alert_s},
            rule=pool_scores(rules) if rules else None,
            commit_lag=_pool_errors([g.commit_lag for g in group]),
            data_as_of=_pool_errors([g.data_as_of for g in group]),
            catch_up=_pool_catch_up([g.catch_up for g in group]),
            replicas=list(group),
        )

    return pool_replicas(shapes, lambda sh: sh.result.run.shape.name, pool)


def _pool_errors(scores: Sequence[ErrorScore | None]) -> ErrorScore | None:
    given = [s for s in scores if s is not None]
    if not given:
        return None
    scored = sum(s.scored for s in given)
    maxima = [s.max_abs_s for s in given if not math.isnan(s.max_abs_s)]
    return ErrorScore(
        sum(s.samples for s in given), scored,
        sum(s.mean_abs_s * s.scored for s in given if s.scored) / scored if scored else math.nan,
        max(maxima, default=math.nan))


def _pool_catch_up(scores: Sequence[CatchUpScore | None]) -> CatchUpScore | None:
    """Means over replicas, except counts (summed), mean |error| (over every estimate) and max;
    the median is the mean of the replicas' medians."""
    given = [s for s in scores if s is not None]
    if not given:
        return None

    def mean(values: Sequence[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return sum(known) / len(known) if known else None

    with_estimate = sum(s.with_estimate for s in given)
    maxima = [s.max_abs_s for s in given if not math.isnan(s.max_abs_s)]
    return CatchUpScore(
        outage_s=sum(s.outage_s for s in given) / len(given),
        catch_up_s=sum(s.catch_up_s for s in given) / len(given),
        samples=sum(s.samples for s in given), with_estimate=with_estimate,
        mean_abs_s=sum(s.mean_abs_s * s.with_estimate for s in given if s.with_estimate)
        / with_estimate if with_estimate else math.nan,
        median_s=sum(s.median_s for s in given) / len(given),
        max_abs_s=max(maxima, default=math.nan),
        first_s=mean([s.first_s for s in given]),
        first_after_s=mean([s.first_after_s for s in given]),
    )


def _score_other_gauges(shape: CompareShape, run: RunData) -> None:
    r = shape.result.run
    samples = [s for s in r.samples if run.t0_ms <= s.metrics_ms <= run.end_ms]
    lag_truth = [commit_lag_truth_ms(r.truth, s.metrics_ms) for s in samples]
    as_of_truth = [data_as_of_truth_ms(r.truth, s.metrics_ms) for s in samples]
    shape.commit_lag = error_score(
        [None if s.ours_commit_lag_ms is None else s.ours_commit_lag_ms / 1000 for s in samples],
        [None if v is None else v / 1000 for v in lag_truth],
    )
    shape.data_as_of = error_score(
        [s.ours_data_as_of_s for s in samples],
        [None if v is None else v / 1000 for v in as_of_truth],
    )
    shape.catch_up = catch_up_score(r, run.t0_ms)
