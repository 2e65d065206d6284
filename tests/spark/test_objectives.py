"""Objectives from HOCON: both shapes, units, percent targets, and errors naming the key."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from freshness_tracker.domain.slo import Objective
from freshness_tracker.errors import ConfigError
from freshness_tracker.spark.objectives import load_objectives, parse_objectives


def test_both_shapes_units_and_targets(tmp_path: Path) -> None:
    listed = parse_objectives('[{ consumer = "orders-.*", topic = payments, freshness = 90s, '
                              "target = 99.9% }]")
    assert listed == [Objective("orders-.*", 90_000, Fraction(999, 1000), topic="payments")]
    path = tmp_path / "slo.conf"
    path.write_text("""
        objectives = [
          { consumer = "a", freshness = 5m, target = 99.5% }
          { consumer = ".*", freshness = 1h, target = 0.9 }
          { consumer = "b", freshness = 250ms, target = 95 }
        ]""")
    loaded = load_objectives(path)
    assert [(o.freshness_ms, o.target, o.topic) for o in loaded] == [
        (300_000, Fraction(995, 1000), None), (3_600_000, Fraction(9, 10), None),
        (250, Fraction(19, 20), None)]


@pytest.mark.parametrize(("text", "key"), [
    ("objectives = []", "objectives"),
    ('objectives = [{ freshness = 5m, target = 99% }]', "objectives[0].consumer"),
    ('objectives = [{ consumer = a, target = 99% }]', "objectives[0].freshness"),
    ('objectives = [{ consumer = a, freshness = 5m, target = 120% }]', "objectives[0].target"),
    ('objectives = [{ consumer = "(", freshness = 5m, target = 99% }]', "objectives[0].consumer"),
    ('objectives = [{ consumer = a, freshness = soon, target = 99% }]',
     "objectives[0].freshness"),
    ('objectives = [{ consumer = a, freshnes = 5m, target = 99% }]', "objectives[0].freshnes"),
    ("objectives = [ {", "slo"),
    # Python's parser raised RecursionError, a traceback out of `spark report`
    ('objectives = [{ consumer = a, topic = "' + "(" * 1001 + "a" + ")" * 1001
     + '", freshness = 5m, target = 99% }]', "objectives[0].topic"),
    ('objectives = [{ consumer = "a$\\n", freshness = 5m, target = 99% }]',
     "objectives[0].consumer"),
])
def test_errors_name_the_key(text: str, key: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_objectives(text, "slo")
    assert key in str(err.value)


def test_missing_file() -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_objectives("/nonexistent/slo.conf")
