"""Validated, frozen settings built from the merged HOCON tree.

Every problem is a ConfigError naming the HOCON key, what is wrong and how to fix it. Unknown
keys are warnings (with the nearest known key), because a typo should be visible but an
orchestrator adding a key must not break a running exporter.
"""

from __future__ import annotations

import difflib
import importlib.util
import os
import re
import ssl
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from types import MappingProxyType
from typing import Any

from dateutil.relativedelta import relativedelta
from pyhocon import ConfigTree

from freshness_tracker.burrow.settings import BurrowSettings
from freshness_tracker.burrow.url import BurrowUrlError, parse_burrow_url
from freshness_tracker.domain.filters import NameFilter, Shard
from freshness_tracker.errors import ConfigError
from freshness_tracker.errors import described as _described
from freshness_tracker.errors import scalar_kind as _scalar_kind
from freshness_tracker.kafka.settings import ClusterKafkaSettings, LookupSettings
from freshness_tracker.metrics import (
    ALL_PARTITION_METRICS,
    FRESHNESS,
    RESERVED_LABELS,
    Granularity,
)
from freshness_tracker.reference import (
    default,
    default_seconds,
    parse_duration,
    reference_tree,
)
from freshness_tracker.web_settings import WebSettings

__all__ = [
    "ClusterSettings",
    "Settings",
    "redact",
    "require_files",
    "settings_from_tree",
]

SECRET_WORDS = ("password", "secret", "token", "key.pem", "credentials", "sasl.jaas")


@dataclass(frozen=True, slots=True)
class ClusterSettings:
    """One configured cluster; `kafka.properties` may lack bootstrap.servers (Burrow has them).
    `labels` are its static labels, on every series of the cluster (`clusters[].labels`). Its
    name is the Kafka settings' (one name, carried once)."""

    kafka: ClusterKafkaSettings
    labels: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def name(self) -> str:
        return self.kafka.name

    def __repr__(self) -> str:
        return (f"ClusterSettings(name={self.name!r}, kafka={redact(self.kafka.properties)!r}, "
                f"labels={dict(self.labels)!r})")


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
    #: Hard deadline of one cluster cycle: every Burrow request and Kafka batch is cut at it,
    #: and a cycle still running then is published as failed (never served frozen).
    cycle_timeout_s: float = default_seconds("cycleTimeout")
    #: The per-partition families exported at partition granularity (`partitionMetrics`).
    partition_metrics: tuple[str, ...] = tuple(default("partitionMetrics"))
    #: The file was the Consumer Freshness Tracker's YAML (known when it was read, so nothing
    #: reads it again to say so). Not a setting: equal settings from either format are equal.
    from_yaml: bool = field(default=False, compare=False)


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
    if settings.burrow.ca_file:  # else every request fails, each cycle, as "cannot reach"
        try:
            ssl.create_default_context(cafile=settings.burrow.ca_file)
        except ssl.SSLError as exc:
            raise ConfigError("burrow.caFile", f"{settings.burrow.ca_file!r} holds no usable "
                              f"certificate ({exc.reason or exc})",
                              "give a PEM file of CA certificates") from None
    if settings.history_path:
        _require_history_dir(settings.history_path)


def _require_history_dir(path: str) -> None:
    """A local history.path must be (or be creatable as) a writable directory: found here it is
    one line at startup, found by the sink it is a traceback in every cycle. URIs (s3://...)
    are left to pyarrow: checking them would need the network."""
    if importlib.util.find_spec("pyarrow") is None:
        raise ConfigError("history.path", "needs the history extra (pyarrow)",
                          "pip install 'freshness-tracker[history]', or leave history.path empty")
    if "://" in path and not path.startswith("file://"):
        return
    local = os.path.abspath(path.removeprefix("file://"))
    fix = "use a directory this user can write, or leave history.path empty"
    existing = local
    while not os.path.lexists(existing):  # the nearest ancestor that exists gets created in
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        what = "is" if existing == local else f"needs {existing!r} to be a directory, but it is"
        raise ConfigError("history.path", f"{path!r} {what} a file, not a directory", fix)
    if not os.access(existing, os.W_OK | os.X_OK):
        where = "" if existing == local else f" ({existing!r}, where it would be created)"
        raise ConfigError("history.path", f"{path!r} is not writable by this user{where}", fix)


def redact(properties: Mapping[str, str]) -> dict[str, str]:
    """A copy safe to log: values of secret-looking keys replaced."""
    return {k: ("***" if any(w in k.lower() for w in SECRET_WORDS) else v)
            for k, v in properties.items()}


#: Longer waits overflow the platform's timers (threading.Event.wait) and are never meant.
MAX_DURATION_S = 30 * 86400.0
#: Below this, cycles only hammer Burrow: a cycle itself takes longer (`1e-9` ran 793 in 6 s).
MIN_FREQUENCY_S = 1.0
#: Timeouts: shorter ones fail every request of a healthy Burrow or broker; longer ones hold a
#: cycle (and the threads it uses) long after any answer could still be useful.
MIN_TIMEOUT_S = 0.1
MAX_TIMEOUT_S = 600.0
#: librdkafka's ranges for the properties the lookup keys set.
MAX_FETCH_WAIT_MS = 300_000
MAX_PARTITION_FETCH_BYTES = 1_000_000_000
MAX_FETCH_BYTES = 2_147_483_135
MAX_QUEUED_KBYTES = 2_097_151

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
        if not isinstance(value, str):
            # Unquoted, HOCON reads 007 as 7, 10s as a duration and true as a boolean: the text
            # as written is lost, and str() of it would be a wrong name or password. The value
            # is not quoted back: it may be a secret.
            raise ConfigError(self.path(key), f"expected a string, got {_scalar_kind(value)}",
                              "write the value in double quotes")
        text = value.strip()
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
            raise ConfigError(self.path(key), f"expected a whole number, got {_described(value)}")
        if number < low or (high is not None and number > high):
            bound = f"between {low} and {high}" if high is not None else f"at least {low}"
            raise ConfigError(self.path(key), "the number is out of range",  # never echoed
                              f"use a value {bound}")
        return number

    def seconds(self, key: str, *, minimum: float, maximum: float = MAX_DURATION_S) -> float:
        """A duration of at least `minimum` (above 0) and at most `maximum`."""
        value = parse_duration(self.raw(key), self.path(key))  # its errors never echo it
        if value < minimum:
            raise ConfigError(self.path(key), f"{_duration(value)} is too small",
                              f"use at least {_duration(minimum)}")
        if not value <= maximum:  # also catches inf and nan (1e400 in HOCON)
            raise ConfigError(self.path(key), f"{_duration(value)} is too large",
                              f"use a duration up to {_duration(maximum)}")
        return value

    def flag(self, key: str) -> bool:
        value = self.raw(key)
        if isinstance(value, bool):
            return value
        if str(value).lower() in ("true", "yes", "on", "1"):
            return True
        if str(value).lower() in ("false", "no", "off", "0"):
            return False
        raise ConfigError(self.path(key), f"expected true or false, got {_described(value)}")

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
                raise ConfigError(f"{self.path(key)}[{i}]", f"invalid regex ({exc})",
                                  "fix the pattern (Python re syntax)") from exc
            except (RecursionError, OverflowError, MemoryError, ValueError):
                # a thousand nested groups exhaust re's recursive parser
                raise ConfigError(f"{self.path(key)}[{i}]", "the regex nests too deeply or is "
                                  "too large to compile", "simplify the pattern") from None
        return [str(p) for p in value]

    def choice(self, key: str, choices: Sequence[str]) -> str:
        value = self.text(key).lower()
        if value not in choices:
            raise ConfigError(self.path(key), f"{_described(value)} is not valid",
                              "valid values are " + ", ".join(repr(c) for c in choices))
        return value


def _kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return _described(value)


def _duration(seconds: float) -> str:
    """Seconds as the unit a user would write: 30d, 10m, 1s, 100ms, 1e-09s."""
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("m", 60.0), ("s", 1.0), ("ms", 1e-3)):
        if seconds >= size and (seconds / size).is_integer():
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


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


#: librdkafka properties that load a shared library, run a command or fetch a URL: a config
#: must not be a way to run code in the tracker's process (`check` builds a client from it),
#: and the tracker needs none of them to read offsets. Refused before any client is built.
_EXECUTING: Mapping[str, str] = MappingProxyType({
    "plugin.library.paths": "it loads a shared library into the process",
    "ssl.engine.location": "it loads an OpenSSL engine (a shared library) into the process",
    "ssl.providers": "it loads OpenSSL providers (shared libraries) into the process",
    "sasl.kerberos.kinit.cmd": "it runs a shell command",
    "sasl.oauthbearer.token.endpoint.url": "it makes the client fetch a URL",
    "on_commit": "a callback cannot be configured in a file",
    "on_delivery": "a callback cannot be configured in a file",
    "logger": "a callback cannot be configured in a file",
})
_EXECUTING_FIX = ("remove it: the tracker reads offsets with plain SSL/SASL settings "
                  "(PLAIN, SCRAM, GSSAPI with a keytab, OAUTHBEARER only with a static config)")


#: librdkafka's default kinit command is a shell line with these values pasted in, unquoted.
_KINIT_ARGUMENTS = ("sasl.kerberos.principal", "sasl.kerberos.keytab")
_KINIT_SAFE = re.compile(r"^[A-Za-z0-9._/@+=:,-]*$")


def _refuse_executing(name: str, value: str, key: str) -> None:
    """ConfigError for a property that would load code, run a command or fetch a URL."""
    lowered = name.strip().lower()
    reason = _EXECUTING.get(lowered)
    if reason is None and lowered.endswith(("_cb", ".cb")):
        reason = "a callback cannot be configured in a file"
    if reason is None and lowered == "sasl.oauthbearer.method" and \
            value.strip().lower() == "oidc":
        reason = "oidc makes the client fetch tokens from a URL"
    if reason is None and lowered in _KINIT_ARGUMENTS and not _KINIT_SAFE.match(value):
        raise ConfigError(f'{key}."{name}"', f"{_described(value)} with characters a shell "
                          "reads specially: librdkafka puts it into the kinit command it runs",
                          "use the principal or keytab path as written (letters, digits "
                          "and . _ / @ + = : , -)")
    if reason is not None:
        raise ConfigError(f'{key}."{name}"', f"is not allowed: {reason}", _EXECUTING_FIX)


def _kafka_properties(value: Any, key: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(key, f"expected an object of librdkafka properties, got {_kind(value)}")
    out: dict[str, str] = {}
    for name, item in _flatten(value):
        if isinstance(item, relativedelta | timedelta):
            raise ConfigError(f'{key}."{name}"', "librdkafka takes no HOCON durations",
                              'write the number librdkafka expects (e.g. milliseconds: 10000), '
                              'or quote the value')
        if isinstance(item, list):
            item = ",".join(str(v) for v in item)
        elif isinstance(item, bool):
            item = "true" if item else "false"
        elif item is None:
            continue
        _refuse_executing(name, str(item), key)
        out[name] = str(item)
    return out


_CLUSTER_KEYS = ("name", "numConsumers", "kafka", "labels")
#: Prometheus' label name syntax (the classic one every version and client reads).
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


def _static_labels(value: Any, key: str) -> dict[str, str]:
    """`clusters[i].labels { env = "prod" }`: label names Prometheus accepts and the tracker
    does not set itself, each with a string value."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(key, f"expected an object of label names and values, got "
                          f"{_kind(value)}", 'write e.g. labels { env = "prod", region = "eu" }')
    out: dict[str, str] = {}
    for raw_name, item in value.items():
        name = _unquote(raw_name)
        where = f"{key}.{name}"
        if not _LABEL_NAME.match(name):
            raise ConfigError(where, f"{name!r} is not a Prometheus label name",
                              "use letters, digits and underscores, not starting with a digit")
        if name.startswith("__"):
            raise ConfigError(where, "names starting with __ are reserved for Prometheus' "
                              "own labels", "choose a name without the leading underscores")
        if name in RESERVED_LABELS:
            raise ConfigError(where, f"{name!r} is a label the tracker or Prometheus sets itself "
                              f"({', '.join(sorted(RESERVED_LABELS))})",
                              f"choose another name, e.g. {name}_name or kafka_{name}")
        if isinstance(item, Mapping | list) or item is None:
            raise ConfigError(where, f"expected a string, got {_kind(item)}",
                              'write the value in double quotes, e.g. env = "prod"')
        if not isinstance(item, str):
            raise ConfigError(where, f"expected a string, got {_scalar_kind(item)}",
                              "write the value in double quotes")
        out[name] = item
    return out


def _clusters(tree: Any, warnings: list[str]) -> tuple[ClusterSettings, ...]:
    raw = tree.get("clusters", [])
    if not isinstance(raw, list):
        raise ConfigError("clusters", f"expected a list, got {_kind(raw)}",
                          'write clusters = [{ name = "my-cluster", kafka { ... } }]')
    if not raw:
        raise ConfigError("clusters", "no cluster is configured",
                          'add clusters = [{ name = "<Burrow cluster name>" }]')
    seen: dict[str, int] = {}
    out = []
    for i, entry in enumerate(raw):
        key = f"clusters[{i}]"
        if not isinstance(entry, Mapping):
            raise ConfigError(key, f"expected an object, got {_kind(entry)}")
        reader = _Reader(entry, key)
        name = reader.text("name", required=True)
        if name in seen:  # the name is not echoed: it may come from a substitution
            raise ConfigError(f"{key}.name", f"is the same as clusters[{seen[name]}].name",
                              "remove the duplicate entry")
        seen[name] = i
        props = _kafka_properties(entry.get("kafka", None), f"{key}.kafka")
        labels = _static_labels(entry.get("labels", None), f"{key}.labels")
        for unknown in set(entry) - set(_CLUSTER_KEYS):
            warnings.append(_unknown_message(f"{key}.{_unquote(unknown)}", unknown, _CLUSTER_KEYS))
        kafka = ClusterKafkaSettings(name, MappingProxyType(props))  # numConsumers: its default
        if "numConsumers" in entry:
            kafka = replace(kafka, num_consumers=reader.whole("numConsumers", 1, 256))
        out.append(ClusterSettings(kafka, MappingProxyType(labels)))
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


def _burrow(r: _Reader, warnings: list[str]) -> BurrowSettings:
    """Credentials leave the URL here, so `BurrowSettings.url` is always safe to print."""
    try:
        url = parse_burrow_url(r.text("burrow.url", required=True))
    except BurrowUrlError as exc:
        raise ConfigError("burrow.url", exc.problem, exc.fix) from None
    username, password = r.text("burrow.username"), r.text("burrow.password")
    if url.username is not None:
        if username:
            warnings.append("burrow.url: its user and password are ignored because "
                            "burrow.username is set; keep the credentials in one place")
        else:
            username, password = url.username, password or url.password or ""
    if password and not username:
        # a password without a user is no credential: auth would be silently off.
        raise ConfigError("burrow.password", "is set but burrow.username is empty, so no "
                          "credentials would be sent", "set burrow.username too "
                          "(or FRESHNESS_TRACKER_BURROW_USERNAME)")
    return BurrowSettings(
        url=url.base,
        timeout_s=r.seconds("burrow.timeout", minimum=MIN_TIMEOUT_S, maximum=MAX_TIMEOUT_S),
        retries=r.whole("burrow.retries", 0, 10),
        concurrency=r.whole("burrow.concurrency", 1, 256),
        username=username,
        password=password,
        ca_file=r.text("burrow.caFile"),
        tls_verify=r.flag("burrow.tlsVerify"),
        max_response_bytes=r.whole("burrow.maxResponseBytes", 4096, 2**31),
    )


def _web(r: _Reader) -> WebSettings:
    """The listener; half-configured TLS or basic auth is refused, never silently dropped."""
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
    if web.basic_auth_password and not web.basic_auth_username:
        raise ConfigError("web.basicAuthUsername", "is empty while web.basicAuthPassword is "
                          "set, so /metrics would be served without auth",
                          "set web.basicAuthUsername too, or remove the password")
    if web.basic_auth_username and not web.basic_auth_password:
        raise ConfigError("web.basicAuthPassword", "is empty while web.basicAuthUsername is "
                          "set, so anyone sending that user and an empty password gets in",
                          "set web.basicAuthPassword (or FRESHNESS_TRACKER_WEB_PASSWORD), "
                          "or remove the username")
    if ":" in web.basic_auth_username:
        raise ConfigError("web.basicAuthUsername", "contains ':', which basic auth uses to end "
                          "the user name, so no client could log in", "choose a name without ':'")
    return web


def settings_from_tree(tree: ConfigTree, reference: Any = None) -> Settings:
    """Validate a merged tree into Settings."""
    warnings: list[str] = []
    ref = reference if reference is not None else reference_tree()
    _unknown_keys({k: v for k, v in tree.items() if k != "clusters"}, ref, "", warnings)

    r = _Reader(tree)
    burrow = _burrow(r, warnings)
    web = _web(r)
    lookup_timeout = r.seconds("lookup.timeout", minimum=MIN_TIMEOUT_S, maximum=MAX_TIMEOUT_S)
    fetch_wait = r.seconds("lookup.fetchWaitMax", minimum=0.001,
                           maximum=MAX_FETCH_WAIT_MS / 1000)
    if fetch_wait >= lookup_timeout:
        raise ConfigError("lookup.fetchWaitMax", f"{_duration(fetch_wait)} is not below "
                          f"lookup.timeout {_duration(lookup_timeout)}, so a batch could time "
                          "out while the broker holds its fetch", "use a shorter duration")
    lookup = LookupSettings(
        batch_size=r.whole("lookup.batchSize", 1, 100_000),
        timeout_s=lookup_timeout,
        fetch_wait_max_ms=round(fetch_wait * 1000),
        max_partition_fetch_bytes=r.whole("lookup.maxPartitionFetchBytes", 1024,
                                          MAX_PARTITION_FETCH_BYTES),
        fetch_max_bytes=r.whole("lookup.fetchMaxBytes", 1024, MAX_FETCH_BYTES),
        queued_max_messages_kbytes=r.whole("lookup.queuedMaxMessagesKbytes", 1,
                                           MAX_QUEUED_KBYTES),
        cache_size=r.whole("lookup.cacheSize", 0),
        topic_config_ttl_s=r.seconds("lookup.topicConfigTtl", minimum=1.0),
        commit_lag_when_caught_up=r.flag("lookup.commitLagWhenCaughtUp"),
    )
    shard = Shard(index=r.whole("shard.index", 0), count=r.whole("shard.count", 1))
    if shard.index >= shard.count:
        raise ConfigError("shard.index", "is not below shard.count",
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
        frequency_s=r.seconds("frequency_sec", minimum=MIN_FREQUENCY_S),
        worker_threads=worker_threads,
        granularity=Granularity(r.choice("granularity", [g.value for g in Granularity])),
        groups=_filter(r, "filters.groups"),
        topics=_filter(r, "filters.topics"),
        lookup=lookup,
        shard=shard,
        history_path=r.text("history.path"),
        log_level=r.choice("logging.level", ["debug", "info", "warning", "error"]).upper(),
        log_format=r.choice("logging.format", ["logfmt", "json"]),
        clusters=clusters,
        warnings=tuple(warnings),
        cycle_timeout_s=r.seconds("cycleTimeout", minimum=1.0, maximum=3600.0),
        partition_metrics=_partition_metrics(r),
    )


def _filter(r: _Reader, key: str) -> NameFilter:
    """The allow and deny lists as one filter; each pattern was compiled alone by `regexes`,
    and joining them must not become a traceback either."""
    allow, deny = r.regexes(f"{key}.allow"), r.regexes(f"{key}.deny")
    try:
        return NameFilter.compile(allow, deny)
    except (re.error, RecursionError, OverflowError, MemoryError, ValueError):
        raise ConfigError(key, "its regexes nest too deeply or are too large to compile "
                          "together", "simplify the patterns") from None


def _partition_metrics(r: _Reader) -> tuple[str, ...]:
    """Known family names, each once, in the exposition's order."""
    value = r.raw("partitionMetrics")
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError("partitionMetrics", f"expected a list of metric names, got "
                          f"{_kind(value)}", "write e.g. partitionMetrics = "
                          f'["{FRESHNESS.name}"]')
    for i, name in enumerate(value):
        if name not in ALL_PARTITION_METRICS:
            raise ConfigError(f"partitionMetrics[{i}]", f"{_described(name)} is no "
                              "per-partition metric name",
                              "valid names are " + ", ".join(ALL_PARTITION_METRICS))
    return tuple(n for n in ALL_PARTITION_METRICS if n in value)
