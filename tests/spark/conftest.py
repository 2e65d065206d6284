"""Spark fixtures: ONE tuned local SparkSession per pytest run (spark-notes). The real stack
(``stack``) is the session's one, from tests/conftest.py.

Without Java or pyspark the Spark tests skip locally with the reason; under ``CI=true`` they
fail instead, like the integration tests.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.stack_support import unique_namer

#: Measured to matter for short local runs (shared/reference/spark-notes.md).
TEST_CONF = {
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.driver.memory": "2g",
    "spark.driver.extraJavaOptions": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
}


def _unavailable(reason: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"Spark unavailable under CI: {reason}")
    pytest.skip(f"Spark unavailable: {reason}")  # local only: under CI=true it failed above


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    try:
        from freshness_tracker.spark.session import get_session
    except ImportError as exc:
        _unavailable(f"pyspark not installed ({exc})")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        _unavailable("no java on PATH and no JAVA_HOME")
    session = get_session("local[2]", "freshness-tracker-tests", TEST_CONF)
    try:
        yield session
    finally:
        from freshness_tracker.spark import worker

        worker.close_engines()
        session.stop()


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> Callable[[str], str]:
    return unique_namer(request, width=30)
