"""Every generated page is its committed run records rendered: ``scripts/render_docs.py --check``
re-renders each page and must find no difference, so no figure on a page is typed by hand. The
command runs as a subprocess, as a user runs it (tests never import the benchmarks' renderers).
The machinery is checked too: a failed run renders as failed, a missing record as "no record",
a page without its markers or an unimportable renderer is an error, never a silent skip.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from devstack.records import MarkerError, markers, replace_block, run_outcome
from tests.faults import render_matrix

ROOT = Path(__file__).resolve().parents[2]
COMMAND = [sys.executable, str(ROOT / "scripts" / "render_docs.py")]


def render_docs(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*COMMAND, *args], cwd=ROOT, capture_output=True, text=True,
                          check=False, timeout=300)


def test_every_page_is_its_committed_records_rendered() -> None:
    result = render_docs("--check")
    assert result.returncode == 0, (
        f"a page differs from its records (exit {result.returncode}): run "
        f".venv/bin/python scripts/render_docs.py\n{result.stderr}\n{result.stdout[-20000:]}")


def test_every_page_with_generated_blocks_has_a_renderer() -> None:
    """A page with markers that no renderer in the table fills would go stale unchecked."""
    result = render_docs("--list")
    assert result.returncode == 0, result.stderr
    rendered = {line.split(" <- ")[0] for line in result.stdout.splitlines()}
    begin = re.compile(r"<!-- [\w.-]+:begin -->")
    candidates = [ROOT / "README.md", *ROOT.glob("docs/**/*.md")]
    with_blocks = {str(p.relative_to(ROOT)) for p in candidates
                   if begin.search(p.read_text(encoding="utf-8"))}
    assert with_blocks - rendered == set(), "pages with generated blocks that nothing renders"
    assert "docs/reliability.md" in rendered and "docs/deploy.md" in rendered


# --- the machinery -------------------------------------------------------------------------


def _fault_record(**changes: Any) -> dict[str, Any]:
    """A fault-suite record where every test passed, with `changes` applied."""
    record: dict[str, Any] = {
        "record": "fault-suite", "generated": "2000-01-01 00:00 UTC", "commit": "abc1234",
        "command": "pytest tests/faults", "python": "3.11.0",
        "machine": {"cores": 2, "kernel": "6.1", "load_average": 1.0},
        "facts": {"kafka": "3.9.1", "burrow": "1.2.1", "freshness-tracker": "0.1.0"},
        "steps": [],
        "tests": {"test_b.py::test_slow": {"outcome": "passed"},
                  "test_k.py::test_cut": {"outcome": "passed"},
                  "test_g.py::test_no_row": {"outcome": "passed"}},
        "rows": [{"area": "Kafka", "fault": "cut|1", "injection": "i", "during": "d",
                  "after": "a", "recovery": "1 cycle", "test": "tests/faults/test_k.py::test_cut",
                  "passed": True},
                 {"area": "Burrow", "fault": "slow", "injection": "i2", "during": "d2",
                  "after": "a2", "recovery": "", "test": "tests/faults/test_b.py::test_slow",
                  "passed": True}],
        "exit_status": 0, "seconds": 10.0, "load_average_end": 1.5, "outcome": "passed",
    }
    record.update(changes)
    return record


def test_a_passed_fault_run_renders_every_row_passed() -> None:
    block = render_matrix.render(_fault_record())
    assert "**Recorded run: passed** (pytest exit status 0; 3 tests: 3 passed)" in block
    assert block.index("### Burrow") < block.index("### Kafka")
    assert "| **cut\\|1** | i | d | a | 1 cycle | passed |" in block
    assert "1 of the suite's 1 tests that log no row of the matrix passed." in block
    assert "failed" not in block


@pytest.mark.parametrize("where", ["test of a row", "test without a row", "row only"])
def test_a_failed_test_renders_failed_never_passed(where: str) -> None:
    record = _fault_record(exit_status=1, outcome="failed")
    if where == "test of a row":
        record["tests"]["test_k.py::test_cut"]["outcome"] = "failed"
    elif where == "test without a row":
        record["tests"]["test_g.py::test_no_row"]["outcome"] = "failed"
    else:  # the row's test marked it failed, the test entry is gone
        del record["tests"]["test_k.py::test_cut"]
        record["rows"][0]["passed"] = False
    block = render_matrix.render(record)
    assert "**Recorded run: failed** (pytest exit status 1;" in block
    assert "Recorded run: passed" not in block
    if where == "test without a row":
        assert "| `test_g.py::test_no_row` | **failed** |" in block
        assert "| 1 cycle | passed |" in block
    else:
        assert "| 1 cycle | **failed** |" in block


def test_a_non_zero_exit_status_alone_renders_failed() -> None:
    """The run this page once showed: exit status 1, every row reading pass."""
    block = render_matrix.render(_fault_record(exit_status=1))
    assert "**Recorded run: failed** (pytest exit status 1;" in block


def test_a_skipped_or_unrun_test_renders_incomplete() -> None:
    record = _fault_record()
    record["tests"]["test_b.py::test_slow"]["outcome"] = "skipped"
    record["tests"]["test_g.py::test_no_row"]["outcome"] = "not run"
    block = render_matrix.render(record)
    assert "**Recorded run: incomplete**" in block
    assert "| a2 | — | skipped |" in block and "| `test_g.py::test_no_row` | not run |" in block


def test_run_outcome_reads_every_part_of_a_record() -> None:
    assert run_outcome({"exit_status": 0, "outcome": "passed"}) == "passed"
    assert run_outcome({"status": "ok"}) == "passed"
    assert run_outcome({"status": "failed"}) == "failed"
    assert run_outcome({"status": "incomplete"}) == "incomplete"
    assert run_outcome({}) == "incomplete"
    assert run_outcome({"outcome": "passed", "steps": [{"outcome": "failed"}]}) == "failed"
    assert run_outcome({"outcome": "passed"}, ["passed", "failed"]) == "failed"
    assert run_outcome({"outcome": "passed"}, ["passed", "skipped"]) == "incomplete"


def _copy_page(tmp_path: Path, page: str) -> Path:
    (tmp_path / page).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / page, tmp_path / page)
    return tmp_path / page


def test_a_missing_record_renders_no_record(tmp_path: Path) -> None:
    _copy_page(tmp_path, render_matrix.PAGE)
    page = render_matrix.pages(tmp_path)[render_matrix.PAGE]
    begin, end = markers(render_matrix.BLOCK)
    block = page[page.index(begin):page.index(end)]
    assert "**No record**: `docs/records/reliability/fault-suite.json` is missing" in block
    assert "Recorded run" not in block and "| fault |" not in block


def test_replace_block_keeps_the_prose_and_refuses_missing_markers() -> None:
    begin, end = markers("b")
    page = f"intro\n{begin}\nold\n{end}\noutro\n"
    assert replace_block(page, "b", "new") == f"intro\n{begin}\nnew\n{end}\noutro\n"
    for broken in ("intro\noutro\n", f"{begin}\n{begin}\n{end}\n", f"{end}\n{begin}\n"):
        with pytest.raises(MarkerError, match=r"docs/x\.md"):
            replace_block(broken, "b", "new", where="docs/x.md")


def test_a_page_without_its_markers_is_a_clear_error(tmp_path: Path) -> None:
    page = _copy_page(tmp_path, render_matrix.PAGE)
    begin, _ = markers(render_matrix.BLOCK)
    page.write_text(page.read_text(encoding="utf-8").replace(begin, ""), encoding="utf-8")
    result = render_docs("--check", "--root", str(tmp_path),
                         "--renderer", "tests.faults.render_matrix:pages")
    assert result.returncode == 2
    assert "docs/reliability.md must hold <!-- fault-matrix:begin -->" in result.stderr


def test_an_unimportable_renderer_fails_and_says_which(tmp_path: Path) -> None:
    result = render_docs("--check", "--renderer", "tests.no_such_renderer:pages")
    assert result.returncode == 2
    assert "renderer tests.no_such_renderer:pages: cannot import tests.no_such_renderer" \
        in result.stderr


def test_check_prints_a_diff_and_writes_nothing_and_a_run_writes(tmp_path: Path) -> None:
    page = _copy_page(tmp_path, render_matrix.PAGE)
    record = tmp_path / "docs" / "records" / render_matrix.RECORD
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps(_fault_record(exit_status=1)), encoding="utf-8")
    before = page.read_text(encoding="utf-8")
    args = ("--root", str(tmp_path), "--renderer", "tests.faults.render_matrix:pages")
    result = render_docs("--check", *args)
    assert result.returncode == 1
    assert "+**Recorded run: failed** (pytest exit status 1;" in result.stdout
    assert page.read_text(encoding="utf-8") == before
    assert render_docs(*args).returncode == 0
    assert "**Recorded run: failed**" in page.read_text(encoding="utf-8")
    assert render_docs("--check", *args).returncode == 0
    listed = render_docs("--list", *args).stdout
    assert "docs/reliability.md <- docs/records/reliability/fault-suite.json" in listed


FAKE_RENDERERS = '''\
import itertools
from pathlib import Path

_calls = itertools.count()


def same(root: Path) -> dict[str, str]:
    return {"docs/x.md": "x\\n"}


def changing(root: Path) -> dict[str, str]:
    return {"docs/x.md": f"{next(_calls)}\\n"}


def outside(root: Path) -> dict[str, str]:
    return {"../x.md": "x\\n"}


def not_text(root: Path) -> dict[str, int]:
    return {"docs/x.md": 1}
'''


@pytest.mark.parametrize(("renderers", "error"), [
    (["fake_pages:same", "fake_pages:same"], "page docs/x.md is rendered by both"),
    (["fake_pages:changing"], "renderer fake_pages:changing rendered differently twice"),
    (["fake_pages:outside"], "page '../x.md' is not a path inside the repository"),
    (["fake_pages:not_text"], "pages() must return {page path: text}"),
    (["fake_pages:absent"], "fake_pages has no function absent"),
])
def test_a_renderer_that_breaks_the_contract_fails_the_command(
        tmp_path: Path, renderers: list[str], error: str) -> None:
    (tmp_path / "fake_pages.py").write_text(FAKE_RENDERERS, encoding="utf-8")
    args = [arg for spec in renderers for arg in ("--renderer", spec)]
    result = subprocess.run([*COMMAND, "--check", "--root", str(tmp_path), *args], cwd=ROOT,
                            capture_output=True, text=True, check=False, timeout=300,
                            env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert result.returncode == 2, result.stdout + result.stderr
    assert error in result.stderr
