"""The demo says what is wrong in one line before it starts anything:
a taken port, a missing Python package, and a machine where scripts/install has not built the
Kafka/Burrow cache."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from devstack.demo import main

REPO = Path(__file__).resolve().parents[2]

#: Loaded at interpreter start (PYTHONPATH): makes one top-level package unimportable, as on a
#: machine where it was never installed.
_HIDE = """
import sys

class _Hide:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == {package!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, _Hide())
"""


def _no_stack_files(tmp: Path) -> list[str]:
    return [p.name for p in tmp.iterdir()]


@pytest.mark.parametrize("address", ["0.0.0.0", "127.0.0.1"])
def test_a_taken_port_exits_2_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    address: str,
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where a stack's workdir would go
    with socket.socket() as busy:
        busy.bind((address, 0))
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


@pytest.mark.parametrize("package", ["confluent_kafka", "pyhocon"])
def test_a_missing_package_is_one_line_naming_the_install(tmp_path: Path, package: str) -> None:
    """`python -m devstack.demo` exactly as scripts/run starts it, on an interpreter where
    `package` cannot be imported: one line, no traceback, nothing left in the temp dir."""
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text(_HIDE.format(package=package))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": f"{hide}{os.pathsep}{REPO}", "TMPDIR": str(scratch)}
    result = subprocess.run([sys.executable, "-m", "devstack.demo", "--port", str(port)],
                            cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1, result.stderr
    assert result.stderr == (f"demo: the Python package {package!r} is missing; run "
                             "scripts/install (or: pip install -e '.[demo]')\n")
    assert result.stdout == "" and list(scratch.iterdir()) == []
