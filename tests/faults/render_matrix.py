# ruff: noqa: E501  (Markdown table rows and commands cannot be wrapped)
"""Render docs/reliability.md's fault matrix from the committed record of a fault-suite run.

    CI=true FT_RECORD_DIR=docs/records/reliability .venv/bin/python -m pytest tests/faults -p no:cacheprovider
    .venv/bin/python scripts/render_docs.py

The page's prose is written by hand around the ``fault-matrix`` block; the block is the record
rendered: the run's header (exit status, counts, machine, load, versions, command) and every
row a test observed. A row's outcome is its test's outcome in the record, so a failed test
renders failed whatever the row says, and a test that failed or was skipped without logging a
row is listed too.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from devstack.records import (
    FAILED,
    PASSED,
    cell,
    one_block_page,
    outcome_cell,
    run_outcome,
    source_comment,
)

PAGE = "docs/reliability.md"
RECORD = "reliability/fault-suite.json"
BLOCK = "fault-matrix"
SCOPE = "tests/faults/"  # the recorder's node id prefix: record test names are relative to it
COMMAND = "`CI=true FT_RECORD_DIR=docs/records/reliability .venv/bin/python -m pytest tests/faults -p no:cacheprovider`, then `.venv/bin/python scripts/render_docs.py`"

AREAS = ["Burrow", "Kafka", "Exporter", "Config", "Guarantee", "Security"]
TITLES = {"Guarantee": "Guarantees", "Exporter": "The exporter itself"}


def row_outcome(row: dict[str, Any], tests: dict[str, dict[str, Any]]) -> str:
    """The outcome of the test that logged `row`, as the record holds it; a row its test marked
    failed is failed even if the test's entry is missing."""
    test = tests.get(str(row.get("test", "")).removeprefix(SCOPE))
    outcome = str(test.get("outcome", "not run")) if test else "not run"
    if row.get("passed") is False:
        return FAILED
    if test is None:  # a row always comes from a test that ran: say what is known
        return PASSED if row.get("passed") is True else "not run"
    return outcome


def render(record: dict[str, Any]) -> str:
    """The block's body (between the markers) from the record alone."""
    tests: dict[str, dict[str, Any]] = record.get("tests", {})
    rows: list[dict[str, Any]] = record.get("rows", [])
    outcomes = [row_outcome(r, tests) for r in rows]
    result = run_outcome(record, outcomes)
    counts = Counter(str(t.get("outcome", "not run")) for t in tests.values())
    count_text = ", ".join(f"{n} {o}" for o, n in sorted(counts.items(), key=lambda c: -c[1]))
    mach = record.get("machine", {})
    facts: dict[str, str] = record.get("facts", {})
    out = [
        source_comment(f"docs/records/{RECORD}"),
        f"**Recorded run: {result}** (pytest exit status {record.get('exit_status', '?')}; "
        f"{len(tests)} tests: {count_text or 'none'}), {record.get('generated', 'undated')} at "
        f"commit `{record.get('commit', 'unknown')}`.",
        "",
        f"- Stack: Apache Kafka {facts.get('kafka', '?')} (KRaft), Debian's Burrow "
        f"{facts.get('burrow', '?')}; freshness-tracker {facts.get('freshness-tracker', '?')}, "
        f"Python {record.get('python', '?')}.",
        f"- Machine: {mach.get('cores', '?')} cores (Linux {mach.get('kernel', '?')}), shared with "
        f"other runs: load average {mach.get('load_average', '?')} at the start, "
        f"{record.get('load_average_end', '?')} at the end; the suite took "
        f"{record.get('seconds', '?')} s. Timings in the rows are from this loaded machine.",
        f"- Command: `{record.get('command', '?')}`",
        "",
    ]
    order = {area: i for i, area in enumerate(AREAS)}
    ranked = sorted(zip(rows, outcomes, strict=True), key=lambda ro: order.get(ro[0]["area"], 99))
    areas = [a for a in AREAS if any(r["area"] == a for r, _ in ranked)]
    areas += sorted({r["area"] for r, _ in ranked} - set(AREAS))
    for area in areas:
        out += [f"### {TITLES.get(area, area)}", "",
                "| fault | injected as | served during the fault | after it ended | recovery | result |",
                "|---|---|---|---|---|---|"]
        out += [f"| **{cell(r['fault'])}** | {cell(r['injection'])} | {cell(r['during'])} | "
                f"{cell(r['after'])} | {cell(r.get('recovery', ''))} | {outcome_cell(o)} |"
                for r, o in ranked if r["area"] == area]
        out.append("")
    with_rows = {str(r.get("test", "")).removeprefix(SCOPE) for r in rows}
    others = {name: t for name, t in tests.items() if name not in with_rows}
    unpassed = {name: t for name, t in others.items() if t.get("outcome") != PASSED}
    out.append(f"### The suite's other tests\n\n{len(others) - len(unpassed)} of the suite's "
               f"{len(others)} tests that log no row of the matrix passed"
               + ("; these did not:" if unpassed else "."))
    if unpassed:
        out += ["", "| test | outcome |", "|---|---|"]
        out += [f"| `{cell(name)}` | {outcome_cell(str(t.get('outcome', 'not run')))} |"
                for name, t in sorted(unpassed.items())]
    return "\n".join(out)


def pages(root: Path) -> dict[str, str]:
    """docs/reliability.md with its fault-matrix block rendered from the committed record."""
    return one_block_page(root, PAGE, BLOCK, RECORD, COMMAND, render)
