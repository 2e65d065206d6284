"""Just enough of Docker's own rules to check a Dockerfile against the repository.

`parse()` reads instructions the way the builder does (comments, line continuations, exec/JSON
form); `DockerIgnore` applies .dockerignore patterns with moby's semantics (Go filepath.Match per
path segment, `**` for any depth, `!` exceptions, last match wins, a matching parent directory
excludes everything below it).
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

__all__ = ["DockerIgnore", "Instruction", "Stage", "parse"]


@dataclass(frozen=True)
class Instruction:
    keyword: str  # upper case
    raw: str  # the arguments as written (continuations joined)
    line: int

    @property
    def exec_form(self) -> list[str] | None:
        """The JSON array of an exec-form instruction, else None."""
        text = self.raw.strip()
        if text.startswith("["):
            value = json.loads(text)
            assert isinstance(value, list) and all(isinstance(v, str) for v in value)
            return value
        return None

    def words(self) -> list[str]:
        return self.exec_form or shlex.split(self.raw)


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]

    def last(self, keyword: str) -> Instruction | None:
        found = self.all(keyword)
        return found[-1] if found else None

    def env(self) -> dict[str, str]:
        """ENV key=value pairs of the stage ($VAR references left as written)."""
        out: dict[str, str] = {}
        for inst in self.all("ENV"):
            for word in shlex.split(inst.raw):
                key, _, value = word.partition("=")
                out[key] = value
        return out


def parse(path: Path) -> tuple[dict[str, str], list[Stage]]:
    """(global ARGs, stages) of a Dockerfile."""
    logical: list[tuple[int, str]] = []
    buffer, start = "", 0
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        stripped = line.strip()
        if not buffer and (not stripped or stripped.startswith("#")):
            continue
        if buffer and stripped.startswith("#"):
            continue  # comment lines inside a continuation are dropped by the builder
        if not buffer:
            start = number
        if stripped.endswith("\\"):
            buffer += stripped[:-1] + " "
            continue
        logical.append((start, buffer + stripped))
        buffer = ""
    assert not buffer, "the Dockerfile ends inside a line continuation"

    args: dict[str, str] = {}
    stages: list[Stage] = []
    for number, text in logical:
        keyword, _, rest = text.partition(" ")
        inst = Instruction(keyword.upper(), rest.strip(), number)
        if inst.keyword == "FROM":
            words = inst.raw.split()
            words = [w for w in words if not w.startswith("--")]
            base = re.sub(r"\$\{?(\w+)\}?", lambda m: args.get(m.group(1), m.group(0)), words[0])
            name = words[2] if len(words) >= 3 and words[1].upper() == "AS" else None
            stages.append(Stage(base, name))
        elif not stages:
            assert inst.keyword == "ARG", f"line {number}: only ARG may precede FROM"
            key, _, value = inst.raw.partition("=")
            args[key.strip()] = value.strip()
        else:
            stages[-1].instructions.append(inst)
    return args, stages


def _segment_regex(pattern: str) -> str:
    """Go filepath.Match syntax (plus `**`) to a regex over a slash-separated path."""
    out, i = "", 0
    while i < len(pattern):
        ch = pattern[i]
        if pattern.startswith("**", i):
            i += 2
            if pattern.startswith("/", i):
                out += "(?:.*/)?"
                i += 1
            else:
                out += ".*"
            continue
        if ch == "*":
            out += "[^/]*"
        elif ch == "?":
            out += "[^/]"
        elif ch == "[":
            end = pattern.index("]", i)
            body = pattern[i + 1:end]
            out += "[" + ("^" + body[1:] if body.startswith("^") else body) + "]"
            i = end
        elif ch == "\\" and i + 1 < len(pattern):
            i += 1
            out += re.escape(pattern[i])
        else:
            out += re.escape(ch)
        i += 1
    return "^" + out + "$"


class DockerIgnore:
    def __init__(self, text: str) -> None:
        self.rules: list[tuple[bool, re.Pattern[str]]] = []
        for line in text.splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            negate = line.startswith("!")
            pattern = line[1:].strip() if negate else line
            pattern = str(PurePosixPath("/" + pattern)).lstrip("/") or "."
            self.rules.append((negate, re.compile(_segment_regex(pattern))))

    def excluded(self, path: str) -> bool:
        """Whether `path` (relative, slash-separated) is left out of the build context."""
        parts = PurePosixPath(path).parts
        parents = ["/".join(parts[: i + 1]) for i in range(len(parts) - 1)]
        excluded = False
        for negate, regex in self.rules:
            matched = bool(regex.match(path)) or any(regex.match(p) for p in parents)
            if matched:
                excluded = not negate
        return excluded

    def context_files(self, root: Path, sources: list[str]) -> list[str]:
        """The files under each of `sources` (relative to `root`) that the build context keeps."""
        kept = []
        for source in sources:
            base = root / source
            files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file())
            for file in files:
                rel = file.relative_to(root).as_posix()
                if not self.excluded(rel):
                    kept.append(rel)
        return kept
