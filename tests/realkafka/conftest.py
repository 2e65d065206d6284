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
from tests.stack_support import in_ci


class StackPool:
    """Hands out a started :class:`RealStack` per (node count, security), one alive at a time.

    Plaintext stacks are proxied (Fetch counts per broker); TLS/SASL_SSL ones cannot be (the
    proxies read frames), so keep each configuration's tests in one module."""

    def __init__(self) -> None:
        self.current: RealStack | None = None
        self.failures: dict[tuple[int, str], str] = {}

    def get(self, nodes: int, security: str = "plaintext") -> RealStack:
        key = (nodes, security)
        current = self.current
        if current is not None and (current.nodes, current.security) == key:
            return current
        if key in self.failures:
            pytest.skip(self.failures[key])  # local only: under CI=true the start raised
        self.close()
        stack = RealStack(nodes=nodes, proxied=security == "plaintext", security=security)
        try:
            stack.start()
        except Exception as exc:
            if in_ci():
                raise
            self.failures[key] = (f"real Kafka/Burrow stack ({nodes} node(s), {security}) "
                                  f"unavailable: {exc}")  # fmt: skip
            pytest.skip(self.failures[key])  # local only: under CI=true the start raised above
        self.current = stack
        return stack

    def close(self) -> None:
        stack, self.current = self.current, None
        if stack is not None:
            stack.stop()


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
