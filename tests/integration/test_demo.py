"""The demo as `scripts/run` starts it (issue 14's rough edges): before the first measured
cycle it says it is waiting, once, instead of printing an empty table; then a table of the three
groups; SIGTERM stops it with exit 0 and leaves no process and no temp file behind."""

from __future__ import annotations

import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from devstack.processes import free_port
from tests.support.exporter import REPO, clean_env

pytestmark = pytest.mark.integration

WAITING = "waiting for the first measured cycle"
HEADER = "CLUSTER  CONSUMER"


def _read_lines(stream: subprocess.Popen[str], into: queue.Queue[str | None]) -> None:
    assert stream.stderr is not None
    for line in stream.stderr:
        into.put(line.rstrip("\n"))
    into.put(None)


def test_the_demo_waits_in_one_line_then_shows_the_groups(tmp_path: Path) -> None:
    port = free_port()
    demo = subprocess.Popen([sys.executable, "-m", "devstack.demo", "--port", str(port)],
                            cwd=REPO, env=clean_env({"TMPDIR": str(tmp_path)}),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_read_lines, args=(demo, lines), daemon=True).start()
    seen: list[str] = []
    children: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:  # until the first table has its three groups
            try:
                line = lines.get(timeout=max(deadline - time.monotonic(), 0.1))
            except queue.Empty:
                break
            if line is None:
                break
            seen.append(line)
            table = seen[next((i for i, s in enumerate(seen) if s.startswith(HEADER)),
                              len(seen)):]
            if all(any(f" {group} " in row for row in table)
                   for group in ("keeps-up", "slow", "stuck")):
                break
        children = psutil.Process(demo.pid).children(recursive=True)
        demo.send_signal(signal.SIGTERM)
        demo.wait(timeout=60)
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
    text = "\n".join(seen)
    assert demo.returncode == 0, text[-3000:]
    assert "Traceback" not in text
    header = next(i for i, line in enumerate(seen) if line.startswith(HEADER))
    first = next(i for i, line in enumerate(seen) if line.startswith("first freshness values"))
    assert first < header  # no table, empty or not, before there are values
    assert sum(WAITING in line for line in seen) <= 1, text  # once at most, not per cycle
    assert all(i < first for i, line in enumerate(seen) if WAITING in line)
    assert psutil.wait_procs(children, timeout=15)[1] == []  # Kafka, ZooKeeper, Burrow: gone
    assert list(tmp_path.iterdir()) == []  # the stack's workdir and the config: removed
