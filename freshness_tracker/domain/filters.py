"""Which groups and topics to measure: allow/deny regexes and sharding across replicas."""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["NameFilter", "Shard"]


@dataclass(frozen=True, slots=True)
class NameFilter:
    """A name is kept when it fully matches an allow pattern and no deny pattern.

    Patterns are compiled once; `fullmatch` so `orders` does not also select `orders-dlq`
    (write `orders.*` for that), the same as kafka-lag-exporter and kminion. `re.DOTALL`, so
    `.` matches a newline as well: Kafka allows one in a group id, and the default `.*` must
    select every name, never silently skip one.
    """

    allow: tuple[re.Pattern[str], ...]
    deny: tuple[re.Pattern[str], ...]

    @classmethod
    def compile(cls, allow: Sequence[str] = (".*",), deny: Sequence[str] = ()) -> NameFilter:
        return cls(tuple(re.compile(p, re.DOTALL) for p in allow),
                   tuple(re.compile(p, re.DOTALL) for p in deny))

    def __call__(self, name: str) -> bool:
        return (any(p.fullmatch(name) for p in self.allow)
                and not any(p.fullmatch(name) for p in self.deny))


@dataclass(frozen=True, slots=True)
class Shard:
    """Replica `index` of `count` keeps the groups whose stable hash lands on it.

    CRC32 of "cluster\\0consumer" is stable across processes and Python versions (unlike
    `hash()`), so every replica agrees on the split without talking to the others.
    """

    index: int = 0
    count: int = 1

    def owns(self, cluster: str, consumer: str) -> bool:
        if self.count <= 1:
            return True
        # surrogatepass: a name that is not UTF-8 still hashes (it is rejected later, counted);
        # for every valid name the bytes, and so the split, are plain UTF-8's.
        digest = zlib.crc32(f"{cluster}\0{consumer}".encode("utf-8", "surrogatepass"))
        return digest % self.count == self.index
