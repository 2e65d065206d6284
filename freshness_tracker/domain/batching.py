"""Leader batches: how the partitions to read are cut into work for one consumer each. Pure.

Why by leader: a lookup is one tiny Fetch, so its cost is round trips; one consumer assigned a
chunk of one leader's partitions is answered in a handful of Fetch requests to that broker.
Why interleaved: parallel workers (threads, or Spark tasks) taking batches in order then talk to
different brokers instead of queueing on the first one. The thread-pool engine
(`kafka/lookup.py`) and the Spark reader (`spark/reader.py`) both cut their work here.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import TypeVar

__all__ = ["leader_batches"]

_T = TypeVar("_T")


def leader_batches(by_leader: Mapping[int, Sequence[_T]], batch_size: int) -> list[list[_T]]:
    """Each leader's items in chunks of at most `batch_size`, in their order; chunks dealt
    round-robin across leaders in leader-id order (leader 1's first, leader 2's first, ...,
    leader 1's second, ...). Every item lands in exactly one batch."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    per_leader = [
        [list(items[i : i + batch_size]) for i in range(0, len(items), batch_size)]
        for _, items in sorted(by_leader.items())
    ]
    rounds = itertools.zip_longest(*per_leader)
    return [batch for round_ in rounds for batch in round_ if batch]
