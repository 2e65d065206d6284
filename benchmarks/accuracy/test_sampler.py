"""When the accuracy samplers read: a random moment of every interval, so a tool publishing on a
fixed period is read at every phase of it, not at the one phase a grid would lock onto."""

from __future__ import annotations

import json
import re
import time

import pytest
import responses

from benchmarks.accuracy.harness import HarnessConfig, RunData
from benchmarks.accuracy.sampler import Sampler, SampleTimes, Target, slot_of, stored_commit


def test_each_random_moment_lies_in_its_own_slot() -> None:
    times = SampleTimes(100.0, 1.0, random_moment=True)
    moments = [times.next(now=100.0 + k) for k in range(200)]  # the sampler keeps up
    for k, at in enumerate(moments):
        assert 100.0 + k <= at < 101.0 + k


def test_a_two_second_period_is_read_at_every_phase_not_one() -> None:
    """On a 1 s grid every read of a 2 s publisher falls at the same two phases; random
    moments spread over the whole period (both halves of it, and its quarters)."""
    grid = SampleTimes(0.0, 1.0, random_moment=False)
    grid_phases = {round(grid.next(now=float(k)) % 2.0, 6) for k in range(200)}
    assert grid_phases == {0.0, 1.0}
    spread = SampleTimes(0.0, 1.0, random_moment=True)
    phases = [spread.next(now=float(k)) % 2.0 for k in range(400)]
    quarters = {int(p // 0.5) for p in phases}
    assert quarters == {0, 1, 2, 3}
    assert 0.8 < sum(phases) / len(phases) < 1.2  # about the period's middle on average


def test_a_sampler_that_fell_behind_skips_the_slots_already_over() -> None:
    times = SampleTimes(0.0, 1.0, random_moment=False)
    assert times.next(now=0.0) == 0.0
    assert times.next(now=5.3) == 5.0  # slots 1 to 4 are over: read in slot 5, at once
    assert times.next(now=5.4) == 6.0


def test_the_same_seed_gives_the_same_moments() -> None:
    def moments(seed: int) -> list[float]:
        times = SampleTimes(0.0, 1.0, random_moment=True, seed=seed)
        return [times.next(now=float(k)) for k in range(20)]

    assert moments(3) == moments(3)
    assert moments(3) != moments(4)


def test_a_record_from_before_the_setting_reads_as_sampled_on_a_grid() -> None:
    run = RunData(HarnessConfig(), 0.0, 1.0, [], wall_s=1.0).to_json()
    assert RunData.from_json(run).config.sampling == "paired"
    del run["config"]["sampling"]
    assert RunData.from_json(run).config.sampling == "grid"


@pytest.mark.parametrize("sampling", ["paired", "random", "grid"])
def test_the_page_says_how_the_run_sampled(sampling: str) -> None:
    from benchmarks.accuracy.report import sampling_text

    text = sampling_text(HarnessConfig(sampling=sampling))
    assert ("random moment" in text) == (sampling != "grid")
    assert ("at its last answer" in text) == (sampling == "paired")


def test_samplers_with_shared_slots_read_in_the_same_intervals_of_the_clock() -> None:
    """Two samplers started at different moments, with different seeds: with shared slots their
    k-th reads fall in the same second of the clock, so reads of different tools pair up by
    :func:`slot_of`; without, each keeps its own slots, which straddle the clock's."""
    ours = SampleTimes(100.3, 1.0, random_moment=True, seed=0, shared_slots=True)
    peers = SampleTimes(100.75, 1.0, random_moment=True, seed=1, shared_slots=True)
    for k in range(100):
        a, b = ours.next(now=100.75 + k), peers.next(now=100.75 + k)
        assert slot_of(a * 1000, 1.0) == slot_of(b * 1000, 1.0) == 100 + k
    own = SampleTimes(100.75, 1.0, random_moment=True, seed=1)
    slots = [slot_of(own.next(now=100.75 + k) * 1000, 1.0) - k for k in range(100)]
    assert set(slots) == {100, 101}


def test_the_harness_reads_burrows_newest_stored_commit_not_its_cached_evaluation() -> None:
    detail = {"error": False, "topics": {"t": [
        {"offsets": [None, {"offset": 2526, "timestamp": 1_511_200_836_090, "lag": 20},
                     {"offset": 2542, "timestamp": 1_511_780_580_382, "lag": 25}],
         "owner": "/10.0.0.1", "client_id": "c-1", "current-lag": 7},
        {"offsets": [], "current-lag": 0}]}}
    assert stored_commit(detail, "t") == (2542, 7, 1_511_780_580_382)
    assert stored_commit(detail, "other") == (None, None, None)
    assert stored_commit({"topics": {"t": [{"offsets": [None, None], "current-lag": 0}]}},
                         "t") == (None, 0, None)


@responses.activate
def test_ours_reads_keep_their_moments_while_burrow_answers_slowly() -> None:
    """Burrow's answers (0.5 s each here) complete a sample on another thread: /metrics is
    still read once in every 0.2 s slot. Waiting for them, the sampler read every 0.5 s at
    best, late in the slots it did not skip."""
    def slow(_request: object) -> tuple[int, dict[str, str], str]:
        time.sleep(0.5)
        return 200, {}, json.dumps({"topics": {}})

    responses.add(responses.GET, "http://ours.test/metrics", body="")
    responses.add_callback(responses.GET, re.compile(r"http://burrow\.test/v3/kafka/c/consumer/.*"),
                           callback=slow)
    responses.add(responses.GET, re.compile(r"http://burrow\.test/v3/kafka/c/topic/.*"),
                  json={"offsets": [7]})
    sampler = Sampler("http://ours.test", "http://burrow.test", "c", [Target("s", "g", "t")],
                      interval_s=0.2, shared_slots=True)
    began = time.time()
    sampler.start(began)
    time.sleep(1.6)
    sampler.stop()
    assert len({slot_of(s.metrics_ms, 0.2) for s in sampler.samples["s"]}) >= 6  # of 8 slots
    assert all(s.leo == 7 for s in sampler.samples["s"])  # every sample completed
