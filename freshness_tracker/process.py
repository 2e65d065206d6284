"""What the exporter sets for its whole process (the exporter is the process): the cyclic
collector's young threshold, glibc's malloc arenas and mmap threshold, and the interpreter's
thread switch interval. All in one place, applied once by `tune` before any thread starts;
each leaves a value the operator (or the embedding program) chose as it is.
"""

from __future__ import annotations

import ctypes
import gc
import os
import sys

__all__ = ["GC_YOUNG_THRESHOLD", "MALLOC_ARENAS", "MALLOC_MMAP_THRESHOLD", "SWITCH_INTERVAL_S",
           "tune"]

#: Allocations of container objects between two young collections of Python's cyclic garbage
#: collector (its default is 700). A large cycle allocates millions of them (Burrow's JSON, the
#: domain values, the render), and at the default the collections it triggers cost a sizeable
#: share of its CPU and free nothing: those values hold no reference cycles, so reference
#: counting frees them. The collections counted at both thresholds: docs/scale.md.
GC_YOUNG_THRESHOLD = 50_000

#: glibc's malloc arenas for the process (glibc's default is 8 per core). Each thread that
#: allocates may get an arena of its own, and the exporter runs hundreds of threads (each
#: cluster's cycle and Burrow workers, librdkafka's); memory freed into an arena stays resident
#: there. Capping them lowers the RSS of a many-cluster exporter (docs/scale.md); the image's
#: `MALLOC_ARENA_MAX=2` does the same for the container.
MALLOC_ARENAS = 2
#: Blocks from this size up are mapped on their own and given back to the system when freed.
#: glibc starts at this value but raises it (up to 32 MiB) each time a mapped block is freed,
#: after which a cycle's big blocks (/metrics' bytes, lists and dicts of 100,000 entries) come
#: from the arenas and stay resident once freed. Fixed here, which lowers a many-cluster
#: exporter's peak RSS (docs/scale.md).
MALLOC_MMAP_THRESHOLD = 128 * 1024
_M_ARENA_MAX, _M_MMAP_THRESHOLD = -8, -3  # mallopt's parameter numbers in glibc's malloc.h

#: The interpreter's thread switch interval. A scrape waits for the GIL after each syscall;
#: cycles keep dozens of threads busy (each cluster's Burrow workers), and at Python's default
#: 5 ms those waits add up to seconds per scrape with many clusters cycling; 1 ms cuts them by
#: an order of magnitude at no cost in a cycle's CPU time (docs/scale.md).
SWITCH_INTERVAL_S = 0.001


def tune() -> None:
    """Apply every process-wide setting; call it once, before threads start (arenas made
    before are not capped). Idempotent."""
    _relax_young_collections()
    _tune_malloc()
    if sys.getswitchinterval() > SWITCH_INTERVAL_S:
        sys.setswitchinterval(SWITCH_INTERVAL_S)


def _relax_young_collections() -> None:
    """Raise the collector's young threshold to GC_YOUNG_THRESHOLD; a higher threshold or a
    disabled collector (0) is left as it is."""
    young, middle, old = gc.get_threshold()
    if 0 < young < GC_YOUNG_THRESHOLD:
        gc.set_threshold(GC_YOUNG_THRESHOLD, middle, old)


def _tune_malloc() -> None:
    """Cap glibc's arenas at MALLOC_ARENAS and fix its mmap threshold at
    MALLOC_MMAP_THRESHOLD, each unless the operator set it (`MALLOC_ARENA_MAX`,
    `MALLOC_MMAP_THRESHOLD_` or a `glibc.malloc` tunable: their choice wins); a C library
    without mallopt (musl, macOS) is left alone."""
    if not sys.platform.startswith("linux"):
        return
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError):
        return
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    if not os.environ.get("MALLOC_ARENA_MAX") and "arena_max" not in tunables:
        mallopt(ctypes.c_int(_M_ARENA_MAX), ctypes.c_int(MALLOC_ARENAS))
    if not os.environ.get("MALLOC_MMAP_THRESHOLD_") and "mmap_threshold" not in tunables:
        mallopt(ctypes.c_int(_M_MMAP_THRESHOLD), ctypes.c_int(MALLOC_MMAP_THRESHOLD))
