"""The Burrow 1.2.1 compatibility stack (``devstack.legacy.LegacyStack``: ZooKeeper + Apache
Kafka 3.9.1 on it + Debian's Burrow 1.2.1), started once for this directory as its ``stack``.

It overrides the session ``stack`` (Kafka 4.1 + Burrow 1.9.5) here, so the shared helpers
(``tests/realkafka/helpers.py``, ``tests/support/``) drive it unchanged.
Skips locally when it cannot start, fails under ``CI=true`` (``devstack/testing.py``); a
failing test gets the stack's log tails attached.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from devstack.legacy import LegacyStack
from devstack.testing import running_legacy_stack


@pytest.fixture(scope="package")
def legacy_stack() -> Iterator[LegacyStack]:
    """Up for this directory only: stopped before the next suite starts its own JVMs."""
    yield from running_legacy_stack()


@pytest.fixture
def stack(legacy_stack: LegacyStack) -> LegacyStack:
    return legacy_stack
