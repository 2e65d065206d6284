"""Render the figures of docs/deploy.md from the committed record of the image and chart run.

    FT_RECORD_DIR=docs/records/deploy .venv/bin/python -m pytest tests/deploy/test_image_run.py \\
        -m "containers or not containers" -p no:cacheprovider
    .venv/bin/python scripts/render_docs.py          # rewrites every generated page
    .venv/bin/python scripts/render_docs.py --check  # exit 1 and a diff if one is stale

The block between the markers is the only part of the page rendered; the text around it is
written by hand and quotes no figure. The outcome is recomputed from the record's own steps and
tests: a run with any failure, or a non-zero exit status, renders as failed whatever the record's
summary says, and a step the run did not reach renders as not run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from devstack.records import (
    one_block_page,
    outcome_cell,
    run_outcome,
    source_comment,
)

PAGE = "docs/deploy.md"
RECORD = "deploy/containers.json"
BLOCK = "containers-record"
COMMAND = ("`FT_RECORD_DIR=docs/records/deploy .venv/bin/python -m pytest "
           "tests/deploy/test_image_run.py -m 'containers or not containers' -p no:cacheprovider`, "
           "then `.venv/bin/python scripts/render_docs.py`")

#: The run's rows in the order it runs them: (label, kind, key in the record).
ROWS = (
    ("base image", "step", "base"),
    ("image build", "step", "image build"),
    ("image test", "test", "test_image_runs_read_only_as_uid_10001_against_the_stack"),
    ("Burrow image", "step", "Burrow image"),
    ("external-Burrow pod", "test", "test_chart_pod_with_the_stacks_burrow"),
    ("sidecar pod", "test", "test_chart_pod_with_a_burrow_sidecar"),
)


def _rows(record: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(label, seconds, outcome) for every expected row, then any the record has besides."""
    steps = {s["name"]: s for s in record.get("steps", [])}
    tests: dict[str, dict[str, Any]] = record.get("tests", {})
    out = []
    for label, kind, key in ROWS:
        if kind == "step":
            step = steps.pop(key, None)
            if step is None:
                out.append((label, "–", "not run"))
            else:
                note = f" ({step['note']})" if step.get("note") else ""
                out.append((label + note, f"{step['seconds']:.1f}", step["outcome"]))
        else:
            test = tests.get(key)
            if test is None:
                out.append((label, "–", "not run"))
            else:
                seconds = test.get("call_seconds")
                out.append((f"{label} (`{key}`)",
                            "–" if seconds is None else f"{seconds:.1f}", test["outcome"]))
    known = {key for _, kind, key in ROWS if kind == "test"}
    out += [(name, f"{s['seconds']:.1f}", s["outcome"]) for name, s in steps.items()]
    out += [(f"`{name}`", "–" if t.get("call_seconds") is None else f"{t['call_seconds']:.1f}",
             t["outcome"]) for name, t in tests.items() if name not in known]
    return out


def outcome(record: dict[str, Any]) -> str:
    """failed if anything failed or pytest exited non-zero; passed only when every row passed;
    otherwise incomplete (skipped or not run)."""
    return run_outcome(record, [o for _, _, o in _rows(record)])


def render(record: dict[str, Any]) -> str:
    """The block's body (between the markers), from the record alone."""
    rows = _rows(record)
    facts: dict[str, str] = record.get("facts", {})
    mach = record.get("machine", {})
    passed = sum(1 for _, _, o in rows if o == "passed")
    result = outcome(record)
    lines = [
        source_comment(f"docs/records/{RECORD}"),
        f"**Recorded run: {result}** ({passed} of {len(rows)} steps passed; pytest exit status "
        f"{record.get('exit_status')}), {record.get('generated', 'undated')} at commit "
        f"`{record.get('commit', 'unknown')}`:",
        "",
        "| step | seconds | outcome |",
        "|---|--:|---|",
        *(f"| {label} | {seconds} | {outcome_cell(o)} |" for label, seconds, o in rows),
        "",
        f"- Machine: {mach.get('cores', '?')} cores (Linux {mach.get('kernel', '?')}), shared "
        f"with other test runs: load average {mach.get('load_average', '?')} at the start, "
        f"{record.get('load_average_end', '?')} at the end. From the first test's setup to the "
        f"end: {record.get('seconds', '?')} s, the dev stack's start included.",
        f"- podman {facts.get('podman', '?')}, runc {facts.get('runc', '?')}; base image "
        f"`{facts.get('base image', '?')}`: Debian {facts.get('debian', '?')}, Python "
        f"{facts.get('python', '?')}" + (f"; Debian's `burrow` {facts['burrow']}"
                                         if "burrow" in facts else "") + ".",
        "- Each test's seconds are its own body (its container or pod started, measured and "
        "removed); the images' builds and the stack's start come before it.",
        f"- Command: `{record.get('command', '?')}`",
    ]
    return "\n".join(lines)


def pages(root: Path) -> dict[str, str]:
    """docs/deploy.md with its containers-record block rendered from the committed record."""
    return one_block_page(root, PAGE, BLOCK, RECORD, COMMAND, render)
