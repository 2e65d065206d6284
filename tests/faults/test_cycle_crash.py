"""A cycle that crashes on something unforeseen (a bug, an input nobody fuzzed) must not leave
the previous cycle's values on /metrics: the cluster is reported down and its series go, as
for any other failure, and the next good cycle brings them back."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence

from devstack.exporter import looping
from devstack.scrape import Scrape, scrape_until
from freshness_tracker import metrics
from freshness_tracker.app import Exporter
from freshness_tracker.config import load_settings
from freshness_tracker.domain.model import ClusterLags
from tests.faults.harness import Record
from tests.support.fakes import FakeBurrow, FakeReader, group, lag

CLUSTER = "c"


class BuggyBurrow(FakeBurrow):
    """Raises an exception nobody planned for while `broken` is set."""

    broken = False

    def cluster_lags(self, cluster: str, groups: Sequence[str]) -> ClusterLags:
        if self.broken:
            raise KeyError("status")  # e.g. a field access the parser never guarded
        return super().cluster_lags(cluster, groups)


def test_a_crashing_cycle_blanks_the_cluster_instead_of_serving_the_last_values(
        record: Record) -> None:
    settings = load_settings(text=f"""
        burrow.url = "http://fake:1"
        clusters = [{{ name = {CLUSTER}, kafka {{ "bootstrap.servers" = "k:1" }} }}]
    """)
    settings = dataclasses.replace(settings, frequency_s=0.01)  # faster than a config allows
    burrow = BuggyBurrow({CLUSTER: [group(CLUSTER, "g", lag(CLUSTER, "g", "t", 0, committed=4,
                                                            current_lag=2, commit_time=None))]})
    reader = FakeReader({("t", 0, 4): 1_000})
    exporter = Exporter(settings, burrow=burrow, reader_factory=lambda _k: reader,
                        clock=lambda: 61_000)

    def scrape() -> Scrape:
        return Scrape.of(exporter.exposition)

    def wait(predicate: Callable[[Scrape], bool], what: str) -> Scrape:
        return scrape_until(scrape, predicate, 10, what, 0.02)

    labels = {"cluster": CLUSTER, "consumer": "g", "topic": "t", "partition": 0}
    with looping(exporter):
        good = wait(lambda s: s.get(metrics.FRESHNESS.name, **labels) == 60_000, "good")
        assert good.up(CLUSTER) == 1
        burrow.broken = True
        crashed = wait(lambda s: s.up(CLUSTER) == 0, "the crash to be reported")
        assert crashed.consumer_series(CLUSTER) == 0, "the last values survived a crash"
        error = exporter.holder.current.clusters[0].health.error or ""
        crashes = exporter.holder.publications
        time.sleep(0.2)
        assert exporter.holder.publications > crashes, "the loop stopped after a crash"
        assert scrape().up(CLUSTER) == 0
        burrow.broken = False
        back = wait(lambda s: s.up(CLUSTER) == 1, "recovery after the crash")
        assert back.get(metrics.FRESHNESS.name, **labels) == 60_000
    assert "KeyError" in error
    record(
        "Exporter", "a cycle crashes on something unforeseen",
        "the Burrow source raises an unexpected `KeyError` mid-cycle (a bug, not a Burrow error)",
        "`cluster_up` 0 and every per-consumer series removed at once (not the previous "
        "cycle's values); the loop keeps cycling; the crash is logged with its traceback",
        f"correct values with the next good cycle; /healthz error while crashing: “{error}”",
        "next cycle")
