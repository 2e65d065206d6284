"""Installing is quiet and says what it does: building the wheel gives
setuptools nothing to warn about (the old `license = { text = ... }` table printed a screenful of
deprecation warnings on every install), and scripts/install is one `install: ...` line a step."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

from tests.deploy.tools import ROOT


def test_the_wheel_builds_without_warnings_and_declares_its_spdx_license(tmp_path: Path) -> None:
    source = tmp_path / "src"  # a copy: the build's own build/ and egg-info stay out of the repo
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "freshness_tracker", source / "freshness_tracker",
                    ignore=shutil.ignore_patterns("__pycache__"))
    # No build isolation and no index: the venv's own setuptools (the dev extra) builds it, so
    # the test needs no package index.
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-cache-dir",
         "--no-build-isolation", "--no-index", "-w", str(tmp_path / "dist"), str(source)],
        capture_output=True, text=True, timeout=300, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    noise = [line for line in output.splitlines()
             if "warning" in line.lower() or "deprecat" in line.lower()]
    assert noise == [], "\n".join(noise)
    (wheel,) = (tmp_path / "dist").glob("freshness_tracker-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        info = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(zf.read(info).decode())
    assert metadata["License-Expression"] == "Apache-2.0"


def test_scripts_install_says_one_line_per_step() -> None:
    """Run as the tests' own install left it (its stamp, so pip has nothing to do, or else one
    quiet pip run): every line on stderr is one of its own, nothing of pip's or Maven's."""
    digest = hashlib.sha1((ROOT / "pyproject.toml").read_bytes()).hexdigest()[:12]
    stamps = sorted((ROOT / ".venv").glob(f".installed-{digest}-*"))
    extras = stamps[0].name.split("-", 2)[2].replace("_", ",") if stamps else "demo"
    result = subprocess.run([str(ROOT / "scripts" / "install"), extras], capture_output=True,
                            text=True, timeout=600, check=False, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert all(line.startswith("install: ") for line in lines), lines
    steps = [line.split(":", 2)[1].strip() for line in lines]
    assert steps[0] == "Debian packages" and lines[-1].startswith("install: ready in ")
    assert f"freshness-tracker[{extras}]" in steps
    assert sum(step.startswith("Kafka ") for step in steps) == 2, lines
    assert len(lines) <= 7, lines
