"""The `containers` suite: the chart's pods under `podman kube play` (tests/deploy/
test_image_run.py). They build a second image and start two pods, minutes on 2 cores, so the
default run (CI's included) leaves them out; `pytest -m containers` runs them. Deselected, not
skipped: a skip under CI=true would read as a gap (devstack/testing.unavailable)."""

from __future__ import annotations

import pytest

MARKER = "containers"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}: the chart's pods under podman kube play; a suite of its own, "
        f"left out unless selected with -m {MARKER}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if MARKER in (config.getoption("markexpr") or ""):
        return
    kept: list[pytest.Item] = []
    left: list[pytest.Item] = []
    for item in items:
        (left if item.get_closest_marker(MARKER) else kept).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept
