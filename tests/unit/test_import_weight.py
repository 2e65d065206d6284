"""What importing the config and the metric catalogue loads: tools that only validate a config or
need a metric name (the chart's checks, the rules and dashboard generators, the Spark jobs) must
not pull in the listener, the renderers or the clients. Each import runs in a fresh interpreter,
so what other tests imported does not count."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

_PROGRAM = """
import json, sys
before = set(sys.modules)
import {module}
print(json.dumps(sorted(set(sys.modules) - before)))
"""

#: Modules importing the config must not load: the listener and everything under sinks (the
#: exposition cache, the renderers), prometheus_client (its registry), and the clients.
_NOT_FOR_CONFIG = ("freshness_tracker.http", "freshness_tracker.sinks", "prometheus_client",
                   "confluent_kafka", "requests")


def _loaded_by(module: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run([sys.executable, "-c", _PROGRAM.format(module=module)], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=60, check=True)
    loaded: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    assert module in loaded  # the program imported it here, not before
    return loaded


def _within(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def test_the_config_loads_no_listener_renderer_or_client() -> None:
    loaded = _loaded_by("freshness_tracker.config")
    assert [m for m in loaded if _within(m, _NOT_FOR_CONFIG)] == []
    assert "freshness_tracker.metrics" in loaded  # its names come from the catalogue


def test_the_catalogue_loads_only_the_standard_library_and_the_domain() -> None:
    loaded = _loaded_by("freshness_tracker.metrics")
    ours = ("freshness_tracker.domain", "freshness_tracker.metrics")
    foreign = [m for m in loaded if m != "freshness_tracker" and not _within(m, ours)
               and m.partition(".")[0] not in sys.stdlib_module_names]
    assert foreign == []
