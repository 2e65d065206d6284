"""The demo says what is wrong in one line before it starts anything (issue 14's rough edges):
a taken port, and a machine where scripts/install has not built the Kafka/Burrow cache."""

from __future__ import annotations

import socket
import tempfile
from pathlib import Path

import pytest

from devstack.demo import main


def _no_stack_files(tmp: Path) -> list[str]:
    return [p.name for p in tmp.iterdir()]


def test_a_taken_port_exits_2_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where a stack's workdir would go
    with socket.socket() as busy:
        busy.bind(("0.0.0.0", 0))
        busy.listen()
        assert main(["--port", str(busy.getsockname()[1])]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "already in use" in err and "--port" in err
    assert _no_stack_files(tmp_path) == []


def test_a_missing_install_names_the_fix_and_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where a stack's workdir would go
    monkeypatch.setenv("FT_KAFKA_CLASSPATH", str(tmp_path / "no-jars-here"))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert main(["--port", str(port)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no Kafka broker jars" in err and "scripts/install" in err
    assert _no_stack_files(tmp_path) == []
