"""What the exporter sets for its whole process (freshness_tracker.process): the cyclic
collector's young threshold (GC_YOUNG_THRESHOLD: a cycle's values hold no reference cycles, and
the default 700 cost ~20 % of a 100,000-partition cycle's CPU), glibc's malloc arenas
(MALLOC_ARENAS), its mmap threshold (MALLOC_MMAP_THRESHOLD) and the interpreter's switch
interval (SWITCH_INTERVAL_S). Each case runs in a fresh interpreter, since all are
process-wide."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from devstack.exporter_config import cluster_entry, exporter_config
from devstack.testing import unavailable
from freshness_tracker.process import (
    GC_YOUNG_THRESHOLD,
    MALLOC_ARENAS,
    MALLOC_MMAP_THRESHOLD,
    SWITCH_INTERVAL_S,
)

PROGRAM = """
import gc, json, sys
gc.set_threshold(*json.loads(sys.argv[1]))
sys.setswitchinterval(json.loads(sys.argv[3]))
from freshness_tracker.app import Exporter
from freshness_tracker.config import load_settings
exporter = Exporter(load_settings(text=sys.argv[2]))
try:
    print(json.dumps([gc.get_threshold(), sys.getswitchinterval()]))
finally:
    exporter.close()
"""


CONFIG = exporter_config(burrow_url="http://127.0.0.1:9",
                         clusters=[cluster_entry("c", "127.0.0.1:9")])


def _after_exporter(before: tuple[int, int, int], switch_s: float = 0.005
                    ) -> tuple[list[int], float]:
    """(the collector's thresholds, the switch interval) once an Exporter was made."""
    done = subprocess.run([sys.executable, "-c", PROGRAM, json.dumps(before), CONFIG,
                           json.dumps(switch_s)],
                          capture_output=True, text=True, timeout=60, check=True)
    thresholds, switch = json.loads(done.stdout.strip().splitlines()[-1])
    return list(thresholds), float(switch)


@pytest.mark.parametrize(("before", "after"), [
    ((700, 10, 10), [GC_YOUNG_THRESHOLD, 10, 10]),  # Python's default: raised, the rest kept
    ((2000, 5, 3), [GC_YOUNG_THRESHOLD, 5, 3]),
    ((GC_YOUNG_THRESHOLD * 2, 10, 10), [GC_YOUNG_THRESHOLD * 2, 10, 10]),  # higher: kept
    ((0, 10, 10), [0, 10, 10]),  # a disabled collector stays disabled
])
def test_exporter_raises_only_a_lower_young_threshold(
        before: tuple[int, int, int], after: list[int]) -> None:
    assert _after_exporter(before)[0] == after


@pytest.mark.parametrize(("before", "after"), [
    (0.005, SWITCH_INTERVAL_S),  # Python's default: lowered, so scrapes wait less behind cycles
    (SWITCH_INTERVAL_S / 2, SWITCH_INTERVAL_S / 2),  # already lower: kept
])
def test_exporter_lowers_only_a_higher_switch_interval(before: float, after: float) -> None:
    assert _after_exporter((700, 10, 10), before)[1] == pytest.approx(after)


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


#: An Exporter, then a mapped block freed (glibc's dynamic threshold would rise to its size)
#: and a 1 MiB block made: prints how many blocks are mapped now that were not before.
MMAP_PROGRAM = """
import ctypes, sys
class Info(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks",
                "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
from freshness_tracker.app import Exporter
from freshness_tracker.config import load_settings
exporter = Exporter(load_settings(text=sys.argv[1]))
big = bytearray(8 * 2**20)
del big
before = libc.mallinfo2().hblks
block = bytearray(2**20)
print(libc.mallinfo2().hblks - before)
exporter.close()
"""


def _mapped_after_a_big_free(env: dict[str, str]) -> int:
    done = subprocess.run([sys.executable, "-c", MMAP_PROGRAM, CONFIG], capture_output=True,
                          text=True, timeout=60, check=True, env=env)
    return int(done.stdout.strip().splitlines()[-1])


def test_the_exporter_fixes_the_mmap_threshold_unless_the_operator_set_it() -> None:
    """A 1 MiB block is still mapped (and given back when freed) after an 8 MiB one was freed:
    glibc's own rule would have raised the threshold to 8 MiB and served it from an arena."""
    if not sys.platform.startswith("linux"):
        unavailable("glibc's mmap threshold and mallinfo2 are Linux's")
    env = {k: v for k, v in os.environ.items()
           if k not in ("MALLOC_MMAP_THRESHOLD_", "GLIBC_TUNABLES")}
    assert MALLOC_MMAP_THRESHOLD < 2**20
    assert _mapped_after_a_big_free(env) == 1
    # The operator's threshold wins (here 16 MiB: the 1 MiB block comes from an arena).
    assert _mapped_after_a_big_free(env | {"MALLOC_MMAP_THRESHOLD_": str(16 * 2**20)}) == 0
