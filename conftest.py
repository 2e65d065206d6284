"""Shared test setup of tests/ and of the benchmarks' own tests (benchmarks/): hypothesis
profiles, an environment free of stray overrides, the session's real stack."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Generator, Iterator

import pytest
from hypothesis import HealthCheck, settings

from devstack import RealStack
from devstack.testing import running_stack, unique_namer

settings.register_profile("dev", max_examples=200, deadline=None)
settings.register_profile("ci", max_examples=500, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture(autouse=True)
def _clean_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    """Our own FRESHNESS_TRACKER_* and Burrow's BURROW_* variables must not leak into tests."""
    for name in list(os.environ):
        if name.startswith(("FRESHNESS_TRACKER_", "BURROW_")):
            monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def stack() -> Iterator[RealStack]:
    """The session's real stack (Kafka 3.9.1 + Burrow 1.2.1, 1 node, proxied), shared by
    tests/integration and tests/spark: one JVM per run instead of one per directory on 2 cores.
    Suites that stop parts of it or need 3 nodes (faults, realkafka) override it with their own."""
    yield from running_stack()


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> Callable[[str], str]:
    """``unique_name("topic")`` -> ``topic-<test name>-<random>``: Burrow keeps groups for days."""
    return unique_namer(request)


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """The CLI's `main` points the root logger at its own handlers: put pytest's back after."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


#: The stack fixtures whose logs a failed test's report carries.
_STACK_FIXTURES = ("stack", "stack3", "secure_stack", "fault_stack")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failed test's report ends with the logs of the real stack(s) it used."""
    report = yield
    funcargs = getattr(item, "funcargs", {})
    for name in _STACK_FIXTURES:
        local = funcargs.get(name)
        if report.failed and isinstance(local, RealStack):
            report.sections.append((f"real stack logs ({name})", local.logs_tail()))
    return report
