"""Peak resident memory of a process while a block runs, sampled from /proc (`ru_maxrss` is
the lifetime peak, carried over fork+exec: useless for one block, or for a child)."""

from __future__ import annotations

import os
import threading

from devstack.processes import rss_bytes


class RssSampler:
    """``with RssSampler(pid) as rss:`` samples VmRSS every ``interval_s`` (this process by
    default): ``rss.baseline``, ``rss.peak`` and ``rss.growth``, in bytes."""

    def __init__(self, pid: int | None = None, interval_s: float = 0.002) -> None:
        self.pid = os.getpid() if pid is None else pid
        self.baseline = self.peak = rss_bytes(self.pid)
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="rss-sampler")

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            self.peak = max(self.peak, rss_bytes(self.pid))

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_bytes(self.pid))

    @property
    def growth(self) -> int:
        return self.peak - self.baseline
