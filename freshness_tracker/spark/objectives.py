"""Freshness objectives from HOCON: a list of `{ consumer, topic?, freshness, target }`.

Either the file is the list itself or it holds `objectives = [ ... ]`:

    objectives = [
      { consumer = "orders-.*", topic = "payments", freshness = 1m, target = 99.9% }
      { consumer = "orders-.*", freshness = 5m, target = 99.5% }
      { consumer = ".*", freshness = 1h, target = 99% }
    ]

The first objective matching a series judges it (docs/spark.md). Errors are ConfigErrors naming
the entry and the key, like the exporter's own configuration.

The same regexes run in Python (the report) and in Prometheus (`freshness-tracker rules`, Go's
RE2 syntax, fully anchored), so a regex is refused unless both parse it and read it alike: it
is checked with a real RE2 parser (google-re2), plus the few places where Go's RE2 is stricter
than the C++ one or where Python reads the same text differently.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import re2  # type: ignore[import-untyped]  # google-re2 ships no type information
from pyhocon.exceptions import ConfigException
from pyparsing import ParseBaseException

from freshness_tracker.domain.slo import Objective, parse_target
from freshness_tracker.errors import ConfigError
from freshness_tracker.reference import parse_duration

__all__ = ["check_regex", "load_objectives", "parse_objectives", "regex_problem"]

_KEYS = ("consumer", "topic", "freshness", "target")

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # the refusal is ours to report, not a line on stderr

#: Outside a character class: an escape, a class, a flag group, a named group or `{,`.
_TOKEN = re.compile(r"\\.|\[\^?\]?(?:\\.|\[:[^\]]*:\]|[^\]])*\]|\(\?([a-zA-Z-]+)[:)]"
                    r"|\(\?P<([^>]*)>|\{,\d*\}", re.DOTALL)
_GROUP_NAME = re.compile(r"[A-Za-z0-9_]+")
#: Outside a character class: an escape, a class, or a character that nests or anchors.
_STRUCTURE = re.compile(r"\\.|\[\^?\]?(?:\\.|\[:[^\]]*:\]|[^\]])*\]|[()$]", re.DOTALL)
#: Deeper groups are refused: Python's parser recurses per level and would fail with a
#: RecursionError somewhere, depending on how deep the stack already is; no name needs this.
MAX_NESTING = 100


def regex_problem(pattern: str) -> str | None:
    """Why `pattern` cannot judge the same names in the report and in Prometheus, or None.

    Python must compile it (the report matches with it; a "possible nested set" warning means
    Python reads `[[` otherwise than RE2's POSIX classes), RE2 must parse it, and Go's RE2 must
    too: it refuses non-ASCII group names, which the C++ parser takes. `{,n}` is a repetition
    in Python but literal text in RE2, and `(?U)` is "ungreedy" in RE2 but "Unicode" in Python.
    """
    structure = _structure_problem(pattern)
    if structure is not None:
        return structure
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        try:
            re.compile(pattern)
        except (re.error, FutureWarning, OverflowError, RecursionError) as exc:
            return f"invalid regex {pattern!r}: {exc}"
        except Exception as exc:  # whatever the parser raises is a refusal
            return f"invalid regex {pattern!r}: {type(exc).__name__}: {exc}"
    try:
        pattern.encode("utf-8")
    except UnicodeEncodeError:
        return f"{pattern!r} is not valid Unicode text"
    try:
        re2.compile(pattern, _RE2_OPTIONS)
    except Exception as exc:  # re2.error, or whatever else the binding raises
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        return f"{pattern!r} is not a regex Prometheus (RE2) can run: {reason}"
    for token in _TOKEN.finditer(pattern):
        flags, name = token.group(1), token.group(2)
        if flags is not None and "U" in flags:
            return (f"{pattern!r} uses (?U), ungreedy in Prometheus (RE2) but not in Python; "
                    "write lazy repetitions (*?, +?) instead")
        if name is not None and not _GROUP_NAME.fullmatch(name):
            return (f"{pattern!r} names a group {name!r}, which Prometheus (Go's RE2) refuses; "
                    "use letters A-Z, digits and _ only")
        if token.group(0).startswith("{,"):
            return (f"{pattern!r} uses {token.group(0)}, a repetition in Python but literal "
                    "text in Prometheus (RE2); write {0," + token.group(0)[2:])
    return None


def _structure_problem(pattern: str) -> str | None:
    """Groups nested deeper than `MAX_NESTING`, or a `$` that is not the pattern's last
    character. Python's `$` also matches before a final line break (`a$\\n` fully matches
    "a\\n"), RE2's only at the end of the text (that regex matches nothing in Prometheus); as the
    last character both read it as the end of the name, which full matching asks anyway."""
    depth = deepest = 0
    for token in _STRUCTURE.finditer(pattern):
        text = token.group(0)
        if text == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif text == ")":
            depth = max(depth - 1, 0)
        elif text == "$" and token.end() != len(pattern):
            return (f"{pattern!r} uses $ before its end, which Python also matches before a "
                    "final line break and Prometheus (RE2) only at the end of the name; drop "
                    "it (the regex must match the whole name anyway) or write \\n explicitly")
    if deepest > MAX_NESTING:
        return (f"{pattern!r} nests groups {deepest} deep, more than the {MAX_NESTING} allowed; "
                "write it with fewer nested groups")
    return None


def check_regex(pattern: str, key: str) -> None:
    """Raise the ConfigError naming `key` when `regex_problem` finds one."""
    problem = regex_problem(pattern)
    if problem is not None:
        raise ConfigError(key, problem, "write it in the syntax Prometheus (RE2) and Python read "
                                        "alike (docs/spark.md, objectives)")


def load_objectives(path: str | Path) -> list[Objective]:
    from freshness_tracker.config.hocon import read_config_file

    source = str(path)
    text = read_config_file(source, source)  # a regular file, of a bounded size
    return parse_objectives(text, source, basedir=str(Path(path).parent))


def parse_objectives(text: str, source: str = "objectives", *,
                     basedir: str | None = None) -> list[Objective]:
    from freshness_tracker.config.hocon import (
        INCLUDE_LINE,
        INCLUDE_PROBLEM,
        NO_URL_FIX,
        parse_hocon,
    )

    try:  # through the config's own reader: local includes only, bounded work
        parsed: Any = parse_hocon(text, source, basedir)
    except ParseBaseException as exc:
        if INCLUDE_LINE.match(exc.line):
            raise ConfigError(source, f"line {exc.lineno} {INCLUDE_PROBLEM}", NO_URL_FIX) from None
        raise ConfigError(source, f"not valid HOCON: {exc}", "check the syntax") from exc
    except ConfigException as exc:
        raise ConfigError(source, f"not valid HOCON: {exc}", "check the syntax") from exc
    except RecursionError:
        raise ConfigError(source, "nests objects or lists too deeply", "flatten it") from None
    entries = parsed.get("objectives", None) if isinstance(parsed, Mapping) else parsed
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"{source}: objectives", "expected a non-empty list",
                          'write objectives = [{ consumer = ".*", freshness = 5m, '
                          "target = 99.9% }]")
    return [_objective(entry, f"{source}: objectives[{i}]") for i, entry in enumerate(entries)]


def _objective(entry: Any, key: str) -> Objective:
    if not isinstance(entry, Mapping):
        raise ConfigError(key, "expected an object { consumer, topic?, freshness, target }")
    unknown = sorted(set(entry) - set(_KEYS))
    if unknown:
        raise ConfigError(f"{key}.{unknown[0]}", "unknown key",
                          "the keys are consumer, topic, freshness and target")
    for required in ("consumer", "freshness", "target"):
        if entry.get(required, None) is None:
            raise ConfigError(f"{key}.{required}", "missing")
    patterns = {"consumer": str(entry["consumer"])}
    if entry.get("topic", None) is not None:
        patterns["topic"] = str(entry["topic"])
    for name, pattern in patterns.items():
        check_regex(pattern, f"{key}.{name}")
    freshness_s = parse_duration(entry["freshness"], f"{key}.freshness")
    try:
        target = parse_target(entry["target"])
    except ValueError as exc:
        raise ConfigError(f"{key}.target", str(exc)) from exc
    return Objective(consumer=patterns["consumer"], topic=patterns.get("topic"),
                     freshness_ms=round(freshness_s * 1000), target=target)
