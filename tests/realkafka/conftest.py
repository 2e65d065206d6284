"""Real Apache Kafka 3.9.1 + Burrow 1.2.1 (``devstack.RealStack``) for end-to-end proofs.

One stack per node count per session, with a frame proxy in front of each broker's client
listener (RTT, cut-off, Fetch counts per broker), and at most one running at a time (2 shared
cores): asking for the 3-node stack stops the 1-node one. Keep 1-node and 3-node tests in
separate modules so each starts once. A stack that cannot start skips these tests locally, with
the reason, and fails them under ``CI=true``; a failing test gets the stack's log tails attached.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from devstack import RealStack
from tests.realkafka.helpers import StackPool


@pytest.fixture(scope="session")
def stack_pool() -> Iterator[StackPool]:
    pool = StackPool()
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture
def stack(stack_pool: StackPool) -> RealStack:
    """The session's 1-node stack."""
    return stack_pool.get(1)


@pytest.fixture
def stack3(stack_pool: StackPool) -> RealStack:
    """The session's 3-node stack (replication factor 3, min.insync.replicas 2)."""
    return stack_pool.get(3)
