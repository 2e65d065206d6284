"""librdkafka's own log lines, relayed to Python logging without flooding it.

While a broker is unreachable librdkafka reports every reconnect attempt: a minute's outage
puts hundreds of identical `Connect ... failed` lines into the exporter's log, burying the one
line per cycle that says what is wrong. A relay is
handed to each client as its `logger`: the first line of each kind goes out at once, repeats of
it are counted for `window_s` and the next one after that carries the count. A line differing
only in librdkafka's own timings ("after 3ms") is the same kind; a different broker, state or
error is a different kind, so no distinct problem is hidden.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["LIBRDKAFKA_LOGGER", "ClientLogRelay"]

LIBRDKAFKA_LOGGER = logging.getLogger("freshness_tracker.kafka.librdkafka")

#: Parts of a librdkafka line that change between repeats of the same event.
_VOLATILE = (
    (re.compile(r"\s*\(\d+ identical error\(s\) suppressed\)"), ""),
    (re.compile(r"\b\d+ms\b"), "Nms"),
)
_MAX_KINDS = 512  # memory bound: the oldest kinds are forgotten first


def line_kind(facility: str, text: str) -> str:
    """What makes two librdkafka lines "the same": the facility and the text minus timings."""
    for pattern, replacement in _VOLATILE:
        text = pattern.sub(replacement, text)
    return f"{facility} {text}"


@dataclass
class _Seen:
    since: float
    repeats: int = 0


class ClientLogRelay:
    """The object librdkafka calls as `logger.log(level, fmt, facility, client, text)`.

    `cluster` prefixes every line so an operator knows which cluster's client is complaining.
    """

    def __init__(self, cluster: str, target: logging.Logger = LIBRDKAFKA_LOGGER, *,
                 window_s: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.cluster = cluster
        self.target = target
        self.window_s = window_s
        self._clock = clock
        self._lock = threading.Lock()
        self._kinds: OrderedDict[str, _Seen] = OrderedDict()
        self.suppressed = 0  # lines held back in total, for tests and debugging

    def log(self, level: int, msg: str, *args: object) -> None:
        if not self.target.isEnabledFor(level):
            return
        facility, text = _split(msg, args)
        kind = line_kind(facility, text)
        now = self._clock()
        with self._lock:
            seen = self._kinds.get(kind)
            if seen is not None and now - seen.since < self.window_s:
                seen.repeats += 1
                self.suppressed += 1
                return
            repeats = seen.repeats if seen is not None else 0
            self._kinds[kind] = _Seen(now)
            self._kinds.move_to_end(kind)
            while len(self._kinds) > _MAX_KINDS:
                self._kinds.popitem(last=False)
        line = f"{facility} {text}" if facility else text
        if repeats:
            self.target.log(level, "cluster %s: %s (and %d more like it in %g s)",
                            self.cluster, line, repeats, self.window_s)
        else:
            self.target.log(level, "cluster %s: %s", self.cluster, line)


def _split(msg: str, args: tuple[object, ...]) -> tuple[str, str]:
    """(facility, text) from confluent-kafka's `("%s [%s] %s", fac, client name, text)`.

    The client's name is dropped: it numbers each consumer, and a replaced consumer would
    otherwise make every repeat look new.
    """
    if len(args) == 3:
        return str(args[0]), str(args[2])
    try:
        return "", msg % args if args else msg
    except (TypeError, ValueError):
        return "", " ".join([msg, *map(str, args)])
