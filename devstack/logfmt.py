"""The one logfmt reader of the tests and benchmarks: the exporter's log lines as fields, and
their messages."""

from __future__ import annotations

_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "r": "\r", "t": "\t"}


def parse_logfmt(line: str) -> dict[str, str]:
    """A reference logfmt reader: `key=bare` or `key="quoted"` with backslash escapes."""
    fields: dict[str, str] = {}
    i = 0
    while i < len(line):
        equals = line.index("=", i)
        key = line[i:equals]
        assert key and " " not in key, f"bad key at {i}: {line!r}"
        i = equals + 1
        if i < len(line) and line[i] == '"':
            value, i = _quoted(line, i + 1)
        else:
            end = line.find(" ", i)
            end = len(line) if end < 0 else end
            value, i = line[i:end], end
            assert value and '"' not in value and "=" not in value, f"bad bare value {value!r}"
        fields[key] = value
        if i < len(line):
            assert line[i] == " ", f"no separator at {i}: {line!r}"
            i += 1
    return fields


def _quoted(line: str, i: int) -> tuple[str, int]:
    out: list[str] = []
    while line[i] != '"':
        if line[i] != "\\":
            out.append(line[i])
            i += 1
            continue
        code = line[i + 1]
        if code in _ESCAPES:
            out.append(_ESCAPES[code])
            i += 2
        else:
            width = {"u": 4, "U": 8}[code]
            out.append(chr(int(line[i + 2:i + 2 + width], 16)))
            i += 2 + width
    return "".join(out), i + 1


def log_messages(text: str) -> list[str]:
    """The `msg` of every logfmt line of a log (lines of another shape are skipped)."""
    out = []
    for line in text.splitlines():
        if line.startswith("ts="):
            out.append(parse_logfmt(line).get("msg", ""))
    return out
