"""A cycle's hard deadline, visible to every client call the cycle makes.

Why: a timeout per call does not bound a cycle (a Burrow body dripped one byte a second passes
a per-read timeout; retries and thousands of calls add up; a negative timeout handed to
librdkafka blocks forever). The cycle owns one deadline; each client reads it in the calling
thread (`current()`), caps its own timeouts with it (`bound()`) and hands it explicitly to the
worker threads it fans out to. Context variables do not follow work into executor threads, so
passing it on is the client's job.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

__all__ = ["Deadline", "bound", "current", "cycle_deadline"]


@dataclass(frozen=True, slots=True)
class Deadline:
    """A point on the monotonic clock."""

    at: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(time.monotonic() + seconds)

    def remaining(self) -> float:
        return self.at - time.monotonic()

    def expired(self) -> bool:
        return self.remaining() <= 0

    def bound(self, timeout: float) -> float:
        """`timeout` capped by the time left; never negative (a negative timeout means
        "forever" to librdkafka and to several socket APIs)."""
        return max(0.0, min(timeout, self.remaining()))


_current: ContextVar[Deadline | None] = ContextVar("freshness_tracker_deadline", default=None)


def current() -> Deadline | None:
    """The deadline of the cycle running in this thread, if any."""
    return _current.get()


def bound(timeout: float, deadline: Deadline | None = None) -> float:
    """`timeout` capped by `deadline` (default: the current cycle's), never negative."""
    deadline = deadline if deadline is not None else current()
    return max(0.0, timeout) if deadline is None else deadline.bound(timeout)


@contextmanager
def cycle_deadline(deadline: Deadline | None) -> Iterator[Deadline | None]:
    """Make `deadline` the current one for the calls made inside the block."""
    token = _current.set(deadline)
    try:
        yield deadline
    finally:
        _current.reset(token)
