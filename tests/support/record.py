"""Run records: what a test run measured, as a small JSON file committed beside the page that
quotes it, so a figure in docs/ is rendered from a record and never typed by hand.

Opt-in: with ``FT_RECORD_DIR`` set, a module's :func:`recorder` writes ``<dir>/<name>.json`` at
the end of the session: the command, the machine (cores, load average at start and end), the
facts the tests add (versions, image ids), each timed step and each test's outcome. Unset, steps
are still run through it but nothing is measured or written. A run that failed is recorded as
failed (a step that raised, a test that failed in any phase, a non-zero exit status), so no page
can render it as passed.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

__all__ = ["RECORD_DIR_ENV", "Recorder", "machine", "recorder", "session_recorder"]

RECORD_DIR_ENV = "FT_RECORD_DIR"
PASSED, FAILED, SKIPPED, NOT_RUN = "passed", "failed", "skipped", "not run"


def machine() -> dict[str, Any]:
    """Cores, kernel and the 1-minute load average now (the machine is shared: the load says how
    much of it the run had)."""
    return {"cores": os.cpu_count(), "kernel": platform.release(),
            "load_average": round(os.getloadavg()[0], 2)}


def _commit(cwd: Path) -> str:
    result = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=cwd, capture_output=True,
                            text=True, check=False, timeout=30)
    return result.stdout.strip() if result.returncode == 0 else "unknown"


def _command(config: pytest.Config, directory: str) -> str:
    """The command as typed, the record directory (and ``CI=true``) included, the interpreter
    relative to the directory it ran in (so the record carries no machine's paths)."""
    cwd = config.invocation_params.dir
    python = Path(sys.executable)
    with contextlib.suppress(ValueError):
        python = python.relative_to(cwd)
    args = shlex.join(config.invocation_params.args)
    ci = "CI=true " if os.environ.get("CI") == "true" else ""  # components must start, no skips
    return f"{ci}{RECORD_DIR_ENV}={directory} {python} -m pytest {args}".rstrip()


class Recorder:
    """The record of one run: facts, timed steps, test outcomes; a pytest plugin while active
    (registered by :func:`recorder`), written at session finish."""

    def __init__(self, path: Path | None, scope: str = "", data: dict[str, Any] | None = None):
        self.path = path  # None: inactive, nothing written
        self.scope = scope  # nodeid prefix of the tests recorded
        self.data: dict[str, Any] = data if data is not None else {}
        self.data.setdefault("facts", {})
        self.data.setdefault("steps", [])
        self.data.setdefault("tests", {})
        self._began = time.monotonic()

    @property
    def active(self) -> bool:
        return self.path is not None

    def fact(self, key: str, value: str) -> None:
        self.data["facts"][key] = value

    @contextlib.contextmanager
    def step(self, name: str, note: str = "") -> Iterator[None]:
        """Time the block as step `name`; failed when it raises, skipped when it skips (the
        exception goes on)."""
        began = time.monotonic()
        outcome = FAILED
        try:
            yield
            outcome = PASSED
        except pytest.skip.Exception:
            outcome = SKIPPED
            raise
        finally:
            entry = {"name": name, "seconds": round(time.monotonic() - began, 1),
                     "outcome": outcome}
            self.data["steps"].append({**entry, "note": note} if note else entry)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not report.nodeid.startswith(self.scope):
            return
        name = report.nodeid.removeprefix(self.scope)
        test = self.data["tests"].setdefault(name, {"outcome": NOT_RUN})
        test[f"{report.when}_seconds"] = round(report.duration, 1)
        if report.failed:
            test["outcome"] = FAILED
        elif report.skipped and test["outcome"] != FAILED:
            test["outcome"] = SKIPPED
        elif report.when == "call" and test["outcome"] == NOT_RUN:
            test["outcome"] = PASSED

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        for item in session.items:  # selected but never reported (an interrupted run)
            if item.nodeid.startswith(self.scope):
                self.data["tests"].setdefault(item.nodeid.removeprefix(self.scope),
                                              {"outcome": NOT_RUN})
        if not (self.data["tests"] or self.data["steps"]):
            return  # none of its tests was selected: this session is no run of them
        self.finish(int(exitstatus))

    def finish(self, exit_status: int) -> None:
        """The run's outcome and end-of-run machine state; the record written (if active)."""
        outcomes = [t["outcome"] for t in self.data["tests"].values()]
        outcomes += [s["outcome"] for s in self.data["steps"]]
        self.data["exit_status"] = exit_status
        self.data["seconds"] = round(time.monotonic() - self._began, 1)
        self.data["load_average_end"] = machine()["load_average"]
        self.data["outcome"] = (
            FAILED if exit_status != 0 or FAILED in outcomes
            else PASSED if outcomes and all(o == PASSED for o in outcomes) else "incomplete")
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_suffix(".json.partial")
        partial.write_text(json.dumps(self.data, indent=2) + "\n", encoding="utf-8")
        partial.replace(self.path)


def recorder(request: pytest.FixtureRequest, name: str) -> Recorder:
    """For a module-scoped fixture: the recorder of the requesting module's tests, writing
    ``$FT_RECORD_DIR/<name>.json`` (relative to where pytest was started); inactive when unset."""
    return session_recorder(request.config, name, request.node.nodeid + "::")


def session_recorder(config: pytest.Config, name: str, scope: str) -> Recorder:
    """The recorder of every test whose node id starts with `scope` (a suite's directory, or a
    module's ``path::``), writing ``$FT_RECORD_DIR/<name>.json`` at session finish (relative to
    where pytest was started); inactive, and not registered, when the variable is unset."""
    directory = os.environ.get(RECORD_DIR_ENV, "")
    if not directory:
        return Recorder(None, scope)
    cwd = config.invocation_params.dir
    rec = Recorder(cwd / directory / f"{name}.json", scope, {
        "record": name,
        "generated": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "command": _command(config, directory),
        "commit": _commit(cwd),
        "python": platform.python_version(),
        "machine": machine(),
    })
    config.pluginmanager.register(rec, f"run-record-{name}")
    return rec
