"""Integration fixtures: one real local stack per session (or your own via FT_STACK_* env).

A component that cannot start skips the integration tests locally, with the reason; under
``CI=true`` it fails the run instead. A failing test gets every component's log tail attached.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Callable, Generator, Iterator

import pytest

from freshness_tracker.devstack import LocalStack


@pytest.fixture(scope="session")
def stack() -> Iterator[LocalStack]:
    """A started :class:`LocalStack`, shared by the session and stopped at its end."""
    local = LocalStack.from_env() or LocalStack()
    try:
        local.start()
    except Exception as exc:
        if os.environ.get("CI", "").lower() == "true":
            raise
        pytest.skip(f"local stack unavailable: {exc}")
    try:
        yield local
    finally:
        local.stop()


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> Callable[[str], str]:
    """``unique_name("topic")`` -> ``topic-<test name>-<random>``: Burrow keeps groups for days."""
    test = re.sub(r"[^a-zA-Z0-9]+", "-", request.node.name).strip("-")[:40]

    def make(prefix: str) -> str:
        return f"{prefix}-{test}-{uuid.uuid4().hex[:8]}"

    return make


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    local = getattr(item, "funcargs", {}).get("stack")
    if report.failed and isinstance(local, LocalStack):
        report.sections.append(("devstack logs", local.logs_tail()))
    return report
