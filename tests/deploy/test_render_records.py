"""docs/deploy.md's figures are the committed record of the image and chart run, rendered (the
page itself is checked with every other one by tests/docs/test_pages_from_records.py): the
record holds every test the page shows; a failed run renders as failed, never as passed; a
missing record renders as no record; the recorder writes what the renderer reads."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Literal, cast

import pytest

from devstack.records import load_record, markers, record_path
from tests.deploy.render_records import BLOCK, PAGE, RECORD, ROWS, pages, render
from tests.support.record import Recorder

ROOT = Path(__file__).resolve().parents[2]


def _record(**changes: Any) -> dict[str, Any]:
    """A record of a run where every step and test passed, with `changes` applied."""
    record: dict[str, Any] = {
        "generated": "2000-01-01 00:00 UTC", "commit": "abc1234", "command": "pytest x",
        "machine": {"cores": 2, "kernel": "6.1", "load_average": 1.0},
        "facts": {"podman": "4.3.1", "runc": "1.1.5", "base image": "0123456789ab",
                  "debian": "12.9 (bookworm)", "python": "3.11.2"},
        "steps": [{"name": key, "seconds": 1.0, "outcome": "passed"}
                  for _, kind, key in ROWS if kind == "step"],
        "tests": {key: {"outcome": "passed", "setup_seconds": 0.1, "call_seconds": 2.0}
                  for _, kind, key in ROWS if kind == "test"},
        "exit_status": 0, "seconds": 10.0, "load_average_end": 1.5, "outcome": "passed",
    }
    record.update(changes)
    return record


def test_the_committed_record_holds_every_test_the_page_shows() -> None:
    record = load_record(record_path(ROOT, RECORD))
    assert record is not None, f"docs/records/{RECORD} is missing"
    assert {key for _, kind, key in ROWS if kind == "test"} <= set(record["tests"]), \
        "the committed record lacks a test: record a run of both the image and the chart suite"


def test_a_missing_record_renders_no_record(tmp_path: Path) -> None:
    begin, end = markers(BLOCK)
    (tmp_path / PAGE).parent.mkdir(parents=True)
    (tmp_path / PAGE).write_text(f"# Deploy\n\n{begin}\nold figures\n{end}\n\nprose\n")
    page = pages(tmp_path)[PAGE]
    assert "**No record**: `docs/records/deploy/containers.json` is missing" in page
    assert "old figures" not in page and "Recorded run" not in page
    assert page.startswith("# Deploy\n\n" + begin) and page.endswith(end + "\n\nprose\n")


def test_a_passed_run_renders_passed() -> None:
    block = render(_record())
    assert "**Recorded run: passed** (6 of 6 steps passed" in block
    assert "failed" not in block and "not run" not in block


@pytest.mark.parametrize("change", ["test", "step", "exit status", "summary"])
def test_a_failed_run_renders_failed_never_passed(change: str) -> None:
    record = _record()
    if change == "test":
        record["tests"]["test_chart_pod_with_a_burrow_sidecar"]["outcome"] = "failed"
    elif change == "step":
        record["steps"][1]["outcome"] = "failed"
    elif change == "exit status":
        record["exit_status"] = 1
    else:
        record["outcome"] = "failed"
    block = render(record)
    assert "**Recorded run: failed**" in block and "Recorded run: passed" not in block
    if change in ("test", "step"):
        assert block.count("| **failed** |") == 1


def test_a_step_not_reached_renders_not_run() -> None:
    record = _record(steps=[{"name": "base", "seconds": 1.0, "outcome": "passed"}])
    del record["tests"]["test_chart_pod_with_the_stacks_burrow"]
    block = render(record)
    assert "**Recorded run: incomplete**" in block
    assert "| image build | – | not run |" in block
    assert "| external-Burrow pod | – | not run |" in block


def test_the_rendered_tests_are_the_suites() -> None:
    """A renamed test would otherwise render as `not run` forever."""
    module = Path(__file__).with_name("test_image_run.py")
    names = {node.name for node in ast.walk(ast.parse(module.read_text(encoding="utf-8")))
             if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}
    assert {key for _, kind, key in ROWS if kind == "test"} == names


def test_the_recorder_records_a_failed_step_as_failed(tmp_path: Path) -> None:
    rec = Recorder(tmp_path / "r.json", "m.py::", {"record": "r"})
    with rec.step("base", "cached"):
        pass
    with pytest.raises(RuntimeError), rec.step("image build"):
        raise RuntimeError("build failed")
    rec.finish(0)
    written = json.loads((tmp_path / "r.json").read_text())
    assert [(s["name"], s["outcome"]) for s in written["steps"]] == \
        [("base", "passed"), ("image build", "failed")]
    assert written["steps"][0]["note"] == "cached"
    assert written["outcome"] == "failed"
    assert "Recorded run: failed" in render(written)


def test_the_recorder_records_each_tests_phases() -> None:
    rec = Recorder(None, "m.py::")

    def report(name: str, when: Literal["setup", "call", "teardown"],
               outcome: Literal["passed", "failed", "skipped"],
               module: str = "m.py") -> pytest.TestReport:
        return pytest.TestReport(f"{module}::{name}", (module, 0, name), {}, outcome, None,
                                 when, duration=1.25)

    for name in ("test_ok", "test_teardown_fails"):
        rec.pytest_runtest_logreport(report(name, "setup", "passed"))
        rec.pytest_runtest_logreport(report(name, "call", "passed"))
    rec.pytest_runtest_logreport(report("test_ok", "teardown", "passed"))
    rec.pytest_runtest_logreport(report("test_teardown_fails", "teardown", "failed"))
    rec.pytest_runtest_logreport(report("test_skipped", "setup", "skipped"))
    rec.pytest_runtest_logreport(report("test_ok", "call", "failed", "other.py"))
    assert {name: t["outcome"] for name, t in rec.data["tests"].items()} == {
        "test_ok": "passed", "test_teardown_fails": "failed", "test_skipped": "skipped"}
    assert rec.data["tests"]["test_ok"]["call_seconds"] == 1.2
    rec.finish(0)
    assert rec.data["outcome"] == "failed"


def test_a_recorder_none_of_whose_tests_ran_writes_nothing(tmp_path: Path) -> None:
    """A whole-suite session with FT_RECORD_DIR set must not leave a record of a suite it did
    not select (it would render as an incomplete run of it)."""
    rec = Recorder(tmp_path / "r.json", "tests/faults/", {"record": "r"})
    other = SimpleNamespace(items=[SimpleNamespace(nodeid="tests/unit/test_x.py::test_y")])
    rec.pytest_sessionfinish(cast(pytest.Session, other), 0)
    assert not (tmp_path / "r.json").exists()
    ran = SimpleNamespace(items=[SimpleNamespace(nodeid="tests/faults/test_x.py::test_y")])
    rec.pytest_sessionfinish(cast(pytest.Session, ran), 0)
    assert json.loads((tmp_path / "r.json").read_text())["tests"] == \
        {"test_x.py::test_y": {"outcome": "not run"}}
