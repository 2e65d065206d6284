#!/usr/bin/env python3
"""Render every generated page of docs/ (and the README's generated blocks) from the run records
committed under docs/records/, so no figure on a page is typed by hand.

    .venv/bin/python scripts/render_docs.py          # write every page that differs
    .venv/bin/python scripts/render_docs.py --check  # write nothing; exit 1 + a diff if one differs
    .venv/bin/python scripts/render_docs.py --list   # each page and the records it is rendered from

Each renderer in RENDERERS is ``module:function``, the function ``pages(root) -> {repo-relative
page path: full page text}``, computed from the records under ``root/docs/records`` alone. A
renderer that cannot be imported, raises, returns something else or renders differently twice
is an error (exit 2), never skipped: a page nobody renders would go stale unnoticed. Plots are
written by each page's own benchmark command, not here, so this needs no plotting library.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

#: Every page renderer: ``module:function`` returning {page path: page text}.
RENDERERS = (
    "tests.deploy.render_records:pages",
    "tests.faults.render_matrix:pages",
    "benchmarks.pages:pages",
    "benchmarks.compare.page:pages",
    "benchmarks.accuracy.report:pages",
)


class RenderError(Exception):
    """A renderer that cannot be used; the message names it and says why."""


_opened: set[str] | None = None  # paths opened while a renderer runs (None: not watching)


def _audit(event: str, args: tuple[Any, ...]) -> None:
    """Note every file a renderer opens, so --list can say which records each page comes from."""
    if _opened is not None and event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        _opened.add(os.fsdecode(args[0]))


def _load(spec: str) -> Callable[[Path], object]:
    module_name, _, function = spec.partition(":")
    if not module_name or not function:
        raise RenderError(f"renderer {spec!r}: expected module:function")
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # any import failure is the same error: say it, stop
        raise RenderError(f"renderer {spec}: cannot import {module_name}: "
                          f"{type(e).__name__}: {e}") from e
    pages = getattr(module, function, None)
    if not callable(pages):
        raise RenderError(f"renderer {spec}: {module_name} has no function {function}")
    return pages  # type: ignore[no-any-return]


def _call(spec: str, pages: Callable[[Path], object],
          root: Path) -> tuple[dict[str, str], set[str]]:
    """The renderer's pages, validated, and the records under root/docs/records it read."""
    global _opened
    _opened = set()
    try:
        result = pages(root)
    except Exception as e:
        raise RenderError(f"renderer {spec} failed: {type(e).__name__}: {e}") from e
    finally:
        opened, _opened = _opened, None
    if not (isinstance(result, dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in result.items())):
        raise RenderError(f"renderer {spec}: pages() must return {{page path: text}}")
    for page in result:
        path = Path(page)
        if path.is_absolute() or ".." in path.parts:
            raise RenderError(f"renderer {spec}: page {page!r} is not a path inside the repository")
    records = (root / "docs" / "records").resolve()
    read = set()
    for name in opened:
        resolved = Path(name).resolve()  # a relative name is relative to the working directory
        if resolved.is_relative_to(records):
            read.add(str(resolved.relative_to(root.resolve())))
    return result, read


def render_all(root: Path, renderers: Sequence[str]) -> list[tuple[str, str, str, set[str]]]:
    """(renderer, page, text, records read) for every page of every renderer, each rendered
    twice: a page must be the same whenever it is rendered from the same records."""
    out: list[tuple[str, str, str, set[str]]] = []
    owner: dict[str, str] = {}
    for spec in renderers:
        pages = _load(spec)
        first, read = _call(spec, pages, root)
        second, _ = _call(spec, pages, root)
        if first != second:
            raise RenderError(f"renderer {spec} rendered differently twice: it must read only "
                              "the records (no clock, no machine)")
        for page, text in first.items():
            if page in owner:
                raise RenderError(f"page {page} is rendered by both {owner[page]} and {spec}")
            owner[page] = spec
            out.append((spec, page, text, read))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true",
                      help="write nothing; exit 1 and print a diff if any page differs")
    mode.add_argument("--list", action="store_true", help="list each page and its records")
    parser.add_argument("--root", type=Path, default=ROOT,
                        help="the repository whose pages and records are used (default: this one)")
    parser.add_argument("--renderer", action="append", metavar="MODULE:FUNCTION",
                        help="render with these instead of the table (repeatable)")
    args = parser.parse_args(argv)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    root: Path = args.root.resolve()
    sys.addaudithook(_audit)
    try:
        rendered = render_all(root, args.renderer or RENDERERS)
    except RenderError as e:
        sys.stderr.write(f"render_docs: {e}\n")
        return 2
    if args.list:
        for spec, page, text, read in rendered:
            named = {r for r in read if r in text}  # a renderer of several pages: each its own
            sources = ", ".join(sorted(named or read)) or "(no record read)"
            sys.stdout.write(f"{page} <- {sources}   [{spec}]\n")
        return 0
    stale = 0
    for _, page, text, _ in rendered:
        path = root / page
        current = path.read_text(encoding="utf-8") if path.is_file() else None
        if current == text:
            continue
        stale += 1
        if args.check:
            sys.stdout.writelines(difflib.unified_diff(
                (current or "").splitlines(keepends=True), text.splitlines(keepends=True),
                f"a/{page} (committed)", f"b/{page} (rendered from its records)"))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            sys.stdout.write(f"render_docs: wrote {page}\n")
    if args.check and stale:
        sys.stderr.write(f"render_docs: {stale} of {len(rendered)} pages differ from their "
                         "records; run .venv/bin/python scripts/render_docs.py and commit them\n")
        return 1
    if not stale:
        sys.stdout.write(f"render_docs: all {len(rendered)} pages are their records rendered\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
