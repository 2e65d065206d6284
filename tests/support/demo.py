"""The demo as `scripts/run` starts it: ``python -m devstack.demo --port P`` as a real process,
its stderr read line by line, stopped with SIGTERM as Ctrl-C would; what it had started (Kafka,
Burrow) and was still running 15 s after it exited is in ``survivors`` (a test asserts it
empty), and killed on the way out so a failing test leaves nothing either."""

from __future__ import annotations

import contextlib
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from devstack.exporter import REPO, clean_env
from devstack.processes import free_port

#: What the demo prints once there are values, and the heading of the table it prints after.
FIRST_VALUES = "first freshness values"
TABLE_HEADER = "CLUSTER  CONSUMER"


@dataclass
class DemoProcess:
    """A running ``python -m devstack.demo``; :meth:`stop` ends it."""

    process: subprocess.Popen[str]
    port: int
    lines: list[str] = field(default_factory=list)  # stderr so far
    survivors: list[psutil.Process] = field(default_factory=list)  # set by stop()
    _queue: queue.Queue[str | None] = field(default_factory=queue.Queue)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def read_until(self, done: Callable[[list[str]], bool], timeout_s: float) -> bool:
        """Read stderr until ``done(lines)``; False when the demo ended or `timeout_s` passed."""
        deadline = time.monotonic() + timeout_s
        while not done(self.lines):
            try:
                line = self._queue.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                return False
            if line is None:
                return False
            self.lines.append(line)
        return True

    def config_value(self, key: str) -> str | None:
        """A value of the config the demo printed (``burrow.url``, ...), unquoted."""
        pattern = re.compile(rf'^{re.escape(key)}\s*=\s*"?([^"]*)"?\s*$')
        return next((m.group(1) for line in self.lines if (m := pattern.match(line))), None)

    def stop(self, timeout_s: float = 60) -> int:
        """SIGTERM (what Ctrl-C does), wait, read what is left; the exit code. The processes
        the demo had started and that outlive it by 15 s are in :attr:`survivors`."""
        children: list[psutil.Process] = []
        if self.process.poll() is None:
            with contextlib.suppress(psutil.NoSuchProcess):
                children = psutil.Process(self.process.pid).children(recursive=True)
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout_s)
        finally:
            self.survivors = psutil.wait_procs(children, timeout=15)[1]
            self.read_until(lambda _lines: False, 1)  # the last lines (the reader ends at EOF)


def _read_lines(process: subprocess.Popen[str], into: queue.Queue[str | None]) -> None:
    assert process.stderr is not None
    for line in process.stderr:
        into.put(line.rstrip("\n"))
    into.put(None)


@contextlib.contextmanager
def running_demo(tmp: Path, port: int | None = None) -> Iterator[DemoProcess]:
    """Start the demo with TMPDIR=`tmp` (its workdir and config land there, so a test can check
    they are removed); on exit stop it if the test did not, and kill it if SIGTERM failed."""
    port = port or free_port()
    process = subprocess.Popen([sys.executable, "-m", "devstack.demo", "--port", str(port)],
                               cwd=REPO, env=clean_env({"TMPDIR": str(tmp)}),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    demo = DemoProcess(process, port)
    threading.Thread(target=_read_lines, args=(process, demo._queue), daemon=True).start()
    try:
        yield demo
    finally:
        try:
            if process.poll() is None:
                demo.stop()
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            for child in demo.survivors:  # only what SIGTERM failed to end
                with contextlib.suppress(psutil.NoSuchProcess):
                    child.kill()
