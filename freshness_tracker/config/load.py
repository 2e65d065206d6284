"""Read HOCON: the user's file (or text) merged over the packaged reference.conf, resolved.

`${?ENV}` overrides work in both. Parse and resolution errors become ConfigError naming the
file, so the CLI can exit 2 with one readable line.
"""

from __future__ import annotations

import logging
import re
from importlib import resources
from pathlib import Path
from typing import Any

from pyhocon import ConfigFactory, ConfigTree
from pyhocon.exceptions import ConfigException
from pyparsing import ParseBaseException

from freshness_tracker.config.settings import Settings, settings_from_tree
from freshness_tracker.errors import ConfigError

__all__ = ["load_settings", "load_tree", "reference_text"]

log = logging.getLogger(__name__)


def reference_text() -> str:
    """The packaged reference.conf: every key with its default."""
    return resources.files("freshness_tracker.config").joinpath("reference.conf").read_text()


def load_tree(path: str | Path | None = None, text: str | None = None) -> ConfigTree:
    """Merge the user's HOCON (file or text) over the reference and resolve substitutions.

    Both are parsed as one document, reference first, so HOCON's own rules apply: a later key
    wins, objects merge, and `key = "x"` followed by `key = ${?UNSET}` keeps "x" (pyhocon's
    `with_fallback` would drop it).
    """
    source = str(path) if path is not None else "<text>"
    basedir = "."
    if path is not None:
        file = Path(path)
        if file.is_dir():
            raise ConfigError("--config", f"{str(path)!r} is a directory",
                              "pass the path of a HOCON file")
        if not file.exists():
            raise ConfigError("--config", f"file {str(path)!r} does not exist",
                              "pass the path of a HOCON file")
        if not file.is_file():
            raise ConfigError("--config", f"{str(path)!r} is not a regular file",
                              "pass the path of a HOCON file")
        try:
            text = file.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError(source, f"not UTF-8 text (byte {exc.start}: {exc.reason})",
                              "save the file as UTF-8") from exc
        except OSError as exc:
            raise ConfigError(source, f"cannot be read: {exc.strerror or exc}",
                              "check the path and its permissions") from exc
        basedir = str(file.parent)
    try:
        merged: Any = ConfigFactory.parse_string(
            reference_text() + "\n" + (text or ""), resolve=True, basedir=basedir)
    except ConfigError:
        raise
    except ParseBaseException as exc:
        line = exc.lineno - reference_text().count("\n") - 1
        raise ConfigError(source, f"not valid HOCON at line {line}, column {exc.col}: {exc.msg}",
                          "check the syntax there") from exc
    except ConfigException as exc:
        offset = reference_text().count("\n") + 1
        message = re.sub(r"line: (\d+)", lambda m: f"line: {int(m.group(1)) - offset}", str(exc))
        raise ConfigError(source, f"not valid HOCON: {message}", "check the keys and "
                          "substitutions it names") from exc
    except OSError as exc:  # pyhocon opens `include required(...)` files and lets this through
        name = exc.filename or "an included file"
        raise ConfigError(source, f"cannot include {str(name)!r}: {exc.strerror or exc}",
                          "fix the include's path, or drop required(...) if it is "
                          "optional") from None
    except RecursionError:
        raise ConfigError(source, "its includes form a cycle (a file includes itself, directly "
                          "or through another file)", "remove the include that closes the "
                          "cycle") from None
    if not isinstance(merged, ConfigTree):
        raise ConfigError(source, "the top level must be an object")
    return merged


def load_settings(path: str | Path | None = None, text: str | None = None) -> Settings:
    """Load, merge, resolve and validate: the one entry point for configuration."""
    return settings_from_tree(load_tree(path, text))
