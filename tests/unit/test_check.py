"""`check` says what actually happened, against real refused ports, a
silent listener and a real local HTTP server: refused, timed out, HTTP status and body; it is
quiet about librdkafka's reconnects; an unknown config key is a warning, not a failure."""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from devstack.exporter import run_cli
from devstack.exporter_config import cluster_entry, exporter_config
from freshness_tracker import check as check_module
from freshness_tracker.check import CheckResult, run_checks
from freshness_tracker.cli import main
from freshness_tracker.config import load_settings
from tests.support.http_burrow import RecordingBurrow, ok


def _refused_port() -> int:
    """A port nothing listens on: bound for a moment, then released."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def _silent_listener() -> Iterator[int]:
    """A port that accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        yield int(sock.getsockname()[1])


@pytest.fixture
def burrow() -> Iterator[RecordingBurrow]:
    """A healthy Burrow that lists cluster `local` with one group."""
    with RecordingBurrow() as server:
        server.route("/burrow/admin", ok(b"GOOD"))
        server.route("/v3/kafka", ok({"error": False, "clusters": ["local"]}))
        server.route("/v3/kafka/local/consumer", ok({"error": False, "consumers": ["g1"]}))
        yield server


def _config(tmp_path: Path, burrow_url: str, kafka_port: int, extra: str = "") -> Path:
    path = tmp_path / "check.conf"
    path.write_text(exporter_config(
        burrow_url=burrow_url, burrow_timeout="1s", retries=0, lookup_timeout="2s",
        clusters=[cluster_entry("local", f"127.0.0.1:{kafka_port}")], extra=extra))
    return path


def _results(path: Path) -> list[CheckResult]:
    return list(run_checks(load_settings(path)))


def test_a_refused_burrow_is_named_refused(tmp_path: Path) -> None:
    port = _refused_port()
    *_, last = _results(_config(tmp_path, f"http://127.0.0.1:{port}", _refused_port()))
    assert last.outcome == "FAIL"
    assert last.message.startswith(f"burrow: cannot reach Burrow at http://127.0.0.1:{port}")
    assert "Connection refused" in last.message and "GOOD" not in last.message


def test_a_silent_burrow_is_named_a_timeout(tmp_path: Path) -> None:
    with _silent_listener() as port:
        began = time.monotonic()
        *_, last = _results(_config(tmp_path, f"http://127.0.0.1:{port}", _refused_port()))
    assert time.monotonic() - began < 5
    assert last.outcome == "FAIL"
    assert f"http://127.0.0.1:{port}/burrow/admin within 1s" in last.message
    assert "did not" in last.message and "GOOD" not in last.message


@pytest.mark.parametrize(("status", "body", "expected"), [
    (503, b"", "answered HTTP 503"),
    (200, b"BAD\n", "answered HTTP 200 with 'BAD', not GOOD"),
    (401, b"<html>Unauthorized</html>", "answered HTTP 401 with '<html>Unauthorized</html>'"),
])  # fmt: skip
def test_a_burrow_answering_something_else_is_quoted(
    tmp_path: Path, status: int, body: bytes, expected: str
) -> None:
    with RecordingBurrow() as server:
        server.route("/burrow/admin", ok(body, status))
        *_, last = _results(_config(tmp_path, server.url, _refused_port()))
    assert last.outcome == "FAIL" and expected in last.message, last


def test_a_refused_kafka_says_refused_early_and_quietly(
    tmp_path: Path, burrow: RecordingBurrow
) -> None:
    kafka_port = _refused_port()
    began = time.monotonic()
    result = run_cli("check", "--config", str(_config(tmp_path, burrow.url, kafka_port)))
    took = time.monotonic() - began
    assert result.returncode == 1, result
    lines = result.stdout.splitlines()
    assert lines[-1] == "1 check(s) failed"
    assert lines[-2].startswith(f"FAIL  cluster local: Kafka at 127.0.0.1:{kafka_port}: "
                                "cannot connect: ")
    assert "Connection refused" in lines[-2]
    # librdkafka's reconnect lines go through the exporter's relay: one per kind, not one per
    # reconnect attempt
    noise = result.stderr.splitlines()
    assert len(noise) <= 2 and not any(line.startswith("%") for line in noise), noise
    assert took < 2 + 10  # every broker refused: no waiting out lookup.timeout (2 s) per try


def test_a_silent_kafka_is_named_a_timeout(tmp_path: Path, burrow: RecordingBurrow) -> None:
    with _silent_listener() as kafka_port:
        *_, last = _results(_config(tmp_path, burrow.url, kafka_port))
    assert last.outcome == "FAIL"
    assert last.message.startswith(f"cluster local: Kafka at 127.0.0.1:{kafka_port}: ")
    assert "no broker answered within 2s" in last.message, last


def test_an_unknown_key_is_a_warning_and_alone_exits_0(
    tmp_path: Path, burrow: RecordingBurrow, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """docs/configuration.md: "Unknown keys are warnings naming the nearest known key"."""
    path = _config(tmp_path, burrow.url, _refused_port(), extra="frequency_secs = 5")
    # this test is about the verdict, not Kafka: the cluster's broker answers
    monkeypatch.setattr(check_module, "_kafka_reachable",
                        lambda props, cluster, timeout_s: (True, "1 broker(s), 3 topic(s)"))
    assert main(["check", "--config", str(path)]) == 0
    out = capsys.readouterr()
    lines = out.out.splitlines()
    (warning,) = [line for line in lines if line.startswith("warn  ")]
    assert "frequency_secs: unknown key" in warning and "did you mean 'frequency_sec'" in warning
    assert lines[-1] == "all checks passed (1 warning(s))"
    assert "FAIL" not in out.out and "frequency_secs" not in out.err  # said once, in its place


def test_a_warning_does_not_hide_a_failure(
    tmp_path: Path, burrow: RecordingBurrow, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _config(tmp_path, burrow.url, _refused_port(), extra="frequency_secs = 5")
    assert main(["check", "--config", str(path)]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == "1 check(s) failed (1 warning(s))"


def test_every_outcome_is_one_of_three(tmp_path: Path, burrow: RecordingBurrow) -> None:
    results = _results(_config(tmp_path, burrow.url, _refused_port(), extra="nope = 1"))
    assert [r.outcome for r in results] == ["ok", "warn", "ok", "ok", "FAIL"], json.dumps(
        [r.message for r in results])


@pytest.mark.usefixtures("restore_logging")
def test_names_from_burrow_cannot_act_on_the_terminal(
    tmp_path: Path, burrow: RecordingBurrow, capsys: pytest.CaptureFixture[str]
) -> None:
    """`check` lists Burrow's clusters when the configured one is missing: a name carrying an
    escape sequence or a newline is shown escaped, never run by the terminal nor a forged
    `ok` line."""
    burrow.route("/v3/kafka", ok({"error": False,
                                  "clusters": ["\x1b]0;pwned\x07", "x\nok    forged"]}))
    assert main(["check", "--config", str(_config(tmp_path, burrow.url, _refused_port()))]) == 1
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "Burrow has: \\x1b]0;pwned\\x07, x\\nok    forged)" in out
    assert not any(line.startswith("ok    forged") for line in out.splitlines())


@pytest.mark.usefixtures("restore_logging")
def test_an_error_line_and_a_terminal_exposition_escape_what_they_carry(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The one stderr line of a failed command, and `once`'s exposition when stdout is a
    terminal (into a pipe or a file it stays the exact bytes /metrics serves)."""
    import sys

    from freshness_tracker import cli
    from freshness_tracker.errors import FreshnessTrackerError

    def failing(_args: object) -> int:
        raise FreshnessTrackerError("group \x1b[2Jx\nerror: forged")

    monkeypatch.setattr(cli, "cmd_history", failing)
    assert main(["history", "compact", "--history", "/nonexistent"]) == 1
    assert capsys.readouterr().err == "error: group \\x1b[2Jx\\nerror: forged\n"
    body = 'a{consumer="\x1b[2J\\n"} 1\nb 2\n'
    assert cli._for_terminal(body) == body  # captured: not a terminal
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert cli._for_terminal(body) == 'a{consumer="\\x1b[2J\\n"} 1\nb 2\n'
