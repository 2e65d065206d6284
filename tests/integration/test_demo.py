"""The demo as `scripts/run` starts it: before the first measured
cycle it says it is waiting, once, instead of printing an empty table; then a table of the three
groups; SIGTERM stops it with exit 0 and leaves no process and no temp file behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.demo import FIRST_VALUES, TABLE_HEADER, running_demo

pytestmark = pytest.mark.integration

WAITING = "waiting for the first measured cycle"


def _table_has_the_three_groups(seen: list[str]) -> bool:
    table = seen[next((i for i, s in enumerate(seen) if s.startswith(TABLE_HEADER)), len(seen)):]
    return all(any(f" {group} " in row for row in table) for group in ("keeps-up", "slow", "stuck"))


def test_the_demo_waits_in_one_line_then_shows_the_groups(tmp_path: Path) -> None:
    with running_demo(tmp_path) as demo:
        demo.read_until(_table_has_the_three_groups, 240)
        code = demo.stop()
    seen, text = demo.lines, demo.text
    assert code == 0, text[-3000:]
    assert "Traceback" not in text
    header = next(i for i, line in enumerate(seen) if line.startswith(TABLE_HEADER))
    first = next(i for i, line in enumerate(seen) if line.startswith(FIRST_VALUES))
    assert first < header  # no table, empty or not, before there are values
    assert sum(WAITING in line for line in seen) <= 1, text  # once at most, not per cycle
    assert all(i < first for i, line in enumerate(seen) if WAITING in line)
    assert demo.survivors == []  # Kafka, ZooKeeper, Burrow: gone
    assert list(tmp_path.iterdir()) == []  # the stack's workdir and the config: removed
