"""Read HOCON: the user's file (or text) merged over the packaged reference.conf, resolved.

`${?ENV}` overrides work in both. Parse and resolution errors become ConfigError naming the
file, so the CLI can exit 2 with one readable line.

A YAML file in the Consumer Freshness Tracker's format (``burrow:`` / ``clusters:`` with ``-``
items) is read as it is: its keys are ours, so users migrating keep their file. It is turned
into the HOCON tree it stands for, and `check --print-hocon` prints that tree.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from pyhocon import ConfigTree
from pyhocon.exceptions import ConfigException
from pyparsing import ParseBaseException

from freshness_tracker.config.hocon import (
    INCLUDE_LINE,
    INCLUDE_PROBLEM,
    MAX_CONFIG_BYTES,
    NO_URL_FIX,
    parse_hocon,
    read_config_file,
    short_parse_message,
)
from freshness_tracker.config.settings import Settings, settings_from_tree
from freshness_tracker.errors import ConfigError
from freshness_tracker.reference import reference_text

__all__ = ["is_yaml", "load_settings", "load_tree", "user_config_as_hocon"]

log = logging.getLogger(__name__)


#: A line only YAML writes: a block-sequence item (``- name: x``) or a key opening a nested
#: block (``burrow:`` with nothing after it). HOCON writes ``key {`` / ``key = [``.
#: `[^\S\n]` (whitespace but a newline), never `\s`: `^\s*` spans lines, and a run of blank
#: lines made the search quadratic (seconds for a few thousand of them).
_YAML_LINE = re.compile(r"^[^\S\n]*(-[^\S\n]+[\w.\"'-]+[^\S\n]*:"
                        r"|[\w.\"'-]+[^\S\n]*:[^\S\n]*(#.*)?$)", re.MULTILINE)
#: The CFT's Burrow API prefix, the only one there is; dropped rather than warned about.
_CFT_BURROW_API = "v3/kafka"


def is_yaml(text: str, path: str | Path | None = None) -> bool:
    """True for a YAML config (the CFT's format): a ``.yaml``/``.yml`` name or YAML-only lines."""
    if path is not None and Path(path).suffix.lower() in (".yaml", ".yml"):
        return True
    return _YAML_LINE.search(text) is not None


def _yaml_as_hocon(text: str, source: str) -> str:
    """The HOCON text a YAML config stands for (dotted librdkafka keys stay quoted)."""
    import yaml  # only YAML configs need it

    try:
        data = yaml.load(text, Loader=_loader())  # a SafeLoader without aliases
    except _AliasRefused as exc:
        raise ConfigError(source, f"uses a YAML alias (*{exc.name}) at line {exc.line}: a "
                          "config never needs one, and aliases of aliases expand without "
                          "bound", "write the value out where the alias is") from None
    except _DuplicateKey as exc:
        raise ConfigError(source, f"has the key {exc.name!r} twice in one mapping (line "
                          f"{exc.line}): YAML would keep the last silently",
                          "keep one of them") from None
    except RecursionError:
        raise ConfigError(source, "nests too deeply", "flatten the YAML") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(source, f"read as YAML (the Consumer Freshness Tracker's format) but "
                          f"not valid YAML{where}: {getattr(exc, 'problem', exc)}",
                          "fix the YAML there, or write the file in HOCON "
                          "(see reference.conf)") from None
    if data is None:
        return ""
    if not isinstance(data, dict):
        raise ConfigError(source, "read as YAML, but its top level is not a mapping",
                          "write `burrow:` and `clusters:` at the top level")
    burrow = data.get("burrow")
    if isinstance(burrow, dict) and str(burrow.get("api", "")).strip("/") == _CFT_BURROW_API:
        burrow.pop("api")
    return "".join(f"{_quote(str(k))} = {_hocon(v)}\n" for k, v in data.items())


class _DuplicateKey(Exception):
    def __init__(self, name: str, line: int) -> None:
        super().__init__(name)
        self.name, self.line = name, line


class _AliasRefused(Exception):
    def __init__(self, name: str, line: int) -> None:
        super().__init__(name)
        self.name, self.line = name, line


def _loader() -> Any:
    """yaml.SafeLoader refusing aliases: the only way a small YAML file expands into a huge
    tree (a billion laughs), and nothing a config needs."""
    import yaml

    class NoAliases(yaml.SafeLoader):
        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()  # type: ignore[no-untyped-call]
                raise _AliasRefused(str(event.anchor), event.start_mark.line + 1)
            return super().compose_node(parent, index)

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            # YAML keeps the last of two equal keys silently: a pasted block would override
            # a setting without a word, so a duplicate is refused (HOCON's merge is explicit)
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                if isinstance(key, str | int | float | bool) and key in seen:
                    raise _DuplicateKey(str(key), key_node.start_mark.line + 1)
                if isinstance(key, str | int | float | bool):
                    seen.add(key)
            return super().construct_mapping(node, deep)

    return NoAliases


#: What pyhocon reads back in a quoted string: it knows no \uXXXX (JSON's escape for non-ASCII
#: and control characters), so everything else is written as it is.
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _quote(text: str) -> str:
    """`text` as a quoted HOCON string pyhocon reads back exactly, non-ASCII included."""
    return '"' + re.sub(r'[\\"\n\r\t]', lambda m: _ESCAPES[m.group()], text) + '"'

def _hocon(value: Any, indent: str = "") -> str:
    """Render plain YAML data as HOCON, every key and string quoted (JSON is valid HOCON)."""
    inner = indent + "  "
    if isinstance(value, dict):
        if not value:
            return "{}"
        lines = [f"{inner}{_quote(str(k))} = {_hocon(v, inner)}" for k, v in value.items()]
        return "{\n" + "\n".join(lines) + f"\n{indent}}}"
    if isinstance(value, list):
        if not value:
            return "[]"
        return "[\n" + "\n".join(f"{inner}{_hocon(v, inner)}" for v in value) + f"\n{indent}]"
    if value is None or isinstance(value, int | float):  # bool is an int
        return json.dumps(value)
    return _quote(str(value))


def user_config_as_hocon(path: str | Path) -> str:
    """The user's file alone as HOCON: a YAML file converted, a HOCON file as written."""
    text = _read(Path(path), str(path))
    return _yaml_as_hocon(text, str(path)) if is_yaml(text, path) else text


def load_tree(path: str | Path | None = None, text: str | None = None) -> ConfigTree:
    """Merge the user's HOCON (file or text) over the reference and resolve substitutions.

    Both are parsed as one document, reference first, so HOCON's own rules apply: a later key
    wins, objects merge, and `key = "x"` followed by `key = ${?UNSET}` keeps "x" (pyhocon's
    `with_fallback` would drop it).
    """
    return _load_tree(path, text)[0]


def _load_tree(path: str | Path | None, text: str | None) -> tuple[ConfigTree, bool]:
    """`load_tree`, and whether the user's config was YAML: the file is read once, bounded."""
    source = str(path) if path is not None else "<text>"
    basedir = "."
    if path is not None:
        file = Path(path)
        text = _read(file, source)
        basedir = str(file.parent)
    elif text is not None and len(text.encode("utf-8")) > MAX_CONFIG_BYTES:
        raise ConfigError(source, f"is larger than {MAX_CONFIG_BYTES // 1024} KiB, more than any "
                          "config needs", "check that this is the config")
    yaml = bool(text) and is_yaml(text or "", path)
    if yaml:
        text = _yaml_as_hocon(text or "", source)
    try:
        merged: Any = parse_hocon(reference_text() + "\n" + (text or ""), source, basedir)
    except ParseBaseException as exc:
        line = exc.lineno - reference_text().count("\n") - 1
        if INCLUDE_LINE.match(exc.line):
            raise ConfigError(source, f"line {line} {INCLUDE_PROBLEM}",
                              NO_URL_FIX) from None
        raise ConfigError(source, f"not valid HOCON at line {line}, column {exc.col}"
                          f"{short_parse_message(exc)}", "check the syntax there") from None
    except ConfigException as exc:
        offset = reference_text().count("\n") + 1
        message = re.sub(r"line: (\d+)", lambda m: f"line: {int(m.group(1)) - offset}", str(exc))
        # pyhocon quotes a value it cannot concatenate: it may have come from ${SOME_PASSWORD}
        message = re.sub(r"Token .*? of type (\w+) \(index \d+\)", r"A value of type \1",
                         message, flags=re.DOTALL)
        raise ConfigError(source, f"not valid HOCON: {message}", "check the keys and "
                          "substitutions it names") from exc
    except RecursionError:
        raise ConfigError(source, "nests objects or lists too deeply",
                          "flatten the structure") from None
    if not isinstance(merged, ConfigTree):
        raise ConfigError(source, "the top level must be an object")
    return merged, yaml


def _read(file: Path, source: str) -> str:
    """The file's text, or a ConfigError saying what is wrong with the path."""
    problem = (f"{source!r} is a directory" if file.is_dir()
               else f"file {source!r} does not exist" if not file.exists()
               else f"{source!r} is not a regular file" if not file.is_file() else None)
    if problem is not None:
        raise ConfigError("--config", problem, "pass the path of a HOCON file")
    return read_config_file(str(file), source)


def load_settings(path: str | Path | None = None, text: str | None = None) -> Settings:
    """Load, merge, resolve and validate: the one entry point for configuration."""
    tree, yaml = _load_tree(path, text)
    settings = settings_from_tree(tree)
    return replace(settings, from_yaml=True) if yaml else settings
