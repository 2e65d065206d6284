"""What a group or topic name must be to be measured and exported. Pure.

A name becomes a Prometheus label, a URL path segment, a Parquet string and a log field, so one
that cannot be all four (a lone surrogate from a `\\udc80` JSON escape, an empty string) must be
caught where it enters and cost only its own entry, never the scrape or the cluster.

- topic: Kafka's own rule, `[a-zA-Z0-9._-]`, 1 to 249 characters, not `.` or `..`. Burrow only
  reports topics Kafka has, so anything else is garbage.
- group id: Kafka allows any string; we need it non-empty, valid UTF-8 (a Prometheus label) and
  at most 4096 characters (a longer one is garbage, not a group).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = [
    "MAX_GROUP_LENGTH",
    "MAX_TOPIC_LENGTH",
    "escaped",
    "group_name_problem",
    "is_utf8",
    "printable",
    "topic_name_problem",
    "usable_group_names",
]

MAX_TOPIC_LENGTH = 249  # Kafka's limit (Topic.MAX_NAME_LENGTH)
MAX_GROUP_LENGTH = 4096
_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")
_JSON_TYPES = {dict: "an object", list: "an array", bool: "a boolean", int: "a number",
               float: "a number", type(None): "null"}


def is_utf8(text: str) -> bool:
    """False for strings holding lone surrogates, which no UTF-8 output can carry."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def escaped(value: object, limit: int = 80) -> str:
    """A name as it can be logged: quoted, non-printables escaped (no forged log lines), cut."""
    if not isinstance(value, str):
        return f"<{_JSON_TYPES.get(type(value), type(value).__name__)}>"
    if len(value) <= limit:
        return repr(value)
    return f"{value[:limit]!r}… ({len(value)} characters)"


def printable(value: str) -> str:
    """`value` unquoted, with every character a terminal would act on (control and format
    characters: an escape sequence, a newline, a bidi override) written as its Python escape:
    what a table shows a person, where a quoted name would be noise."""
    if value.isprintable():
        return value
    return "".join(c if c.isprintable() else c.encode("unicode_escape", "backslashreplace")
                   .decode("ascii") for c in value)


def group_name_problem(name: object) -> str | None:
    """Why `name` cannot be measured as a consumer group, or None when it can."""
    if not isinstance(name, str):
        return f"is {_JSON_TYPES.get(type(name), type(name).__name__)}, not a string"
    if not name:
        return "is empty"
    if len(name) > MAX_GROUP_LENGTH:
        return f"is {len(name)} characters long (at most {MAX_GROUP_LENGTH})"
    if not is_utf8(name):
        return "is not valid UTF-8 (a lone surrogate)"
    return None


def topic_name_problem(name: str) -> str | None:
    """Why `name` cannot be a Kafka topic, or None when it can."""
    if not name:
        return "is empty"
    if len(name) > MAX_TOPIC_LENGTH or not _TOPIC.fullmatch(name) or name in (".", ".."):
        return (f"is not a Kafka topic name ([a-zA-Z0-9._-], at most {MAX_TOPIC_LENGTH} "
                "characters)")
    return None


def usable_group_names(names: Iterable[object]) -> tuple[list[str], list[str]]:
    """(the usable group names, each once, in order; why each other entry was dropped)."""
    usable: dict[str, None] = {}  # a dict: kept in order, each name once
    rejected: list[str] = []
    for name in names:
        problem = group_name_problem(name)
        if problem is None and name in usable:
            problem = "is listed again"
        if problem is not None or not isinstance(name, str):
            rejected.append(f"consumer-list entry {escaped(name)} {problem}")
            continue
        usable[name] = None
    return list(usable), rejected
