"""The replica size docs/scale.md states (benchmarks/bench_scale.py `shard_size`, rendered by
benchmarks/pages.py): the CPU budget over the measured CPU per partition, never above the
largest size measured; and the real-Burrow block's same-run ratio and its warning when Burrow
restarted mid-run (its CPU counter then restarts too)."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.bench_scale import parse_sizes, shard_size
from benchmarks.pages import scale_real_burrow, scale_sizing


def test_the_budget_over_the_cpu_per_partition() -> None:
    # 100,000 partitions for 5 CPU s a cycle; half a core at 30 s is 15 CPU s a cycle
    assert shard_size(5.0, 100_000, 0.5, 30.0) == 300_000
    assert shard_size(30.0, 100_000, 0.5, 30.0) == 50_000
    assert shard_size(7.0, 20_000, 0.5, 30.0) == 42_857  # rounded down: within the budget


@pytest.mark.parametrize("cpu_s, partitions", [(0.0, 100), (-1.0, 100), (1.0, 0)])
def test_no_size_from_nothing(cpu_s: float, partitions: int) -> None:
    with pytest.raises(ValueError):
        shard_size(cpu_s, partitions, 0.5, 30.0)


def test_sizes_are_group_counts_smallest_first() -> None:
    assert parse_sizes("5000,1000,,1000") == [1000, 5000]


def _sizing(cold: float, partitions: int = 100_000) -> dict[str, Any]:
    budget = 0.5 * 30.0
    return {"partitions": partitions, "cpu_s_cold": cold, "cpu_s_warm": cold / 2,
            "budget_cores": 0.5, "frequency_s": 30.0, "budget_share_cold": cold / budget,
            "budget_share_warm": cold / 2 / budget,
            "per_replica_cold": shard_size(cold, partitions, 0.5, 30.0),
            "per_replica_warm": shard_size(cold / 2, partitions, 0.5, 30.0)}


def test_the_replica_size_is_capped_at_the_largest_size_measured() -> None:
    text = scale_sizing(_sizing(5.0))
    assert "300,000 partitions per replica (cold cycles)" in text  # the extrapolation, shown
    assert "**100,000 partitions per replica, N = ceil(partitions ÷ 100,000)**" in text
    assert "**33.3% of the budget**" in text


def test_a_replica_over_budget_is_sized_below_the_size_measured() -> None:
    text = scale_sizing(_sizing(30.0))
    assert "**50,000 partitions per replica, N = ceil(partitions ÷ 50,000)**" in text
    assert "**200.0% of the budget**" in text


def _cycle(cpu: float, burrow: float) -> dict[str, Any]:
    return {"cpu_s": cpu, "wall_s": 4.0, "burrow_cpu_s": burrow, "partitions": 100_000,
            "kafka_reads": 0, "cache_hits": 0, "read_failures": 0, "up": True, "VmHWM": 200.0}


def _burrow_record(restarted: bool) -> dict[str, Any]:
    scrape = {"n": 40, "p50_s": 0.1, "p99_s": 0.4, "max_s": 0.5, "bytes": 40_000_000}
    return {
        "versions": {"burrow": "Burrow 1.2.1"},
        "ratios": {"burrow_over_exporter_cpu": {"cold": 0.5, "warm": 1.25}},
        "values": {
            "args": {"groups": 5000, "partitions": 20, "topics": 20, "lagging": 0.1,
                     "scrapers": 4, "rounds": 10},
            "listing": {"commit_s": 30.0, "listed_after_first_commit_s": 42.0,
                        "listed_after_last_commit_s": 12.0, "burrow_cpu_s": 9.0},
            "burrow_idle": {"seconds": 10.0, "cpu_s": 1.0},
            "cycles": [_cycle(8.0, 4.0), _cycle(4.0, 5.0)],
            "scrape": {"plain": scrape, "gzip": scrape},
            "scrape_during_cycle": {"plain": scrape, "gzip": scrape, "cycle": _cycle(4.0, 5.0)},
            "hwm_mb": 300.0, "burrow_hwm_mb": 150.0, "burrow_restarted": restarted,
            "burrow_settings": {"topic_refresh_s": 1, "offset_refresh_s": 1,
                                "storage": "inmemory", "storage_workers": 4, "intervals": 10,
                                "evaluator_expire_cache_s": 1},
        },
    }


def test_the_real_burrow_block_gives_burrow_over_exporter_cpu() -> None:
    text = scale_real_burrow(_burrow_record(restarted=False))
    assert "**1.25×** warm (median), 0.50× cold" in text
    assert "**42.0 s** after the first commit" in text
    # Burrow idled at 0.1 of a core: 5 CPU s over a 4 s cycle is 4.6 above idle
    assert "| warm 1 | 100,000 | 0 | 4.00 | 4.00 | 5.00 | 4.60 | 1.25× |" in text
    assert "restarted" not in text
    assert "broker offsets every 1 s (inmemory storage, 4 workers" in text


def test_a_burrow_restart_is_said() -> None:
    assert "**Burrow restarted during the run**" in scale_real_burrow(
        _burrow_record(restarted=True))
