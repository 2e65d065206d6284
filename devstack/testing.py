"""The one way test suites start the real local stack (Apache Kafka 3.9.1 + Burrow 1.2.1,
``devstack.RealStack``), and the Burrow 1.2.1 compatibility stack (Kafka 3.9.1 on ZooKeeper,
``devstack.legacy.LegacyStack``): skip locally, FAIL under CI=true. Here, not under tests/,
because the benchmarks' own tests start the stack the same way (the root conftest.py)."""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Callable, Iterator
from typing import Any, NoReturn, Protocol, TypeVar

import pytest

from devstack import MultiClusterStack, RealStack
from devstack.legacy import LegacyStack


class _Stack(Protocol):
    def start(self) -> Any: ...
    def stop(self) -> None: ...


S = TypeVar("S", bound=_Stack)


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def unavailable(reason: str) -> NoReturn:
    """A component a test needs is missing: skip locally, with the reason; fail under CI=true,
    where scripts/install must have provided it (a skip there would hide the gap)."""
    if in_ci():
        pytest.fail(reason)
    pytest.skip(reason)


def running_stack(*, allow_external: bool = True, nodes: int = 1, proxied: bool = True,
                  kafka_version: str | None = None, burrow: bool = True) -> Iterator[RealStack]:
    """Yield a started RealStack (or the FT_STACK_* one when allowed), stopped afterwards.

    Proxied by default: each broker's client listener sits behind a frame proxy, so tests can add
    RTT, cut a broker off and count requests. ``kafka_version``/``burrow`` as in RealStack (the
    default: Kafka 3.9.1 with Burrow 1.2.1). A component that cannot start skips the tests
    locally, with the reason, and fails them in CI.
    """
    local = (RealStack.from_env() if allow_external else None) or RealStack(
        nodes=nodes, proxied=proxied, kafka_version=kafka_version, burrow=burrow)
    yield from _started(local, "local stack")


def running_legacy_stack() -> Iterator[LegacyStack]:
    """Yield a started Burrow 1.2.1 stack (ZooKeeper + Kafka 3.9.1 + Debian's Burrow 1.2.1),
    stopped afterwards. Never an external one (FT_STACK_* points at a current stack). Like
    :func:`running_stack`: a stack that cannot start skips locally, with the reason, and fails
    under CI=true."""
    yield from _started(LegacyStack(), "Burrow 1.2.1 stack")


def running_multi_cluster_stack(*clusters: str) -> Iterator[MultiClusterStack]:
    """Yield started Kafka clusters named ``clusters`` (1 node each, proxied) read by one
    Burrow 1.2.1, stopped afterwards; like :func:`running_stack`, one that cannot start skips
    locally and fails under CI=true."""
    yield from _started(MultiClusterStack(clusters), f"{len(clusters)}-cluster stack")


def _started(local: S, what: str) -> Iterator[S]:
    """``local`` started, stopped afterwards; one that cannot start skips locally, with the
    reason, and fails under CI=true."""
    try:
        local.start()
    except Exception as exc:
        if in_ci():
            raise
        pytest.skip(f"{what} unavailable: {exc}")  # local only: under CI=true it raised
    try:
        yield local
    finally:
        local.stop()


def unique_namer(request: pytest.FixtureRequest, width: int = 40) -> Callable[[str], str]:
    """``make("topic")`` -> ``topic-<test name>-<random>``: Burrow keeps groups for days."""
    test = re.sub(r"[^a-zA-Z0-9]+", "-", request.node.name).strip("-")[:width]

    def make(prefix: str) -> str:
        return f"{prefix}-{test}-{uuid.uuid4().hex[:8]}"

    return make
