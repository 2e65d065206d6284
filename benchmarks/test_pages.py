"""The performance, scale and Spark pages rendered from run records (benchmarks/pages.py):
a passed run's figures come from its record, a failed run shows as failed with none, and a
missing record says how to make one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.pages import PAGES, PERFORMANCE, SCALE, SPARK, pages
from devstack.records import markers


def _skeleton(root: Path) -> None:
    """Each page as prose around empty blocks."""
    for page, blocks in PAGES.items():
        text = "# page\n\n" + "".join(
            "\n".join(markers(name)) + "\n\nprose\n\n" for name, *_ in blocks)
        (root / page).parent.mkdir(parents=True, exist_ok=True)
        (root / page).write_text(text)


def _record(root: Path, relative: str, **fields: Any) -> None:
    path = root / "docs" / "records" / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({
        "bench": path.stem, "command": f"python3 -m benchmarks.{path.stem}",
        "started": "2026-01-01T00:00:00Z", "finished": "2026-01-01T00:10:00Z",
        "machine": {"cores": 2, "load_start": [1.0, 2.0, 3.0], "load_end": [4.0, 5.0, 6.0]},
        "versions": {"librdkafka": "2.0.0"}, **fields}))


def _cycle_summary(**overrides: Any) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "batched_cycle_failures": 0, "naive_cycle_failures": 0, "not_found_engine": 0,
        "fetch_per_broker_per_batch": {"batched_cycle": {"1": 2.0},
                                       "batched_engine": {"1": 1.95}},
        "naive_fetch_per_broker_partition": {"naive_cycle": {"1": 1.1}},
        "fetch_per_lookup": {"batched_cycle": {"proxy": 0.005, "rdkafka": 0.005}},
        "second_cycle_reads": 0, "second_cycle_cache_hits": 4000,
        "second_cycle_fetch_frames": 0,
    }
    return summary | overrides


CYCLE_VALUES = {
    "args": {"partitions": 2000, "min_lag": 1, "max_lag": 3, "reps": 3,
             "naive_fetch_wait_ms": 0, "naive_prop": "None", "compare_prop": "None",
             "kafka_prop": "None", "big_partitions": 0, "rss_reps": 3},
    "nodes": {"1": {"kafka_version": "3.9.1", "burrow": "Debian's 1.2.1",
                    "summary": {"0": _cycle_summary(), "1": _cycle_summary()}}},
}
CYCLE_RATIOS = {"1": {"0": {"cycle_ratio": 3.14, "engine_ratio": 5.0},
                      "1": {"cycle_ratio": 7.25, "engine_ratio": 11.5}}}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    _skeleton(tmp_path)
    return tmp_path


def test_a_passed_run_renders_its_ratios_and_its_machine(root: Path) -> None:
    _record(root, "performance/bench_cycle.json", status="ok", values=CYCLE_VALUES,
            ratios=CYCLE_RATIOS)
    page = pages(root)[PERFORMANCE]
    assert "**3.1×**" in page and "**7.2×**" in page and "**11.5×**" in page
    assert "Kafka 3.9.1 + Burrow 1.2.1" in page
    assert "4.0/5.0/6.0 at the end" in page
    assert "records/performance/bench_cycle.json" in page
    assert "prose" in page  # the hand-written text around the blocks stays


def test_a_failed_run_renders_as_failed_with_no_figures(root: Path) -> None:
    _record(root, "performance/bench_cycle.json", status="failed",
            error="RuntimeError: no leader", values=CYCLE_VALUES, ratios=CYCLE_RATIOS)
    page = pages(root)[PERFORMANCE]
    assert "**This run failed** (RuntimeError: no leader)" in page
    assert "×**" not in page  # not one ratio of the failed run


def test_a_missing_record_says_how_to_record_one(root: Path) -> None:
    rendered = pages(root)
    assert set(rendered) == {PERFORMANCE, SCALE, SPARK}
    for page in rendered.values():
        assert "**No record**" in page and "--record docs/records/" in page


def test_rendering_is_deterministic_and_idempotent(root: Path) -> None:
    _record(root, "performance/bench_cycle.json", status="ok", values=CYCLE_VALUES,
            ratios=CYCLE_RATIOS)
    first = pages(root)
    for page, text in first.items():
        (root / page).write_text(text)
    assert pages(root) == first


def test_a_run_that_raises_writes_a_failed_record_and_still_raises(tmp_path: Path) -> None:
    from benchmarks.common import RunRecord

    def boom() -> None:
        raise RuntimeError("produce timed out")

    with pytest.raises(RuntimeError):
        RunRecord("bench_x", []).measuring(tmp_path, boom)
    written = json.loads((tmp_path / "bench_x.json").read_text())
    assert written["status"] == "failed" and "produce timed out" in written["error"]
    assert RunRecord("bench_y", []).measuring(None, lambda: 7) == 7
    assert not (tmp_path / "bench_y.json").exists()
