"""Fixtures of the fault suite: its OWN real stack (Apache Kafka 3.9.1 KRaft + Burrow 1.2.1, the
broker's client listener behind a frame proxy; killing Burrow or cutting the broker here never
disturbs other test modules), a seeded scenario, and the observation log.

A component that cannot start skips the suite locally with the reason; under ``CI=true`` it fails.
Observations are written to ``$FT_FAULT_MATRIX`` (default: a file in the temp directory) at the
end of the session. With ``FT_RECORD_DIR`` set, the session's run record (command, machine, every
test's outcome, the stack's versions and the matrix rows) is written to
``$FT_RECORD_DIR/fault-suite.json``: docs/reliability.md is rendered from that record
(``scripts/render_docs.py``).
"""

from __future__ import annotations

import os
import platform
import subprocess
import tempfile
import time
from collections.abc import Generator, Iterator
from dataclasses import asdict
from pathlib import Path

import pytest

from devstack import RealStack
from devstack.cache import default_kafka_version
from devstack.testing import running_stack
from freshness_tracker import __version__
from tests.faults.harness import Certs, Matrix, Observation, Record, make_certs
from tests.support.record import Recorder, session_recorder

MATRIX_PATH = Path(os.environ.get("FT_FAULT_MATRIX") or
                   Path(tempfile.gettempdir()) / "freshness-tracker-fault-matrix.json")

_matrix = Matrix(MATRIX_PATH)
_started = time.monotonic()
_run_record = Recorder(None)


def pytest_configure(config: pytest.Config) -> None:
    global _run_record
    _run_record = session_recorder(config, "fault-suite", "tests/faults/")


def _debian_burrow_version() -> str:
    result = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "burrow"],
                            capture_output=True, text=True, check=False, timeout=30)
    return result.stdout.strip() or "unknown"


@pytest.fixture(scope="session")
def matrix() -> Matrix:
    return _matrix


@pytest.fixture
def record(matrix: Matrix, request: pytest.FixtureRequest) -> Record:
    """Logs this test's row of the matrix: ``record(area, fault, injection, during, after,
    recovery)``."""
    return lambda *row: matrix.record(Observation(*row, test=request.node.nodeid))


@pytest.fixture(scope="session")
def fault_stack() -> Iterator[RealStack]:
    """A started RealStack owned by this suite alone (never FT_STACK_*: we kill its parts)."""
    yield from running_stack(allow_external=False)


@pytest.fixture(scope="session")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A failed test's observations are marked failed (its stack logs: the root conftest)."""
    report = yield
    if report.failed:
        _matrix.mark_failed(item.nodeid)
    return report


@pytest.hookimpl(tryfirst=True)  # before the run record's own session finish writes it
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _run_record.active:
        _run_record.fact("freshness-tracker", __version__)
        _run_record.fact("kafka", default_kafka_version())
        _run_record.fact("burrow", _debian_burrow_version())
        _run_record.data["rows"] = [asdict(r) for r in _matrix.rows]
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
