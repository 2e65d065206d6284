"""What the README and the scripts' own comments say about the two commands matches what they
run (the README said `scripts/test` runs ruff and pytest, it runs mypy too; scripts/run
said Burrow 1.9.5, the stack runs Debian's 1.2.1), and the docs cite nothing outside the
repository."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from devstack.cache import default_kafka_version
from devstack.testing import unavailable

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
VERSION = re.compile(r"\b(Kafka|Burrow) (\d+\.\d+(?:\.\d+)?)")


def _bullet(text: str, start: str) -> str:
    """The README bullet that begins with `start`, up to the next bullet or blank line."""
    begin = text.index(start)
    end = re.compile(r"\n(?:- |\n)").search(text, begin + 1)
    return text[begin:end.start() if end else len(text)]


def _debian_burrow_version() -> str:
    if shutil.which("dpkg-query") is None:
        unavailable("no dpkg-query: not a Debian machine")
    answer = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "burrow"],
                            capture_output=True, text=True, timeout=30, check=False)
    if answer.returncode != 0:
        unavailable("Debian's burrow package is not installed (scripts/install installs it)")
    return answer.stdout.split("-")[0]


def test_the_readme_names_every_tool_scripts_test_runs() -> None:
    script = (REPO / "scripts" / "test").read_text(encoding="utf-8")
    tools = set(re.findall(r"^\.venv/bin/python -m (\w+)", script, re.M))
    assert tools == {"ruff", "mypy", "pytest"}  # what the walk below is about
    said = _bullet(README, "- `scripts/test` runs")
    assert {tool for tool in tools if f"`{tool}" not in said} == set(), said


def test_the_demo_stack_versions_in_the_words_are_the_stack_s() -> None:
    kafka, burrow = default_kafka_version(), _debian_burrow_version()
    comment = " ".join(line.lstrip("#") for line in (REPO / "scripts" / "run").read_text()
                       .splitlines() if line.startswith("#"))
    for where, text in (("scripts/run", comment),
                        ("README", _bullet(README, "- `scripts/run` with no config"))):
        named = set(VERSION.findall(" ".join(text.split())))
        assert named == {("Kafka", kafka), ("Burrow", burrow)}, (where, named)


def test_the_docs_cite_nothing_outside_the_repository() -> None:
    for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        assert "shared/reference" not in text and "../shared" not in text, doc.name


def test_no_tracked_file_cites_reference_notes_outside_the_repository() -> None:
    """Comments and READMEs state what they rely on (tests/spark/conftest.py and
    devstack/README.md cited notes a clone does not have)."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        unavailable("not a git checkout")
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True,
                             check=True).stdout.decode().split("\0")
    this = Path(__file__).resolve().relative_to(REPO).as_posix()
    citing = []
    for name in tracked:
        path = REPO / name
        if name == this or path.suffix not in {".py", ".md", ".conf", ".yml", ".yaml", ".toml",
                                               ".sh", ""} or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if "shared/reference" in text or "../shared/" in text:
            citing.append(name)
    assert not citing, citing
