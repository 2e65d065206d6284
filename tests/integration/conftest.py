"""Integration fixtures. The session's real stack (``stack``: Apache Kafka 3.9.1 + Burrow 1.2.1,
or your own via FT_STACK_*) comes from tests/conftest.py, shared with tests/spark.

A component that cannot start skips the integration tests locally, with the reason; under
``CI=true`` it fails the run instead. A failing test gets every component's log tail attached.
"""

from __future__ import annotations

from collections.abc import Callable, Generator

import pytest

from devstack import RealStack
from tests.stack_support import unique_namer


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> Callable[[str], str]:
    """``unique_name("topic")`` -> ``topic-<test name>-<random>``: Burrow keeps groups for days."""
    return unique_namer(request)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    local = getattr(item, "funcargs", {}).get("stack")
    if report.failed and isinstance(local, RealStack):
        report.sections.append(("devstack logs", local.logs_tail()))
    return report
