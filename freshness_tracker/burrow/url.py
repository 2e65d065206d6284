"""Burrow's base URL: credentials come off before anything else parses it, so they never print.

`urllib.parse` ends the authority at the first `/`, `?` or `#`, so with a password such as
`Hash#Pw777` it sees no `user:password@` at all and the whole URL (password included) would
reach logs, `check`, `/healthz` and error messages. Here the credentials end at the LAST `@`
after `scheme://`, whatever they contain; an `@` meant for the path must be written `%40`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

__all__ = ["BurrowUrl", "BurrowUrlError", "parse_burrow_url", "split_credentials"]


class BurrowUrlError(ValueError):
    """A malformed base URL; the message names the wrong part and never the credentials."""

    def __init__(self, problem: str, fix: str) -> None:
        self.problem = problem
        self.fix = fix
        super().__init__(f"{problem}; {fix}")


@dataclass(frozen=True, slots=True)
class BurrowUrl:
    base: str  # scheme://host[:port][/path] without credentials or trailing slash: safe to print
    username: str | None = None  # percent-decoded; None when the URL has no `user@`
    password: str | None = field(default=None, repr=False)  # None when there is no `:password`


def split_credentials(url: str) -> tuple[str, str | None, str | None]:
    """(url without `user:password@`, user, password), splitting at the last `@` after `//`.

    The user ends at the first `:` (a `:` in a user name must be written `%3A`); both parts are
    percent-decoded.
    """
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest:
        return url, None, None
    userinfo, _, host = rest.rpartition("@")
    user, colon, password = userinfo.partition(":")
    return f"{scheme}{sep}{host}", unquote(user), unquote(password) if colon else None


_EXAMPLE = 'write e.g. "http://burrow:8000" or "https://user:password@burrow:8000"'


def parse_burrow_url(url: str) -> BurrowUrl:
    """Split off the credentials, then check what is left is an http(s) base URL.

    Errors say which part is wrong but never quote the URL: what looks like a host or a port
    may be the tail of a password cut short by an unquoted HOCON `#` comment.
    """
    base, user, password = split_credentials(url.strip())
    if re.search(r"\s", base):
        raise BurrowUrlError("contains whitespace", "remove it, or percent-encode it as %20")
    scheme = base.partition("://")[0].lower() if "://" in base else ""
    if scheme not in ("http", "https"):
        problem = (f"the scheme {scheme!r} is not http or https" if scheme.isalnum()
                   else "is not an http(s) URL (no http:// or https://)")
        raise BurrowUrlError(problem, _EXAMPLE)
    try:
        parts = urlsplit(base)
    except ValueError:  # "Invalid IPv6 URL": an unclosed [
        raise BurrowUrlError("the host is not valid (an IPv6 address goes in [ ])",
                             _EXAMPLE) from None
    if parts.query or parts.fragment or base.endswith(("?", "#")):
        raise BurrowUrlError(
            "has a query (?...) or a fragment (#...), which a base URL cannot have",
            "remove it; in a password, # / ? and @ need no escaping, and in the path "
            "write %23, %3F, %40")
    try:
        port = parts.port
        hostname = parts.hostname
    except ValueError:
        raise BurrowUrlError("the port is not a number from 1 to 65535", _EXAMPLE) from None
    if not hostname:
        raise BurrowUrlError("has no host", _EXAMPLE)
    if port == 0:
        raise BurrowUrlError("the port is not a number from 1 to 65535", _EXAMPLE)
    clean = f"{scheme}://{parts.netloc}{parts.path}".rstrip("/")
    return BurrowUrl(clean, user, password)
