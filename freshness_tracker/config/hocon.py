"""Read HOCON with local includes only and bounded work: every config the tracker reads (the
exporter's, an objectives file) is parsed here.

Left alone, pyhocon fetches `include url(...)` (and a plain include of an http(s):// or
file:// string) with urllib, imports a package for `include package(...)`, walks the file
system for an include with a wildcard, reads whatever an include names (/dev/zero, a FIFO), and
resolves substitutions by copying: a few hundred bytes of config could make the tracker reach
the network, hang on an address that never answers, or grow past a gigabyte. A config never
needs any of that, so each is refused with a ConfigError naming it and the fix, before any
network or file I/O, at any include depth.

pyhocon's include parse action finds `ConfigFactory` and `glob` in its module's globals; both
names are pointed at the guarded versions below once, at import, so no include anywhere in the
process can bypass them (whatever its spelling: the parser decides what is a URL, not a regex).
"""

from __future__ import annotations

import contextvars
import logging
import os
import re
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

import pyhocon.config_parser as _pyhocon
from pyhocon import ConfigFactory
from pyhocon.config_parser import DEFAULT_SUBSTITUTION, ConfigParser
from pyhocon.config_tree import ConfigSubstitution, ConfigValues
from pyparsing import ParseBaseException

from freshness_tracker.errors import ConfigError

__all__ = ["INCLUDE_LINE", "INCLUDE_PROBLEM", "MAX_CONFIG_BYTES", "MAX_INCLUDES",
           "MAX_SUBSTITUTED", "MAX_SUBSTITUTION_TOKENS", "NO_URL_FIX", "parse_hocon",
           "read_config_file", "short_parse_message"]

log = logging.getLogger(__name__)

#: A config file (and, together, the files it includes): real ones are a few KiB. pyhocon's
#: pure-Python parser spends milliseconds per short list item, so this bound keeps the worst
#: parse (a long flat list) to seconds, on a SIGHUP reload too.
MAX_CONFIG_BYTES = 32 * 1024
#: Included files per document: enough for any layout, and an include cycle stops here.
MAX_INCLUDES = 32
#: Substitutions resolved per document, and the characters (plus list and object entries) they
#: copy in all: `b = ${a}${a}...` nine levels deep is refused here instead of taking gigabytes.
MAX_SUBSTITUTIONS = 2000
MAX_SUBSTITUTED = 200_000
#: `${...}` written in a document (its includes too), counted before anything is resolved:
#: pyhocon rescans every substitution after each one it resolves (quadratic work), so a few KiB
#: of `${s}${s}...` would take minutes before the bounds above could stop it.
MAX_SUBSTITUTION_TOKENS = 200

NO_URL_FIX = 'save the file next to the config and include it by path, e.g. include "extra.conf"'
#: A parse error on a line starting so is an include pyhocon has no syntax for (classpath(...)).
INCLUDE_LINE = re.compile(r"^\s*include\b", re.IGNORECASE)
INCLUDE_PROBLEM = ("is an include of a kind not supported: a config includes local files only, "
                   'as include "file.conf", include file("...") or include required(...) of '
                   "one (url(...), classpath(...) and package(...) are refused)")


@dataclass
class _Budget:
    source: str
    included_bytes: int = 0
    includes: int = 0
    substitutions: int = 0
    substituted: int = 0


_BUDGET: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar("hocon_budget",
                                                                         default=None)


def _budget() -> _Budget:
    return _BUDGET.get() or _Budget("config")


def _without_userinfo(url: str) -> str:
    """A URL fit for an error: `user:password@` dropped."""
    return re.sub(r"(?<=//)[^/@]*@", "***@", url)


def read_config_file(path: str, source: str, *, limit: int = MAX_CONFIG_BYTES,
                     verb: str = "cannot read") -> str:
    """A regular file's UTF-8 text, at most `limit` bytes, or a ConfigError keyed `source`
    saying why not (`verb` and the path first).

    Opened without blocking and checked on the open descriptor: a FIFO, a device (/dev/zero)
    or a directory is refused, never read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise ConfigError(source, f"{verb} {path!r}: {exc.strerror or exc}",
                          "check the path and its permissions") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        what = "is a directory" if stat.S_ISDIR(mode) else "is not a regular file"
        raise ConfigError(source, f"{verb} {path!r}: it {what}", "give the path of a config file")
    with os.fdopen(fd, "rb") as file:
        data = file.read(max(limit, 0) + 1)
    if len(data) > limit:
        raise ConfigError(source, f"{verb} {path!r}: larger than {MAX_CONFIG_BYTES // 1024} KiB "
                          "(with what else it includes), more than any config needs",
                          "check that this is the config file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(source, f"{verb} {path!r}: not UTF-8 text (byte {exc.start}: "
                          f"{exc.reason})", "save the file as UTF-8") from None


class _Parser(ConfigParser):  # type: ignore[misc]
    """pyhocon's parser with `include package(...)` refused and substitution work bounded."""

    @classmethod
    def resolve_package_path(cls, package_path: str) -> NoReturn:
        raise ConfigError(_budget().source, f"include package({package_path!r}) is not "
                          "supported (it would import a Python package)",
                          'include the file by its path, e.g. include "extra.conf"')

    @classmethod
    def _do_substitute(cls, substitution: Any, resolved_value: Any,
                       is_optional_resolved: bool = True) -> Any:
        budget = _budget()
        budget.substitutions += 1
        budget.substituted += _size(resolved_value, MAX_SUBSTITUTED - budget.substituted + 1)
        if budget.substitutions > MAX_SUBSTITUTIONS or budget.substituted > MAX_SUBSTITUTED:
            raise ConfigError(budget.source, f"its substitutions (${{...}}) expand to more "
                              f"than {MAX_SUBSTITUTIONS} values or {MAX_SUBSTITUTED:,} "
                              "characters, far more than any config needs (a value built "
                              "from references to values built from references?)",
                              "write the values out, or substitute fewer times")
        return super()._do_substitute(substitution, resolved_value, is_optional_resolved)

    @classmethod
    def resolve_substitutions(cls, config: Any, accept_unresolved: bool = False) -> Any:
        written = _substitution_tokens(config, MAX_SUBSTITUTION_TOKENS + 1)
        if written > MAX_SUBSTITUTION_TOKENS:
            raise ConfigError(_budget().source, f"has more than {MAX_SUBSTITUTION_TOKENS} "
                              "substitutions (${...}), far more than any config needs",
                              "write the values out, or substitute fewer times")
        return super().resolve_substitutions(config, accept_unresolved)


def _nodes(value: Any) -> Iterator[Any]:
    """Every node of a parsed tree or a resolved value, depth first (iteratively: it may nest
    deeply); callers stop early, so a value built by substitution, which shares its parts, is
    never walked in full."""
    stack = [value]
    while stack:
        item = stack.pop()
        yield item
        if isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, ConfigValues):
            stack.extend(item.tokens)


def _substitution_tokens(config: Any, limit: int) -> int:
    """The `${...}` in a parsed, unresolved tree, counted up to `limit`."""
    count = 0
    for item in _nodes(config):
        if isinstance(item, ConfigSubstitution):
            count += 1
            if count >= limit:
                break
    return count


def _size(value: Any, limit: int) -> int:
    """Characters plus list and object entries in `value`, counted up to `limit`."""
    total = 0
    for item in _nodes(value):
        total += 1
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, Mapping):
            total += sum(len(str(k)) for k in item)
        if total >= limit:
            break
    return total


class _LocalIncludes(ConfigFactory):  # type: ignore[misc]
    """What pyhocon's include parse action calls: URLs refused, local files bounded."""

    @classmethod
    def parse_URL(cls, url: str, *_args: Any, **_kwargs: Any) -> NoReturn:
        raise ConfigError(_budget().source, f"includes the URL {_without_userinfo(url)!r}: a "
                          "config is read from local files only, never from the network",
                          NO_URL_FIX)

    @classmethod
    def parse_file(cls, filename: str, encoding: str = "utf-8", required: bool = True,
                   resolve: bool = True,
                   unresolved_value: Any = DEFAULT_SUBSTITUTION) -> Any:
        budget = _budget()
        budget.includes += 1
        if budget.includes > MAX_INCLUDES:
            raise ConfigError(budget.source, "its includes form a cycle (a file includes itself, "
                              f"directly or through another) or number more than {MAX_INCLUDES}",
                              "remove the include that closes the cycle, or merge files")
        if not required and not os.path.exists(filename):
            log.warning("config %s: include %r: no such file, skipped", budget.source, filename)
            return []
        text = read_config_file(filename, budget.source, verb="cannot include",
                                limit=MAX_CONFIG_BYTES - budget.included_bytes)
        budget.included_bytes += len(text.encode("utf-8"))
        try:
            return _Parser.parse(text, os.path.dirname(filename), resolve, unresolved_value)
        except ParseBaseException as exc:  # its line is the included file's, not the config's
            raise ConfigError(budget.source, f"cannot include {filename!r}: not valid HOCON at "
                              f"line {exc.lineno}, column {exc.col}"
                              f"{short_parse_message(exc)}", "check the syntax there") from None


def short_parse_message(exc: ParseBaseException) -> str:
    """pyparsing's message, or nothing when it is a dump of the grammar (kilobytes of it)."""
    message = " ".join(str(exc.msg).split())
    return f": {message}" if len(message) <= 80 else ""


def _no_glob(pattern: str, **_kwargs: Any) -> NoReturn:
    raise ConfigError(_budget().source, f"include {pattern!r} has a wildcard, which would "
                      "search the file system", "include each file by its path")


_pyhocon.ConfigFactory = _LocalIncludes
_pyhocon.glob = _no_glob


def parse_hocon(text: str, source: str, basedir: str | None = None) -> Any:
    """`text` parsed and resolved (a ConfigTree or a list); pyhocon's own exceptions pass
    through for the caller to word, the refusals above are ConfigErrors naming `source`."""
    token = _BUDGET.set(_Budget(source))
    try:
        return _Parser.parse(text, basedir, True, DEFAULT_SUBSTITUTION)
    finally:
        _BUDGET.reset(token)
