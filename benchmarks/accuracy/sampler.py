"""The exporter under test (a real ``freshness-tracker run`` subprocess) and the sampler.

Every ``interval`` the sampler scrapes the exporter's ``/metrics`` and, for each shape, asks Burrow
for the group's ``/lag`` (committed offset C) and the topic's offsets (LEO), the shapes' requests
in parallel. Both are stamped with the wall-clock time halfway through their request; the
estimators later run on these very samples, so all three methods see the same Burrow data at the
same moments.
"""

from __future__ import annotations

import logging
import math
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import requests

from devstack.exporter import ExporterProcess as SupportExporterProcess
from devstack.exporter_config import cluster_entry, exporter_config
from devstack.scrape import DURATION, LAST_ATTEMPT, Scrape
from freshness_tracker import metrics as catalogue

__all__ = ["ExporterProcess", "Sample", "SampleTimes", "Sampler", "slot_of"]

log = logging.getLogger(__name__)

#: Burrow answers read at once per sample (two requests per shape).
BURROW_READERS = 6


class SampleTimes:
    """When a sampler reads: one moment in each ``interval_s`` slot from ``start``.

    Why random: a tool that publishes on a fixed period (ours every `frequency_sec`, klag at its
    poll interval) read on a fixed grid is read at the same phase of its period every time, so
    its mean |error| would be that one phase's, by luck. A uniformly random moment in every slot
    (``random_moment``) makes the mean over samples the time average, whatever the tool's
    period. Seeded: a run's moments are reproducible. A sampler that falls behind skips the
    slots already over, never reads in a burst.

    ``shared_slots``: the slots are whole intervals of the clock (the first is the one holding
    ``start``), so every sampler of a run has the same slots and a slot tells which reads of
    different samplers belong together (:func:`slot_of`)."""

    def __init__(self, start: float, interval_s: float, *, random_moment: bool,
                 seed: int = 0, shared_slots: bool = False) -> None:  # fmt: skip
        self._slot = math.floor(start / interval_s) * interval_s if shared_slots else start
        self._interval = interval_s
        self._rng = random.Random(seed) if random_moment else None

    def next(self, now: float) -> float:
        """The wall-clock moment of the next read (at or before ``now``: read at once)."""
        if self._slot + self._interval <= now:
            self._slot += math.floor((now - self._slot) / self._interval) * self._interval
        at = self._slot + (self._rng.uniform(0.0, self._interval) if self._rng else 0.0)
        self._slot += self._interval
        return at


def slot_of(t_ms: float, interval_s: float) -> int:
    """The clock interval (:class:`SampleTimes` with ``shared_slots``) a read stamped ``t_ms``
    belongs to."""
    return math.floor(t_ms / (interval_s * 1000))


@dataclass
class Sample:
    metrics_ms: float  # when /metrics was read
    ours_ms: float | None  # the catalogue's FRESHNESS, None if absent
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
    ours_commit_lag_ms: float | None = None  # kafka_consumer_commit_lag_ms, partition 0
    ours_data_as_of_s: float | None = None  # kafka_consumer_group_data_current_as_of_..._seconds

    def to_json(self) -> list[Any]:
        return list(asdict(self).values())

    @classmethod
    def from_json(cls, row: list[Any]) -> Sample:
        return cls(*row)


class ExporterProcess(SupportExporterProcess):
    """``python -m freshness_tracker run --config ...`` against the stack (the tests' exporter
    process), ready once it has published a cycle; logs to ``workdir/exporter.log``."""

    def __init__(self, burrow_url: str, bootstrap: str, cluster: str, workdir: Path,
                 frequency_s: float, group_allow: str) -> None:  # fmt: skip
        super().__init__(workdir, exporter_config(
            burrow_url=burrow_url, clusters=[cluster_entry(cluster, bootstrap, num_consumers=None)],
            groups_allow=group_allow, frequency=frequency_s, port="@PORT@",
            listen_address="127.0.0.1"))

    def start(self, timeout_s: float = 60.0, *, wait: bool = True,
              ready: bool = True) -> ExporterProcess:
        super().start(timeout_s, wait=wait, ready=ready)
        return self


@dataclass(frozen=True)
class Target:
    shape: str
    group: str
    topic: str


class Sampler:
    """Samples the exporter and Burrow once in every ``interval_s`` (:class:`SampleTimes`) on a
    background thread."""

    def __init__(self, metrics_url: str, burrow_url: str, cluster: str, targets: list[Target],
                 interval_s: float = 1.0, *, random_moment: bool = True,
                 shared_slots: bool = False) -> None:  # fmt: skip
        self.metrics_url = metrics_url
        self.burrow_url = burrow_url.rstrip("/")
        self.cluster = cluster
        self.targets = targets
        self.interval_s = interval_s
        self.random_moment = random_moment
        self.shared_slots = shared_slots
        self.samples: dict[str, list[Sample]] = {t.shape: [] for t in targets}
        self.failures = 0
        self._session = requests.Session()
        self._pool = ThreadPoolExecutor(BURROW_READERS, thread_name_prefix="sampler-burrow")
        # Completes each sample with Burrow's answers, in order, off the sampling thread.
        self._completer = ThreadPoolExecutor(1, thread_name_prefix="sampler-complete")
        self._failures_lock = threading.Lock()
        self._local = threading.local()
        self._sessions: list[requests.Session] = []
        self._sessions_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, at: float) -> None:
        self._thread = threading.Thread(target=self._run, args=(at,), name="sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        self._completer.shutdown(wait=True)
        self._pool.shutdown(wait=True)
        self._session.close()
        for session in self._sessions:
            session.close()

    def _run(self, at: float) -> None:
        times = SampleTimes(at, self.interval_s, random_moment=self.random_moment,
                            shared_slots=self.shared_slots)
        while not self._stop.is_set():
            delay = times.next(time.time()) - time.time()
            if delay > 0 and self._stop.wait(delay):
                return
            try:
                self.sample_once()
            except Exception as exc:  # a missed sample is recorded as a gap, never fatal
                self._failed(exc)

    def _failed(self, exc: Exception) -> None:
        with self._failures_lock:
            self.failures += 1
        log.warning("sample failed: %s", exc)

    @staticmethod
    def _get(session: requests.Session, url: str) -> tuple[float, Any]:
        started = time.time()
        resp = session.get(url, timeout=5)
        stamp = (started + time.time()) / 2 * 1000
        resp.raise_for_status()
        return stamp, resp

    def sample_once(self) -> None:
        """Read /metrics now; Burrow's answers complete the sample on another thread.

        Waiting for them here (two requests per shape) made the next /metrics read late
        whenever they ran past its moment, so ours' reads fell late in their slots, at moments
        of their own rather than random ones.
        """
        metrics_ms, resp = self._get(self._session, self.metrics_url + "/metrics")
        ours = _parse_metrics(resp.text, self.cluster)
        self._completer.submit(self._complete, metrics_ms, ours)

    def _complete(self, metrics_ms: float, ours: dict[tuple[str, ...], Any]) -> None:
        try:
            self._append(metrics_ms, ours)
        except Exception as exc:  # a missed sample is recorded as a gap, never fatal
            self._failed(exc)

    def _append(self, metrics_ms: float, ours: dict[tuple[str, ...], Any]) -> None:
        cycle_start, cycle_s = ours.get(("__cycle__",), (None, None))
        # Burrow's answers for every shape at once: one after the other they take longer than
        # the interval on a loaded machine.
        burrow = list(self._pool.map(self._burrow_view, self.targets))
        for target, (burrow_ms, committed, current_lag, leo, commit_ts) in zip(
                self.targets, burrow, strict=True):
            key = (target.group, target.topic)
            fresh, offset, olag = ours.get(key, (None, None, None))
            estimate, catching_up, as_of = ours.get(("__group__", target.group),
                                                    (None, None, None))
            commit_lag = ours.get(("__commit_lag__", target.group, target.topic))
            self.samples[target.shape].append(Sample(
                metrics_ms=metrics_ms, ours_ms=fresh, ours_offset=offset, ours_lag=olag,
                cycle_start_ms=cycle_start, cycle_s=cycle_s,
                burrow_ms=burrow_ms, committed=committed,
                current_lag=current_lag, leo=leo, commit_ts_ms=commit_ts,
                ours_catch_up_s=estimate, ours_catching_up=catching_up,
                ours_commit_lag_ms=commit_lag, ours_data_as_of_s=as_of,
            ))

    def _burrow_view(self, target: Target) -> tuple[float, Any, Any, int | None, Any]:
        """(when, committed offset, current lag, log end offset, commit time) of the target's
        partition 0, from Burrow's stored offsets (consumer detail) and topic answers, on this
        thread's own session.

        Not `/lag`: Burrow answers it from an evaluation it caches for `expire-cache`, and
        every request past that fills the cache, so the harness's reads would hand the tools
        under test an older view of the group than they would get on their own.
        """
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = requests.Session()
            with self._sessions_lock:
                self._sessions.append(session)
        detail_ms, detail = self._get(
            session, f"{self.burrow_url}/v3/kafka/{self.cluster}/consumer/{target.group}")
        topic_ms, topic = self._get(
            session, f"{self.burrow_url}/v3/kafka/{self.cluster}/topic/{target.topic}")
        committed, current_lag, commit_ts = stored_commit(detail.json(), target.topic)
        offsets = topic.json().get("offsets") or []
        leo = int(offsets[0]) if offsets else None
        return (detail_ms + topic_ms) / 2, committed, current_lag, leo, commit_ts


def stored_commit(detail: dict[str, Any], topic: str) -> tuple[Any, Any, Any]:
    """(committed offset, current lag, commit time) of ``topic``'s partition 0 in Burrow's
    consumer detail: the newest entry of its ring of commits (oldest first, unfilled slots
    null), and its ``current-lag`` (hyphenated there); Nones where Burrow has none."""
    partitions = (detail.get("topics") or {}).get(topic) or []
    if not partitions or not isinstance(partitions[0], dict):
        return None, None, None
    ring = [o for o in partitions[0].get("offsets") or [] if o]
    newest = ring[-1] if ring else {}
    return newest.get("offset"), partitions[0].get("current-lag"), newest.get("timestamp")


def _parse_metrics(text: str, cluster: str) -> dict[tuple[str, ...], Any]:
    """{(group, topic): (freshness ms, committed offset, offset lag)} for partition 0, plus
    {("__cycle__",): (cycle start ms, cycle duration s)}, {("__group__", group): (catch-up
    estimate s, catching up 1/0, data current as of s)} and {("__commit_lag__", group, topic):
    commit lag ms} for ``cluster``."""
    scrape = Scrape.parse(text)

    def by(name: str, *keys: str, **match: Any) -> dict[tuple[str, ...], float]:
        series = scrape.series(name, cluster=cluster, **match)
        return {tuple(dict(labels)[k] for k in keys): v for labels, v in series.items()}

    def one(name: str) -> float | None:
        return next(iter(scrape.series(name, cluster=cluster).values()), None)

    fresh, offset, lag = (by(family.name, "consumer", "topic", partition=0) for family in (
        catalogue.FRESHNESS, catalogue.COMMITTED, catalogue.OFFSET_LAG))
    estimate, catching_up, as_of = (by(family.name, "consumer") for family in (
        catalogue.GROUP_CATCH_UP, catalogue.GROUP_CATCHING_UP, catalogue.GROUP_DATA_AS_OF))
    commit_lag = by(catalogue.COMMIT_LAG.name, "consumer", "topic", partition=0)
    start = one(LAST_ATTEMPT)
    result: dict[tuple[str, ...], Any] = {
        ("__cycle__",): (None if start is None else start * 1000, one(DURATION))}
    for key in fresh.keys() | offset.keys() | lag.keys():
        o, n = offset.get(key), lag.get(key)
        result[key] = (fresh.get(key), None if o is None else int(o), None if n is None else int(n))
    for group in estimate.keys() | catching_up.keys() | as_of.keys():
        result[("__group__", *group)] = (estimate.get(group), catching_up.get(group),
                                         as_of.get(group))
    for key, value in commit_lag.items():
        result[("__commit_lag__", *key)] = value
    return result
