"""Helpers of the suites that run on the real stack: an external stack (FT_STACK_*) refused
where the test needs its own, and a marker group read in the same ``__consumer_offsets``
partition as another group (an absence checked without sleeping)."""

from __future__ import annotations

import uuid

from devstack import RealStack
from devstack.testing import unavailable


def require_managed(stack: RealStack, why: str) -> None:
    """Tests that stop parts of the stack or write chosen commit times need the stack this
    suite started, not an external one (FT_STACK_*): skip locally, fail under CI=true."""
    if not stack.managed:
        unavailable(f"{why}, but FT_STACK_* points at an external stack")


def java_string_hash(text: str) -> int:
    """``String.hashCode()`` (UTF-16 code units, 32-bit signed overflow)."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i:i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def offsets_partition(group: str, partitions: int) -> int:
    """The ``__consumer_offsets`` partition Kafka writes ``group``'s commits to
    (``Utils.abs(group.hashCode()) % partitions``)."""
    h = java_string_hash(group)
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def marker_group_beside(group: str, prefix: str, partitions: int) -> str:
    """A fresh group whose commits land in ``group``'s ``__consumer_offsets`` partition: once
    Burrow shows the marker's commit, it has read everything ``group`` committed before it (an
    absence checked without sleeping)."""
    want = offsets_partition(group, partitions)
    for i in range(10_000):
        name = f"{prefix}-{uuid.uuid4().hex[:6]}-{i}"
        if offsets_partition(name, partitions) == want:
            return name
    raise AssertionError("no marker group found")  # 1 in `partitions` names fit
