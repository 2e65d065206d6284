"""What the exporter sets for its whole process: the cyclic collector's young threshold
(app.GC_YOUNG_THRESHOLD: a cycle's values hold no reference cycles, and the default 700 cost ~20 %
of a 100,000-partition cycle's CPU) and glibc's malloc arenas (app.MALLOC_ARENAS). Each case
runs in a fresh interpreter, since both are process-wide."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from freshness_tracker.app import GC_YOUNG_THRESHOLD, MALLOC_ARENAS
from tests.stack_support import unavailable
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


CONFIG = exporter_config(burrow_url="http://127.0.0.1:9",
                         clusters=[cluster_entry("c", "127.0.0.1:9")])


def _threshold_after_exporter(before: tuple[int, int, int]) -> list[int]:
    config = CONFIG
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


#: An Exporter, then 24 threads that each allocate from malloc (blocks above pymalloc's 512
#: bytes, below the mmap threshold) at the same time; glibc's malloc_stats() then prints one
#: "Arena N:" block per arena on stderr.
ARENAS_PROGRAM = """
import ctypes, sys, threading
from freshness_tracker.app import Exporter
from freshness_tracker.config import load_settings
exporter = Exporter(load_settings(text=sys.argv[1]))
gate = threading.Barrier(24)
def work():
    gate.wait()
    blocks = [bytearray(4096) for _ in range(2000)]
    gate.wait()
threads = [threading.Thread(target=work) for _ in range(24)]
for t in threads: t.start()
for t in threads: t.join()
ctypes.CDLL(None).malloc_stats()
exporter.close()
"""


def _arenas(env: dict[str, str]) -> int:
    done = subprocess.run([sys.executable, "-c", ARENAS_PROGRAM, CONFIG], capture_output=True,
                          text=True, timeout=60, check=True, env=env)
    return sum(line.startswith("Arena ") for line in done.stderr.splitlines())


def test_the_exporter_caps_malloc_arenas_unless_the_operator_set_them() -> None:
    if not sys.platform.startswith("linux"):
        unavailable("glibc's malloc arenas and malloc_stats are Linux's")
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    assert 1 <= _arenas(env) <= MALLOC_ARENAS
    # The operator's MALLOC_ARENA_MAX wins (here more arenas than ours): it is left alone.
    assert _arenas(env | {"MALLOC_ARENA_MAX": "8"}) > MALLOC_ARENAS
