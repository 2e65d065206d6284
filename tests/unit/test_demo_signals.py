"""The demo stops on a second SIGTERM that lands inside the first one's handling (timeout(1)
sends one to the process and one to its group). It used to wait forever on the stop event's
lock, in the one thread that held it, with Kafka and Burrow still running."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: A stop event whose set() is hit by a second SIGTERM while it holds its lock: os.kill runs
#: the signal's handler at once, inside the `with`, as a signal landing there would.
_NESTED = """
import os, signal, threading
from devstack.demo import stop_on_signals

class SignalInsideSet(threading.Event):
    def set(self):
        with self._cond:
            os.kill(os.getpid(), signal.SIGTERM)
            self._flag = True
            self._cond.notify_all()

stop = SignalInsideSet()
stop_on_signals(stop)
os.kill(os.getpid(), signal.SIGTERM)
print("stopping" if stop.wait(5) else "not stopping")
"""


def test_a_second_sigterm_inside_the_first_does_not_hang_the_demo() -> None:
    done = subprocess.run([sys.executable, "-c", _NESTED], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert (done.returncode, done.stdout.strip()) == (0, "stopping"), done.stderr[-2000:]
