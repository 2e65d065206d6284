"""Integration fixtures: one real local stack per session (or your own via FT_STACK_* env).

A component that cannot start skips the integration tests locally, with the reason; under
``CI=true`` it fails the run instead. A failing test gets every component's log tail attached.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator

import pytest

from freshness_tracker.devstack import LocalStack
from tests.stack_support import running_stack, unique_namer


@pytest.fixture(scope="session")
def stack() -> Iterator[LocalStack]:
    """A started :class:`LocalStack`, shared by the session and stopped at its end."""
    yield from running_stack()


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
    if report.failed and isinstance(local, LocalStack):
        report.sections.append(("devstack logs", local.logs_tail()))
    return report
