"""Freshness objectives from HOCON: a list of `{ consumer, topic?, freshness, target }`.

Either the file is the list itself or it holds `objectives = [ ... ]`:

    objectives = [
      { consumer = "orders-.*", topic = "payments", freshness = 1m, target = 99.9% }
      { consumer = "orders-.*", freshness = 5m, target = 99.5% }
      { consumer = ".*", freshness = 1h, target = 99% }
    ]

The first objective matching a series judges it (docs/spark.md). Errors are ConfigErrors naming
the entry and the key, like the exporter's own configuration.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pyhocon import ConfigFactory
from pyhocon.exceptions import ConfigException
from pyparsing import ParseBaseException

from freshness_tracker.domain.slo import Objective, parse_target
from freshness_tracker.errors import ConfigError
from freshness_tracker.reference import parse_duration

__all__ = ["load_objectives", "parse_objectives"]

_KEYS = ("consumer", "topic", "freshness", "target")


def load_objectives(path: str | Path) -> list[Objective]:
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(source, f"cannot read the objectives file: {exc.strerror or exc}",
                          "check the path") from exc
    return parse_objectives(text, source)


def parse_objectives(text: str, source: str = "objectives") -> list[Objective]:
    try:
        parsed: Any = ConfigFactory.parse_string(text, resolve=True)
    except (ConfigException, ParseBaseException) as exc:
        raise ConfigError(source, f"not valid HOCON: {exc}", "check the syntax") from exc
    entries = parsed.get("objectives", None) if isinstance(parsed, Mapping) else parsed
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"{source}: objectives", "expected a non-empty list",
                          'write objectives = [{ consumer = ".*", freshness = 5m, '
                          "target = 99.9% }]")
    return [_objective(entry, f"{source}: objectives[{i}]") for i, entry in enumerate(entries)]


def _objective(entry: Any, key: str) -> Objective:
    if not isinstance(entry, Mapping):
        raise ConfigError(key, "expected an object { consumer, topic?, freshness, target }")
    unknown = sorted(set(entry) - set(_KEYS))
    if unknown:
        raise ConfigError(f"{key}.{unknown[0]}", "unknown key",
                          "the keys are consumer, topic, freshness and target")
    for required in ("consumer", "freshness", "target"):
        if entry.get(required, None) is None:
            raise ConfigError(f"{key}.{required}", "missing")
    patterns = {"consumer": str(entry["consumer"])}
    if entry.get("topic", None) is not None:
        patterns["topic"] = str(entry["topic"])
    for name, pattern in patterns.items():
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError(f"{key}.{name}", f"invalid regex {pattern!r}: {exc}") from exc
    freshness_s = parse_duration(entry["freshness"], f"{key}.freshness")
    try:
        target = parse_target(entry["target"])
    except ValueError as exc:
        raise ConfigError(f"{key}.target", str(exc)) from exc
    return Objective(consumer=patterns["consumer"], topic=patterns.get("topic"),
                     freshness_ms=round(freshness_s * 1000), target=target)
