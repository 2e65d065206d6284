"""Child daemons that never outlive the Python process that started them.

Why: a test run that is killed (SIGKILL, a CI timeout, ``kill -- -PGID`` of pytest's group) must
not leave JVMs and Burrows running: they hold ports, RAM and both cores of the next run. Three
layers, each enough on its own for the case it covers:

* :meth:`Daemon.stop` (called by fixtures, ``with`` blocks and ``weakref.finalize``): SIGTERM to
  the daemon's own process group, SIGKILL after a short grace;
* an ``atexit`` hook stops whatever is still running when the interpreter exits normally;
* a **guardian**: one small Python process per parent, in its own session, that reads a pipe from
  the parent. Every daemon's process group is announced on that pipe. When the parent dies in any
  way, the kernel closes the pipe and the guardian kills every announced group. It does not share
  the parent's process group, so killing pytest's group does not kill the guardian first.

Every daemon runs in its own session (``start_new_session``), so a signal to it reaches its
children too and a Ctrl-C in the terminal does not race the orderly stop.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

__all__ = [
    "Daemon",
    "ProcessStartError",
    "free_port",
    "pid_alive",
    "poll",
    "port_open",
    "rss_bytes",
    "wait_until",
]

log = logging.getLogger(__name__)


class ProcessStartError(RuntimeError):
    """A daemon could not be started or did not become ready; the message ends with its log tail."""


def free_port(host: str = "127.0.0.1") -> int:
    """A port the kernel just handed out (free now; another binder could race us, rarely)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def port_open(host: str, port: int, timeout_s: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def pid_alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (``kill -0`` succeeds on zombies)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


def rss_bytes(pid: int) -> int:
    """Resident set size of ``pid`` from /proc (0 when it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def wait_until(
    predicate: Callable[[], bool], timeout_s: float, what: str, interval_s: float = 0.05
) -> None:
    """Poll ``predicate`` until true; TimeoutError naming ``what`` at the deadline
    (:func:`poll`, for a caller that needs no value back)."""
    poll(predicate, timeout_s, what, interval_s)


def poll(check: Callable[[], Any], timeout_s: float, what: str | Callable[[], str],
         interval_s: float = 0.1) -> Any:
    """Call ``check`` until it returns something truthy and return that; TimeoutError at the
    deadline (``what`` may be a callable that explains the last state)."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            detail = what() if callable(what) else what
            raise TimeoutError(f"timed out after {timeout_s:g} s waiting for {detail}")
        time.sleep(interval_s)


# --- the guardian ------------------------------------------------------------------------------

# Runs in its own session. Lines on stdin: "+PGID" (watch) or "-PGID" (forget). At EOF (the
# parent is gone, however it died): SIGTERM every watched group, SIGKILL what is left after 3 s.
_GUARDIAN = r"""
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
groups = set()
for line in sys.stdin:
    line = line.strip()
    if line[:1] == "+":
        groups.add(int(line[1:]))
    elif line[:1] == "-":
        groups.discard(int(line[1:]))
def alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except OSError:
        return False
for sig, wait_s in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 2.0)):
    for pgid in list(groups):
        try:
            os.killpg(pgid, sig)
        except OSError:
            groups.discard(pgid)
    deadline = time.monotonic() + wait_s
    while groups and time.monotonic() < deadline:
        groups = {g for g in groups if alive(g)}
        time.sleep(0.05)
"""


class _Guardian:
    """The one guardian of this Python process (restarted after a fork or if it died)."""

    _lock = threading.Lock()
    _proc: subprocess.Popen[bytes] | None = None
    _owner_pid = 0

    @classmethod
    def _pipe(cls) -> IO[bytes] | None:
        if cls._proc is None or cls._owner_pid != os.getpid() or cls._proc.poll() is not None:
            cls._proc = subprocess.Popen(
                [sys.executable, "-I", "-c", _GUARDIAN],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            cls._owner_pid = os.getpid()
        return cls._proc.stdin

    @classmethod
    def send(cls, line: str) -> None:
        with cls._lock:
            try:
                pipe = cls._pipe()
                if pipe is not None:
                    pipe.write(f"{line}\n".encode())
                    pipe.flush()
            except OSError:  # the guardian is a safety net: never fail a start or stop for it
                log.warning("process guardian unavailable; relying on stop()/atexit")


# --- daemons -----------------------------------------------------------------------------------

_live: set[Daemon] = set()
_live_lock = threading.Lock()


@atexit.register
def _stop_all_at_exit() -> None:
    with _live_lock:
        daemons = list(_live)
    for daemon in daemons:
        with contextlib.suppress(Exception):
            daemon.stop(grace_s=2.0)


class Daemon:
    """One command run in its own session, output appended to ``log_path``.

    ``stop()`` signals the whole process group; ``grace_s`` is how long SIGTERM gets before
    SIGKILL. Safe to call from any thread, any number of times.
    """

    def __init__(
        self,
        name: str,
        command: Sequence[str],
        log_path: Path,
        *,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
        grace_s: float = 5.0,
    ) -> None:
        self.name = name
        self.command = list(command)
        self.log_path = log_path
        self.cwd = cwd
        self.env = dict(env) if env is not None else None
        self.grace_s = grace_s
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        proc = self._proc
        return proc.pid if proc is not None else None

    @property
    def running(self) -> bool:
        proc = self._proc
        return proc is not None and proc.poll() is None and pid_alive(proc.pid)

    @property
    def returncode(self) -> int | None:
        proc = self._proc
        return None if proc is None else proc.poll()

    def spawn(self) -> None:
        """Start the command (no readiness wait); a no-op while it runs."""
        with self._lock:
            if self._proc is not None and self._proc.poll() is None:
                return
            exe = self.command[0]
            if os.sep in exe and not Path(exe).exists():
                raise ProcessStartError(f"{self.name}: executable {exe} not found")
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.log_path, "ab") as out:
                self._proc = subprocess.Popen(
                    self.command,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    cwd=self.cwd,
                    env=self.env,
                    start_new_session=True,
                )
            _Guardian.send(f"+{self._proc.pid}")
            with _live_lock:
                _live.add(self)
        log.info("started %s pid=%d log=%s", self.name, self._proc.pid, self.log_path)

    def wait_ready(self, ready: Callable[[], bool], timeout_s: float) -> None:
        """Poll ``ready`` to a deadline; ProcessStartError with the log tail if the daemon dies
        first or the deadline passes (then it is stopped)."""
        deadline = time.monotonic() + timeout_s
        while True:
            code = self.returncode
            if self._proc is None or code is not None:
                raise ProcessStartError(
                    f"{self.name} exited (code {code}) before it was ready\n{self.log_tail()}"
                )
            if ready():
                return
            if time.monotonic() >= deadline:
                self.stop()
                raise ProcessStartError(
                    f"{self.name} not ready after {timeout_s:g} s\n{self.log_tail()}"
                )
            time.sleep(0.1)

    def stop(self, grace_s: float | None = None) -> None:
        """SIGTERM the process group, SIGKILL it after ``grace_s``; reaps the child."""
        with self._lock:
            proc, self._proc = self._proc, None
        if proc is None:
            return
        grace = self.grace_s if grace_s is None else grace_s
        try:
            if proc.poll() is None:
                _signal_group(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(grace)
                except subprocess.TimeoutExpired:
                    # Worth a warning only when the daemon had its full grace to stop cleanly.
                    level = logging.WARNING if grace >= self.grace_s else logging.INFO
                    log.log(level, "%s pid=%d did not stop within %g s of SIGTERM; killing it",
                            self.name, proc.pid, grace)  # fmt: skip
            # Also when the leader exited by itself: a child it left in the group goes too.
            _signal_group(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(5)
        finally:
            _Guardian.send(f"-{proc.pid}")
            with _live_lock:
                _live.discard(self)
        log.info("stopped %s pid=%d", self.name, proc.pid)

    def kill(self) -> None:
        """SIGKILL the process group at once (a crash: no shutdown hook runs); reaps it."""
        with self._lock:
            proc = self._proc
        if proc is not None:
            _signal_group(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(5)
        self.stop(0)

    def log_tail(self, lines: int = 40) -> str:
        return log_tail(self.name, self.log_path, lines)


def log_tail(name: str, path: Path, lines: int = 40) -> str:
    """The last ``lines`` of a log file, headed by its name and path, for failure reports."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(f.tell() - 200 * lines, 0))
            text = f.read().decode(errors="replace")
    except OSError:
        return f"--- {name}: no log at {path} ---"
    tail = "\n".join(text.splitlines()[-lines:])
    return f"--- {name} log tail ({path}) ---\n{tail}"


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
