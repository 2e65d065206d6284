"""Validated, frozen settings built from the merged HOCON tree.

Every problem is a ConfigError naming the HOCON key, what is wrong and how to fix it. Unknown
keys are warnings (with the nearest known key), because a typo should be visible but an
orchestrator adding a key must not break a running exporter.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from dateutil.relativedelta import relativedelta
from pyhocon import ConfigTree

from freshness_tracker.burrow.client import BurrowSettings
from freshness_tracker.domain.filters import NameFilter, Shard
from freshness_tracker.errors import ConfigError
from freshness_tracker.kafka.settings import ClusterKafkaSettings, LookupSettings

__all__ = [
    "ClusterSettings",
    "Granularity",
    "Settings",
    "WebSettings",
    "parse_duration",
    "redact",
    "require_files",
    "settings_from_tree",
]

SECRET_WORDS = ("password", "secret", "token", "key.pem", "credentials", "sasl.jaas")


class Granularity(StrEnum):
    """The finest level of labels exported (kminion's `granularity`)."""

    PARTITION = "partition"
    TOPIC = "topic"
    GROUP = "group"


@dataclass(frozen=True, slots=True)
class WebSettings:
    listen_address: str = "0.0.0.0"
    port: int = 8081
    tls_cert_file: str = ""
    tls_key_file: str = ""
    basic_auth_username: str = ""
    basic_auth_password: str = field(default="", repr=False)


@dataclass(frozen=True, slots=True)
class ClusterSettings:
    """One configured cluster; `kafka.properties` may lack bootstrap.servers (Burrow has them)."""

    name: str
    kafka: ClusterKafkaSettings

    def __repr__(self) -> str:
        return f"ClusterSettings(name={self.name!r}, kafka={redact(self.kafka.properties)!r})"


@dataclass(frozen=True, slots=True)
class Settings:
    burrow: BurrowSettings
    web: WebSettings
    frequency_s: float
    worker_threads: int
    granularity: Granularity
    groups: NameFilter
    topics: NameFilter
    lookup: LookupSettings
    shard: Shard
    history_path: str
    log_level: str
    log_format: str
    clusters: tuple[ClusterSettings, ...]
    warnings: tuple[str, ...] = ()

    def cluster(self, name: str) -> ClusterSettings:
    #: Hard deadline of one cluster cycle: every Burrow request and Kafka batch is cut at it,
    #: and a cycle still running then is published as failed (never served frozen).
    cycle_timeout_s: float = 120.0
        return next(c for c in self.clusters if c.name == name)


def require_files(settings: Settings) -> None:
    """The files the settings name must be readable here. Run where the config is used (CLI,
    Exporter start), not when it is parsed: a chart or CI validates configs whose files exist
    only inside the pod."""
    for key, path in (("burrow.caFile", settings.burrow.ca_file),
                      ("web.tlsCertFile", settings.web.tls_cert_file),
                      ("web.tlsKeyFile", settings.web.tls_key_file)):
        if path and not (os.path.isfile(path) and os.access(path, os.R_OK)):
            raise ConfigError(key, f"{path!r} is not a readable file",
                              "fix the path or leave the key empty")


def redact(properties: Mapping[str, str]) -> dict[str, str]:
    """A copy safe to log: values of secret-looking keys replaced."""
    return {k: ("***" if any(w in k.lower() for w in SECRET_WORDS) else v)
            for k, v in properties.items()}


#: Longer waits overflow the platform's timers (threading.Event.wait) and are never meant.
MAX_DURATION_S = 30 * 86400.0

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")
_UNITS = {"": 1.0, "ms": 1e-3, "millis": 1e-3, "milliseconds": 1e-3, "s": 1.0, "second": 1.0,
          "seconds": 1.0, "m": 60.0, "minute": 60.0, "minutes": 60.0, "h": 3600.0,
          "hour": 3600.0, "hours": 3600.0, "d": 86400.0, "day": 86400.0, "days": 86400.0}


def parse_duration(value: Any, key: str) -> float:
    """Seconds from a number or a HOCON duration ("10s", "500ms", "5m")."""
    if isinstance(value, relativedelta):
        base = value.days * 86400 + value.hours * 3600 + value.minutes * 60 + value.seconds
        return float(base + value.microseconds / 1e6)
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, bool):
        raise ConfigError(key, f"{value!r} is not a duration", 'write e.g. 10s, 500ms or 5m')
    if isinstance(value, int | float):
        return float(value)
    match = _DURATION.match(str(value))
    if match and match.group(2).lower() in _UNITS:
        return float(match.group(1)) * _UNITS[match.group(2).lower()]
    raise ConfigError(key, f"{value!r} is not a duration", "write e.g. 10s, 500ms or 5m")


class _Reader:
    """Typed access to a ConfigTree that names the full key path in every error."""

    def __init__(self, tree: Any, prefix: str = "") -> None:
        self.tree = tree
        self.prefix = prefix

    def path(self, key: str) -> str:
        return f"{self.prefix}.{key}" if self.prefix else key

    def raw(self, key: str) -> Any:
        node: Any = self.tree
        for part in key.split("."):
            if not isinstance(node, Mapping) or part not in node:
                raise ConfigError(self.path(key), "missing", "add it (see reference.conf)")
            node = node[part]
        return node

    def text(self, key: str, *, required: bool = False) -> str:
        value = self.raw(key)
        if isinstance(value, Mapping | list) or value is None:
            raise ConfigError(self.path(key), f"expected a string, got {_kind(value)}")
        text = str(value).strip()
        if required and not text:
            raise ConfigError(self.path(key), "must not be empty")
        return text

    def whole(self, key: str, low: int, high: int | None = None) -> int:
        value = self.raw(key)
        try:
            number = int(str(value).strip()) if not isinstance(value, bool) else None
        except ValueError:
            number = None
        if number is None:
            raise ConfigError(self.path(key), f"expected a whole number, got {value!r}")
        if number < low or (high is not None and number > high):
            bound = f"between {low} and {high}" if high is not None else f"at least {low}"
            raise ConfigError(self.path(key), f"{number} is out of range", f"use a value {bound}")
        return number

    def seconds(self, key: str, low: float = 0.0) -> float:
        value = parse_duration(self.raw(key), self.path(key))
        if value <= low:
            raise ConfigError(self.path(key), f"{value:g}s is too small",
                              f"use a duration above {low:g}s")
        if not value <= MAX_DURATION_S:  # also catches inf and nan (1e400 in HOCON)
            raise ConfigError(self.path(key), f"{value:g}s is too large",
                              f"use a duration up to {MAX_DURATION_S // 86400:g}d")
        return value

    def flag(self, key: str) -> bool:
        value = self.raw(key)
        if isinstance(value, bool):
            return value
        if str(value).lower() in ("true", "yes", "on", "1"):
            return True
        if str(value).lower() in ("false", "no", "off", "0"):
            return False
        raise ConfigError(self.path(key), f"expected true or false, got {value!r}")

    def regexes(self, key: str) -> list[str]:
        value = self.raw(key)
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            raise ConfigError(self.path(key), f"expected a list of regexes, got {_kind(value)}")
        for i, pattern in enumerate(value):
            try:
                re.compile(str(pattern))
            except re.error as exc:
                raise ConfigError(f"{self.path(key)}[{i}]", f"invalid regex {pattern!r}: {exc}",
                                  "fix the pattern (Python re syntax)") from exc
        return [str(p) for p in value]

    def choice(self, key: str, choices: Sequence[str]) -> str:
        value = self.text(key).lower()
        if value not in choices:
            raise ConfigError(self.path(key), f"{value!r} is not valid",
                              "valid values are " + ", ".join(repr(c) for c in choices))
        return value


def _kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return repr(value)


def _unquote(key: str) -> str:
    return key[1:-1] if len(key) >= 2 and key[0] == key[-1] == '"' else key


def _flatten(node: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """librdkafka keys are dotted; unquoted HOCON turns them into nested objects: undo that."""
    for key, value in node.items():
        name = f"{prefix}.{_unquote(key)}" if prefix else _unquote(key)
        if isinstance(value, Mapping):
            yield from _flatten(value, name)
        else:
            yield name, value


def _kafka_properties(value: Any, key: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(key, f"expected an object of librdkafka properties, got {_kind(value)}")
    out: dict[str, str] = {}
    for name, item in _flatten(value):
        if isinstance(item, list):
            item = ",".join(str(v) for v in item)
        elif isinstance(item, bool):
            item = "true" if item else "false"
        elif item is None:
            continue
        out[name] = str(item)
    return out


_CLUSTER_KEYS = ("name", "numConsumers", "kafka")


def _clusters(tree: Any, warnings: list[str]) -> tuple[ClusterSettings, ...]:
    raw = tree.get("clusters", [])
    if not isinstance(raw, list):
        raise ConfigError("clusters", f"expected a list, got {_kind(raw)}",
                          'write clusters = [{ name = "my-cluster", kafka { ... } }]')
    if not raw:
        raise ConfigError("clusters", "no cluster is configured",
                          'add clusters = [{ name = "<Burrow cluster name>" }]')
    seen: set[str] = set()
    out = []
    for i, entry in enumerate(raw):
        key = f"clusters[{i}]"
        if not isinstance(entry, Mapping):
            raise ConfigError(key, f"expected an object, got {_kind(entry)}")
        reader = _Reader(entry, key)
        name = reader.text("name", required=True)
        if name in seen:
            raise ConfigError(f"{key}.name", f"cluster {name!r} is configured twice",
                              "remove the duplicate entry")
        seen.add(name)
        num = reader.whole("numConsumers", 1, 256) if "numConsumers" in entry else 2
        props = _kafka_properties(entry.get("kafka", None), f"{key}.kafka")
        for unknown in set(entry) - set(_CLUSTER_KEYS):
            warnings.append(_unknown_message(f"{key}.{_unquote(unknown)}", unknown, _CLUSTER_KEYS))
        out.append(ClusterSettings(name, ClusterKafkaSettings(name, MappingProxyType(props), num)))
    return tuple(out)


def _unknown_message(path: str, key: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(key, list(known), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"{path}: unknown key, ignored{hint}"


def _unknown_keys(tree: Any, reference: Any, prefix: str, out: list[str]) -> None:
    for key, value in tree.items():
        path = f"{prefix}.{key}" if prefix else key
        if key not in reference:
            out.append(_unknown_message(path, key, list(reference)))
        elif isinstance(value, Mapping) and isinstance(reference[key], Mapping):
            _unknown_keys(value, reference[key], path, out)


def settings_from_tree(tree: ConfigTree, reference: Any = None) -> Settings:
    """Validate a merged tree into Settings."""
    from pyhocon import ConfigFactory

    from freshness_tracker.config.load import reference_text  # local: avoid an import cycle

    warnings: list[str] = []
    ref = reference if reference is not None else ConfigFactory.parse_string(
        reference_text(), resolve=False)
    _unknown_keys({k: v for k, v in tree.items() if k != "clusters"}, ref, "", warnings)

    r = _Reader(tree)
    url = r.text("burrow.url", required=True)
    if not re.match(r"^https?://[^/\s]+", url):
        raise ConfigError("burrow.url", f"{url!r} is not an http(s) URL",
                          'write e.g. burrow.url = "http://burrow:8000"')
    burrow = BurrowSettings(
        url=url,
        timeout_s=r.seconds("burrow.timeout"),
        retries=r.whole("burrow.retries", 0, 10),
        concurrency=r.whole("burrow.concurrency", 1, 256),
        username=r.text("burrow.username"),
        password=r.text("burrow.password"),
        ca_file=r.text("burrow.caFile"),
        tls_verify=r.flag("burrow.tlsVerify"),
    )
    web = WebSettings(
        listen_address=r.text("listenAddress", required=True),
        port=r.whole("port", 0, 65535),
        tls_cert_file=r.text("web.tlsCertFile"),
        tls_key_file=r.text("web.tlsKeyFile"),
        basic_auth_username=r.text("web.basicAuthUsername"),
        basic_auth_password=r.text("web.basicAuthPassword"),
    )
    if bool(web.tls_cert_file) != bool(web.tls_key_file):
        raise ConfigError("web.tlsCertFile", "TLS needs both a certificate and a key file",
                          "set both web.tlsCertFile and web.tlsKeyFile, or neither")
    lookup = LookupSettings(
        batch_size=r.whole("lookup.batchSize", 1, 100_000),
        timeout_s=r.seconds("lookup.timeout"),
        fetch_wait_max_ms=int(r.seconds("lookup.fetchWaitMax") * 1000),
        max_partition_fetch_bytes=r.whole("lookup.maxPartitionFetchBytes", 1024),
        fetch_max_bytes=r.whole("lookup.fetchMaxBytes", 1024),
        queued_max_messages_kbytes=r.whole("lookup.queuedMaxMessagesKbytes", 1),
        cache_size=r.whole("lookup.cacheSize", 0),
        topic_config_ttl_s=r.seconds("lookup.topicConfigTtl"),
        commit_lag_when_caught_up=r.flag("lookup.commitLagWhenCaughtUp"),
    )
    shard = Shard(index=r.whole("shard.index", 0), count=r.whole("shard.count", 1))
    if shard.index >= shard.count:
        raise ConfigError("shard.index", f"{shard.index} is not below shard.count {shard.count}",
                          "use 0 ≤ index < count")
    clusters = _clusters(tree, warnings)
    worker_threads = r.whole("workerThreadCount", 1, 1024)
    consumers = sum(c.kafka.num_consumers for c in clusters)
    if worker_threads < consumers:
        warnings.append(
            f"workerThreadCount: {worker_threads} threads for {consumers} consumers in all "
            f"clusters; a slow broker can then hold threads another cluster needs, so set "
            f"workerThreadCount to at least {consumers}")
    return Settings(
        burrow=burrow,
        web=web,
        frequency_s=r.seconds("frequency_sec"),
        worker_threads=worker_threads,
        granularity=Granularity(r.choice("granularity", [g.value for g in Granularity])),
        groups=NameFilter.compile(r.regexes("filters.groups.allow"),
                                  r.regexes("filters.groups.deny")),
        topics=NameFilter.compile(r.regexes("filters.topics.allow"),
                                  r.regexes("filters.topics.deny")),
        lookup=lookup,
        shard=shard,
        history_path=r.text("history.path"),
        log_level=r.choice("logging.level", ["debug", "info", "warning", "error"]).upper(),
        log_format=r.choice("logging.format", ["logfmt", "json"]),
        clusters=clusters,
        warnings=tuple(warnings),
    )
        max_response_bytes=r.whole("burrow.maxResponseBytes", 4096, 2**31),
        cycle_timeout_s=r.seconds("cycleTimeout", minimum=1.0, maximum=3600.0),
