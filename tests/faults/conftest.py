"""Fixtures of the fault suite: its OWN real stack (Apache Kafka 3.9.1 KRaft + Burrow 1.2.1, the
broker's client listener behind a frame proxy; killing Burrow or cutting the broker here never
disturbs other test modules), a seeded scenario, and the observation log.

A component that cannot start skips the suite locally with the reason; under ``CI=true`` it fails.
Observations are written to ``$FT_FAULT_MATRIX`` (default: a file in the temp directory) at the
end of the session; ``python3 -m tests.faults.render_matrix FILE`` turns them into
docs/reliability.md.
"""

from __future__ import annotations

import os
import platform
import re
import tempfile
import time
import uuid
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from devstack import RealStack
from freshness_tracker import __version__
from freshness_tracker.cycle import now_ms
from tests.faults.harness import Certs, Matrix, make_certs
from tests.stack_support import running_stack

MATRIX_PATH = Path(os.environ.get("FT_FAULT_MATRIX") or
                   Path(tempfile.gettempdir()) / "freshness-tracker-fault-matrix.json")

_matrix = Matrix(MATRIX_PATH)
_started = time.monotonic()


@pytest.fixture(scope="session")
def matrix() -> Matrix:
    return _matrix


@pytest.fixture(scope="session")
def fault_stack() -> Iterator[RealStack]:
    """A started RealStack owned by this suite alone (never FT_STACK_*: we kill its parts)."""
    yield from running_stack(allow_external=False)


@pytest.fixture(scope="session")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture
def unique() -> Callable[[str], str]:
    def make(prefix: str) -> str:
        return f"{prefix}-{uuid.uuid4().hex[:8]}"

    return make


@dataclass
class Seeded:
    """A topic with known record times and groups with known commits, visible in Burrow.

    topic p0: 10 records at now-100 s, now-90 s, ... now-10 s; p1: 3 records.
    ``lagging`` committed p0@4 (freshness ≈ 60 s) and p1@3 (caught up);
    ``other`` committed p0@8 (freshness ≈ 20 s).
    Commits are real group commits (stamped by the broker), read by Burrow from
    ``__consumer_offsets``; freshness depends only on the record times chosen here.
    """

    topic: str
    lagging: str
    other: str
    timestamps: list[int]

    @property
    def groups(self) -> tuple[str, str]:
        return self.lagging, self.other

    def expected_freshness_ms(self, group: str) -> int:
        offset = 4 if group == self.lagging else 8
        return now_ms() - self.timestamps[offset]


def seed(stack: RealStack, prefix: str) -> Seeded:
    suffix = uuid.uuid4().hex[:8]
    topic, lagging, other = f"{prefix}-t-{suffix}", f"{prefix}-lag-{suffix}", \
        f"{prefix}-oth-{suffix}"
    stack.create_topic(topic, partitions=2, timeout_s=60)
    base = now_ms() - 100_000
    stamps = [base + 10_000 * i for i in range(10)]
    assert stack.produce(topic, 0, stamps) == list(range(10))
    assert stack.produce(topic, 1, stamps[:3]) == [0, 1, 2]
    stack.commit(lagging, topic, 0, 4)
    stack.commit(lagging, topic, 1, 3)
    stack.commit(other, topic, 0, 8)
    stack.wait_for_burrow_lag(lagging, topic, 0, 4, 6, timeout_s=60)
    stack.wait_for_burrow_lag(lagging, topic, 1, 3, 0, timeout_s=60)
    stack.wait_for_burrow_lag(other, topic, 0, 8, 2, timeout_s=60)
    return Seeded(topic, lagging, other, stamps)


def groups_regex(*prefixes: str) -> str:
    return "|".join(f"{re.escape(p)}-.*" for p in prefixes)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed:
        _matrix.mark_failed(item.nodeid)
        local = getattr(item, "funcargs", {}).get("fault_stack")
        if isinstance(local, RealStack):
            report.sections.append(("devstack logs", local.logs_tail()))
    return report


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not _matrix.rows:
        return
    _matrix.write({
        "generated": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "version": __version__,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "suite_seconds": round(time.monotonic() - _started, 1),
        "exit_status": int(exitstatus),
    })


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _matrix.rows:
        terminalreporter.write_line(
            f"fault matrix: {len(_matrix.rows)} observations -> {MATRIX_PATH}")
