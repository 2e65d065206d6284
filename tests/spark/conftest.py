"""Spark fixtures: ONE tuned local SparkSession per pytest run, never one per test. The real stack
(``stack``) is the session's one, from the root conftest.py.

Without Java or pyspark the Spark tests skip locally with the reason; under ``CI=true`` they
fail instead, like the integration tests.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from devstack import RealStack
from devstack.testing import unavailable, unique_namer
from freshness_tracker.config import load_settings
from tests.spark.helpers import Fleet, N

#: Settings that shorten short local runs: no console progress bar, 2 shuffle partitions and
#: default parallelism (Spark's 200 make hundreds of tiny tasks for test-sized data), a 2 GiB
#: driver (read only before the JVM starts), and a serial GC with C1 only, which gives up peak
#: speed for a faster start: most of the gain, right for tests, wrong for long runs.
TEST_CONF = {
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.driver.memory": "2g",
    "spark.driver.extraJavaOptions": "-XX:+UseSerialGC -XX:TieredStopAtLevel=1",
}


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    try:
        from freshness_tracker.spark.session import get_session
    except ImportError as exc:
        unavailable(f"Spark unavailable: pyspark not installed ({exc})")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        unavailable("Spark unavailable: no java on PATH and no JAVA_HOME")
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


@pytest.fixture(scope="session")
def fleet(stack: RealStack, tmp_path_factory: pytest.TempPathFactory) -> Fleet:
    """Two topics, three groups: lagging, caught up and a second lagging group sharing reads."""
    suffix = os.urandom(4).hex()
    orders, audit = f"orders-{suffix}", f"audit-{suffix}"
    stack.create_topic(orders, partitions=3)
    stack.create_topic(audit, partitions=2)
    base = int(time.time() * 1000) - 3_600_000
    timestamps: dict[tuple[str, int], list[int]] = {}
    for topic, parts in ((orders, 3), (audit, 2)):
        for p in range(parts):
            ts = [base + 60_000 * i + 1_000 * p for i in range(N)]
            assert stack.produce(topic, p, ts) == list(range(N))
            timestamps[(topic, p)] = ts
    lagging, caught, second = f"lagging-{suffix}", f"caught-{suffix}", f"second-{suffix}"
    offsets = {
        (lagging, orders, 0): 2, (lagging, orders, 1): 5, (lagging, orders, 2): 9,
        (lagging, audit, 0): 0, (lagging, audit, 1): N,
        (caught, orders, 0): N, (caught, orders, 1): N, (caught, orders, 2): N,
        (second, orders, 0): 2, (second, audit, 1): 7,
    }  # fmt: skip
    windows = {key: stack.commit(*key, offset) for key, offset in offsets.items()}
    commits: dict[tuple[str, str, int], tuple[int, int]] = {}
    for (group, topic, p), offset in offsets.items():
        part = stack.wait_for_burrow_lag(group, topic, p, committed_offset=offset,
                                         current_lag=N - offset, timeout_s=60)
        stamp = int(part["end"]["timestamp"])
        window = windows[(group, topic, p)]
        assert window.before_ms <= stamp <= window.after_ms, (group, topic, p, window, part)
        commits[(group, topic, p)] = (offset, stamp)
    config = tmp_path_factory.mktemp("fleet") / "exporter.conf"
    config.write_text(
        f'burrow.url = "{stack.burrow_url}"\n'
        f'clusters = [{{ name = "{stack.cluster}", numConsumers = 2, '
        f'kafka {{ "bootstrap.servers" = "{stack.bootstrap_servers}" }} }}]\n'
        f'filters.groups.allow = ["{lagging}", "{caught}", "{second}"]\n'
        f'filters.topics.allow = ["{orders}", "{audit}"]\n'
        "lookup.commitLagWhenCaughtUp = true\nlookup.timeout = 15s\n")
    return Fleet(load_settings(config), config, timestamps, commits,
                 int(time.time() * 1000))
