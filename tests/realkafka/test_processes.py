"""No dev-stack process outlives the Python process that started it, however that one ends:
SIGKILL (the guardian kills the daemon's group) or a normal exit without stop() (atexit)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from devstack.processes import pid_alive, poll

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[2]

# A parent that starts a daemon (plus a grandchild of it), prints both pids and then either
# exits normally without stopping it, or sleeps until it is killed.
PARENT = """
import sys, time
from pathlib import Path
from devstack.processes import Daemon
d = Daemon("sleeper", ["sh", "-c", "sleep 300 & exec sleep 300"], Path(sys.argv[1]) / "d.log")
d.spawn()
time.sleep(0.3)
children = Path(f"/proc/{d.pid}/task/{d.pid}/children").read_text().split()
print(d.pid, *children, flush=True)
sys.stdin.readline()  # the test has seen both alive: only then exit (or hang)
if sys.argv[2] == "hang":
    time.sleep(300)
"""


def run_parent(tmp_path: Path, mode: str) -> tuple[subprocess.Popen[str], list[int]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", PARENT, str(tmp_path), mode],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=env)  # fmt: skip
    assert proc.stdout is not None and proc.stdin is not None
    pids = [int(p) for p in proc.stdout.readline().split()]
    assert len(pids) == 2, pids  # the daemon and its own child
    assert all(pid_alive(p) for p in pids)
    proc.stdin.write("\n")  # before this, an "exit" parent could stop them before we looked
    proc.stdin.close()
    return proc, pids


@pytest.mark.parametrize("mode", ["hang", "exit"])
def test_daemons_die_with_their_parent(tmp_path: Path, mode: str) -> None:
    started = time.monotonic()
    parent, pids = run_parent(tmp_path, mode)
    if mode == "hang":
        parent.send_signal(signal.SIGKILL)  # no atexit, no finalizer: only the guardian is left
    parent.wait(30)
    poll(lambda: not any(pid_alive(p) for p in pids), 15, f"daemon pids {pids} to be gone")
    assert time.monotonic() - started < 15
