"""The demo's per-cycle output (its first cycle printed an empty table): one waiting
line until a cycle has measured values, then the table after every cycle."""

from __future__ import annotations

import dataclasses
import io

from devstack.demo import CycleTable
from freshness_tracker.domain.model import Snapshot
from tests.support.golden import snapshot


def test_no_table_until_values_then_one_per_cycle() -> None:
    measured = snapshot()
    nothing_yet = dataclasses.replace(measured, partitions=())  # Burrow has no commits yet
    down = snapshot(up=False)
    out = io.StringIO()
    table = CycleTable(lambda: Snapshot((measured,)), began=0.0, out=out)

    for empty in (nothing_yet, down, nothing_yet):
        table(dataclasses.replace(empty, partitions=()))
    assert out.getvalue() == ("waiting for the first measured cycle (Burrow has not seen the "
                              "groups' commits yet)\n")  # said once, and no table header

    table(measured)
    table(nothing_yet)  # once measuring, every cycle shows where things stand
    text = out.getvalue()
    assert text.count("first freshness values") == 1
    assert text.count("CLUSTER  CONSUMER") == 2
    assert text.index("waiting") < text.index("first freshness values") < text.index("CLUSTER")
