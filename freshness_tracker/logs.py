"""Logging setup for the CLI: logfmt or JSON lines, quiet at INFO (one line per cycle)."""

from __future__ import annotations

import json
import logging
import sys
import time

__all__ = ["configure_logging"]


class _LogfmtFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        msg = record.getMessage().replace('"', "'")
        line = f'ts={ts}.{int(record.msecs):03d}Z level={record.levelname.lower()} ' \
               f'logger={record.name} msg="{msg}"'
        if record.exc_info:
            line += ' exc="' + self.formatException(record.exc_info).replace('"', "'")\
                .replace("\n", "\\n") + '"'
        return line


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        body = {"ts": record.created, "level": record.levelname.lower(),
                "logger": record.name, "msg": record.getMessage()}
        if record.exc_info:
            body["exc"] = self.formatException(record.exc_info)
        return json.dumps(body)


def configure_logging(level: str = "INFO", fmt: str = "logfmt") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_JsonFormatter() if fmt == "json" else _LogfmtFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # Third-party chatter stays out of INFO.
    for noisy in ("urllib3", "py4j", "pyspark"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
