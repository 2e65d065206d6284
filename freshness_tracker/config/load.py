"""Read HOCON: the user's file (or text) merged over the packaged reference.conf, resolved.

`${?ENV}` overrides work in both. Parse and resolution errors become ConfigError naming the
file, so the CLI can exit 2 with one readable line.
"""

from __future__ import annotations

import logging
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
    """Merge the user's HOCON (file or text) over the reference and resolve substitutions."""
    source = str(path) if path is not None else "<text>"
    try:
        reference = ConfigFactory.parse_string(reference_text(), resolve=False)
        if path is not None:
            file = Path(path)
            if not file.is_file():
                raise ConfigError("--config", f"file {str(path)!r} does not exist",
                                  "pass the path of a HOCON file")
            user = ConfigFactory.parse_file(str(file), resolve=False)
        else:
            user = ConfigFactory.parse_string(text or "", resolve=False)
        merged: Any = user.with_fallback(reference, resolve=True)
    except ConfigError:
        raise
    except (ConfigException, ParseBaseException) as exc:
        raise ConfigError(source, f"not valid HOCON: {exc}",
                          "check the syntax near the position shown") from exc
    if not isinstance(merged, ConfigTree):
        raise ConfigError(source, "the top level must be an object")
    return merged


def load_settings(path: str | Path | None = None, text: str | None = None) -> Settings:
    """Load, merge, resolve and validate: the one entry point for configuration."""
    return settings_from_tree(load_tree(path, text))
