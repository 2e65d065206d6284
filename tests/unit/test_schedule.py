"""Cycles start at a fixed rate: every `frequency_sec` from the first, whatever a cycle takes."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from devstack.exporter import looping
from freshness_tracker.app import Exporter, next_cycle_start
from freshness_tracker.config import load_settings
from freshness_tracker.domain.model import ClusterLags
from tests.support.fakes import FakeBurrow, FakeReader, group, lag

pytestmark = pytest.mark.timeout(60)

periods = st.floats(min_value=1.0, max_value=3_600.0)
offsets = st.floats(min_value=0.0, max_value=1_000_000.0)


@given(previous=offsets, period=periods, elapsed=st.floats(min_value=0.0, max_value=100_000.0))
def test_the_next_start_is_the_first_tick_still_ahead(
        previous: float, period: float, elapsed: float) -> None:
    now = previous + elapsed
    start = next_cycle_start(previous, period, now)
    ticks = (start - previous) / period
    assert math.isclose(ticks, round(ticks), abs_tol=1e-6)  # on the grid of the first start
    assert round(ticks) >= 1  # never the start that just ran
    assert start > now - 1e-6 * max(1.0, abs(now))  # never in the past: no catch-up burst
    assert start - now <= period * (1 + 1e-9) + 1e-6  # and at most one period away


def test_a_short_cycle_waits_for_its_tick_and_a_long_one_skips_the_ticks_it_ran_over() -> None:
    assert next_cycle_start(100.0, 30.0, 100.4) == 130.0
    assert next_cycle_start(100.0, 30.0, 130.0) == 160.0
    assert next_cycle_start(100.0, 30.0, 171.0) == 190.0


class SlowBurrow(FakeBurrow):
    """Each cycle's Burrow answer takes `cost_s`; records when each cycle began."""

    def __init__(self, cost_s: float, *args: object) -> None:
        super().__init__(*args)  # type: ignore[arg-type]
        self.cost_s = cost_s
        self.starts: list[float] = []
        self.lock = threading.Lock()

    def cluster_lags(self, cluster: str, groups: Sequence[str]) -> ClusterLags:
        with self.lock:
            self.starts.append(time.monotonic())
        time.sleep(self.cost_s)
        return super().cluster_lags(cluster, groups)


def test_a_cycles_duration_does_not_stretch_the_period() -> None:
    """With a 1 s frequency and 0.6 s cycles, every cycle starts on the 1 s grid of the first
    (a fixed delay would start them 1.6 s apart: 0.6, 0.2, 0.8, 0.4 s off that grid)."""
    settings = load_settings(text="""
        burrow.url = "http://fake:1"
        clusters = [{ name = c, kafka { "bootstrap.servers" = "k:1" } }]
        frequency_sec = 1s
        cycleTimeout = 5s
    """)
    burrow = SlowBurrow(0.6, {"c": [group("c", "g", lag("c", "g", "t", 0, committed=4,
                                                          current_lag=0))]})
    exporter = Exporter(settings, burrow=burrow, reader_factory=lambda _k: FakeReader({}))
    with looping(exporter):
        deadline = time.monotonic() + 20
        while len(burrow.starts) < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
    starts = burrow.starts[:5]
    assert len(starts) == 5, starts
    off_grid = [abs(s - starts[0] - round(s - starts[0])) for s in starts[1:]]
    assert max(off_grid) < 0.3, off_grid  # a late start skips a tick; it never drifts
    assert starts[-1] - starts[0] < 4 * 1.6, starts  # and most ticks are kept
