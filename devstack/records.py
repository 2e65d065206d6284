"""Pages rendered from committed run records: the block machinery every page renderer shares.

A generated page is hand-written prose around blocks that sit between ``<!-- name:begin -->``
and ``<!-- name:end -->`` markers; a renderer fills each block from the run records committed
under ``docs/records/`` and returns the whole page (``pages(root) -> {path: text}``), and
``scripts/render_docs.py`` writes or checks every page. This module lives in devstack because
tests, benchmarks and scripts all render pages and must not import one another.

A figure must never outlive the truth of its run: a record that says it failed (a non-zero exit
status, a failed test or step, a ``failed`` status) renders as failed, one that is incomplete as
incomplete, and a record that is missing renders as "no record", never as an empty pass.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["FAILED", "INCOMPLETE", "NO_RECORD", "PASSED", "MarkerError", "cell", "load_record",
           "markers", "no_record_block", "one_block_page", "outcome_cell", "read_page",
           "record_path",
           "replace_block", "run_outcome", "source_comment"]

PASSED, FAILED, INCOMPLETE, NO_RECORD = "passed", "failed", "incomplete", "no record"
RECORDS = Path("docs") / "records"


class MarkerError(ValueError):
    """A page lacks a block's markers, has them twice or in the wrong order."""


def markers(name: str) -> tuple[str, str]:
    """The begin and end markers of block `name`."""
    return f"<!-- {name}:begin -->", f"<!-- {name}:end -->"


def replace_block(page: str, name: str, body: str, *, where: str = "the page") -> str:
    """`page` with everything between block `name`'s markers replaced by `body` (the markers
    stay, each on its own line). MarkerError, naming the page and the markers, when they are
    missing, repeated or out of order: a renderer must never silently drop a block."""
    begin, end = markers(name)
    starts, ends = page.count(begin), page.count(end)
    if starts != 1 or ends != 1:
        raise MarkerError(f"{where} must hold {begin} and {end} once each "
                          f"(found {starts} and {ends})")
    start, stop = page.index(begin), page.index(end)
    if stop < start:
        raise MarkerError(f"{where}: {end} comes before {begin}")
    return page[:start + len(begin)] + "\n" + body.strip("\n") + "\n" + page[stop:]


def read_page(root: Path, page: str) -> str:
    """The committed text of repo-relative `page` (the prose the blocks sit in)."""
    return (root / page).read_text(encoding="utf-8")


def record_path(root: Path, relative: str) -> Path:
    """``root/docs/records/<relative>``."""
    return root / RECORDS / relative


def load_record(path: Path) -> dict[str, Any] | None:
    """The record at `path`, or None when there is none (it renders as "no record")."""
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a run record is a JSON object")
    return data


def _outcomes(entries: Iterable[Any]) -> list[str]:
    return [str(e.get("outcome", "not run")) if isinstance(e, Mapping) else "not run"
            for e in entries]


def run_outcome(record: Mapping[str, Any], rows: Iterable[str] = ()) -> str:
    """passed, failed or incomplete, recomputed from the record's parts, not its summary alone.

    Failed when anything says so: a non-zero ``exit_status``, an ``outcome`` or ``status`` of
    failed, a failed test or step, or a failed row among `rows` (the outcomes the page shows).
    Passed only when the run finished (exit status 0, outcome passed or status ok) and every
    test, step and row passed; anything else (skipped, not run, no summary) is incomplete."""
    parts = _outcomes(record.get("tests", {}).values()) + _outcomes(record.get("steps", []))
    parts += list(rows)
    exit_status = record.get("exit_status", 0)
    summary = record.get("outcome", record.get("status"))
    if exit_status != 0 or summary in (FAILED, "error") or FAILED in parts:
        return FAILED
    finished = summary in (PASSED, "ok")
    return PASSED if finished and all(p == PASSED for p in parts) else INCOMPLETE


def outcome_cell(outcome: str) -> str:
    """A table cell for an outcome: a failure stands out."""
    return f"**{outcome}**" if outcome == FAILED else outcome


def cell(text: object) -> str:
    """`text` as one Markdown table cell: one line, pipes escaped, an em dash when empty."""
    return " ".join(str(text).replace("|", "\\|").split()) or "—"


def source_comment(*records: str) -> str:
    """The comment a rendered block opens with: where it comes from, and not to edit it."""
    return (f"<!-- rendered from {', '.join(records)} by `scripts/render_docs.py`: "
            "do not edit by hand -->")


def no_record_block(record: str, how: str) -> str:
    """What a block says when its record is missing: no figure at all, and how to record one."""
    return (f"**No record**: `{record}` is missing, so this page shows no figures. "
            f"Record a run: {how}")


def one_block_page(root: Path, page: str, block: str, record: str, how: str,
                   render: Callable[[dict[str, Any]], str]) -> dict[str, str]:
    """`{page: text}` for a page with one block rendered by `render` from the record at
    `record` (under docs/records/), or saying there is none and `how` to make one."""
    found = load_record(record_path(root, record))
    body = render(found) if found is not None else no_record_block(f"docs/records/{record}", how)
    return {page: replace_block(read_page(root, page), block, body, where=page)}
