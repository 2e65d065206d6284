"""Every option of every subcommand says what it does in --help (`once --format` and
the demo's `--port` had no help text), walked over the real argparse parsers."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from devstack.demo import parser as demo_parser
from freshness_tracker.cli import _parser as cli_parser


def _undocumented(parser: argparse.ArgumentParser, path: str) -> Iterator[str]:
    """`path option` for each option, positional or subcommand without a help string."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            # argparse lists a subcommand in --help only when add_parser() got a help string
            helped = {c.dest for c in action._choices_actions if (c.help or "").strip()}
            for name, sub in action.choices.items():
                if name not in helped:
                    yield f"{path} {name} (subcommand)"
                yield from _undocumented(sub, f"{path} {name}")
        elif action.help is not argparse.SUPPRESS and not (action.help or "").strip():
            yield f"{path} {'/'.join(action.option_strings) or action.dest}"


def _commands(parser: argparse.ArgumentParser, path: str) -> Iterator[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield f"{path} {name}"
                yield from _commands(sub, f"{path} {name}")


@pytest.mark.parametrize(("name", "parser"), [
    ("freshness-tracker", cli_parser()), ("python -m devstack.demo", demo_parser()),
])  # fmt: skip
def test_every_option_has_help(name: str, parser: argparse.ArgumentParser) -> None:
    assert list(_undocumented(parser, name)) == []


def test_the_walk_reaches_every_subcommand() -> None:
    """The walk above is only as good as its reach: the nested commands are in it."""
    commands = set(_commands(cli_parser(), "freshness-tracker"))
    assert {"freshness-tracker once", "freshness-tracker check",
            "freshness-tracker history compact", "freshness-tracker spark report"} <= commands


def test_the_walk_finds_an_option_without_help() -> None:
    parser = argparse.ArgumentParser(prog="p")
    sub = parser.add_subparsers(dest="command")
    once = sub.add_parser("once", help="one cycle")
    once.add_argument("--format", choices=["a", "b"])
    sub.add_parser("bare")
    assert sorted(_undocumented(parser, "p")) == ["p bare (subcommand)", "p once --format"]


def _help(parser: argparse.ArgumentParser, *path: str) -> tuple[str, argparse.ArgumentParser]:
    """(the subcommand's line in its parent's --help, the subcommand's parser)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            line = next(c.help for c in action._choices_actions if c.dest == path[0])
            sub = action.choices[path[0]]
            return (line or "", sub) if len(path) == 1 else _help(sub, *path[1:])
    raise AssertionError(path)


def test_run_says_every_path_it_serves() -> None:
    """`run --help` named /metrics and /healthz only; it serves the status page and /readyz
    too (freshness_tracker/http.py), stops on SIGTERM and reloads on SIGHUP."""
    line, _ = _help(cli_parser(), "run")
    for path in ("/ (status page)", "/metrics", "/healthz", "/readyz", "SIGTERM", "SIGHUP"):
        assert path in line, (path, line)


def test_every_config_option_names_both_formats() -> None:
    """Every --config reads HOCON and the Consumer Freshness Tracker's YAML alike."""
    for path in (("run",), ("once",), ("check",), ("spark", "snapshot")):
        _, sub = _help(cli_parser(), *path)
        (config,) = [a for a in sub._actions if "--config" in a.option_strings]
        assert "HOCON" in (config.help or "") and "YAML" in (config.help or ""), path


def test_once_and_run_say_they_append_to_the_history_table() -> None:
    for command in ("run", "once"):
        assert "history.path" in _help(cli_parser(), command)[0], command
