"""The exporter relaxes the cyclic collector's young threshold (app.GC_YOUNG_THRESHOLD): a
cycle's values hold no reference cycles, and the default 700 cost ~20 % of a 100,000-partition
cycle's CPU. Each case runs in a fresh interpreter, since the threshold is process-wide."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from freshness_tracker.app import GC_YOUNG_THRESHOLD
from tests.support.config import cluster_entry, exporter_config

PROGRAM = """
import gc, json, sys
gc.set_threshold(*json.loads(sys.argv[1]))
from freshness_tracker.app import Exporter
from freshness_tracker.config import load_settings
exporter = Exporter(load_settings(text=sys.argv[2]))
try:
    print(json.dumps(gc.get_threshold()))
finally:
    exporter.close()
"""


def _threshold_after_exporter(before: tuple[int, int, int]) -> list[int]:
    config = exporter_config(burrow_url="http://127.0.0.1:9",
                             clusters=[cluster_entry("c", "127.0.0.1:9")])
    done = subprocess.run([sys.executable, "-c", PROGRAM, json.dumps(before), config],
                          capture_output=True, text=True, timeout=60, check=True)
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize(("before", "after"), [
    ((700, 10, 10), [GC_YOUNG_THRESHOLD, 10, 10]),  # Python's default: raised, the rest kept
    ((2000, 5, 3), [GC_YOUNG_THRESHOLD, 5, 3]),
    ((GC_YOUNG_THRESHOLD * 2, 10, 10), [GC_YOUNG_THRESHOLD * 2, 10, 10]),  # higher: kept
    ((0, 10, 10), [0, 10, 10]),  # a disabled collector stays disabled
])
def test_exporter_raises_only_a_lower_young_threshold(
        before: tuple[int, int, int], after: list[int]) -> None:
    assert _threshold_after_exporter(before) == after
