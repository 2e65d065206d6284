"""Logging setup for the CLI: logfmt or JSON lines, quiet at INFO (one line per cycle).

Two small stdlib formatters rather than structlog or python-json-logger: every line here comes
from stdlib `logging` (ours and librdkafka's, relayed), the fields are fixed (ts, level, logger,
msg, exc), and python-json-logger has no logfmt. What matters is that each line is one
machine-readable record: logfmt values are quoted and escaped when they need it, so a `"`, a
newline or a stray control character in a topic name cannot split or forge a line, and
timestamps are RFC 3339 UTC with milliseconds in both formats.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import sys

__all__ = ["configure_logging", "formatter", "logfmt_value", "rfc3339"]

_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def rfc3339(epoch_s: float) -> str:
    """`2026-11-25T21:48:33.123Z`: what log shippers parse without configuration."""
    moment = dt.datetime.fromtimestamp(epoch_s, dt.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _escape_char(char: str) -> str:
    if char in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[char]
    if char.isprintable():
        return char
    # control, format, separator (U+2028 ends a line for some readers) or a lone surrogate
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def logfmt_value(value: str) -> str:
    """`value` as one logfmt value: bare when it can be, else quoted with `\\"`, `\\\\`, `\\n`,
    `\\r`, `\\t` and `\\uXXXX` (`\\UXXXXXXXX`) escapes, so the line stays one parseable line."""
    if value and all(c.isprintable() and c not in ' ="\\' for c in value):
        return value
    return '"' + "".join(_escape_char(c) for c in value) + '"'


class _Formatter(logging.Formatter):
    """One line per record, logfmt or JSON, with the same fields in both."""

    def __init__(self, as_json: bool) -> None:
        super().__init__()
        self.as_json = as_json

    def format(self, record: logging.LogRecord) -> str:
        fields = {"ts": rfc3339(record.created), "level": record.levelname.lower(),
                  "logger": record.name, "msg": record.getMessage()}
        if record.exc_info:
            fields["exc"] = self.formatException(record.exc_info)
        if record.stack_info:
            fields["stack"] = self.formatStack(record.stack_info)
        if self.as_json:
            return json.dumps(fields)
        return " ".join(f"{key}={logfmt_value(value)}" for key, value in fields.items())


def formatter(fmt: str = "logfmt") -> logging.Formatter:
    """The formatter of `logging.format`: "json" or "logfmt"."""
    return _Formatter(as_json=fmt == "json")


def configure_logging(level: str = "INFO", fmt: str = "logfmt") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter(fmt))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # Third-party chatter stays out of INFO.
    for noisy in ("urllib3", "py4j", "pyspark"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
