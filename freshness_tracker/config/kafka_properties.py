"""librdkafka properties are checked when a client is built, so build them once at startup.

librdkafka rejects an unknown property (`bootstrap.server`), a bad value (`security.protocol =
garbage`) or an inconsistent set (SASL without a password) in the client's constructor, not
when it connects. Without this check `check` died with a KafkaException traceback and `run`
started anyway, failing every cycle under "no broker reachable". The clients are built exactly
as the exporter builds them (the lookup Consumer and the AdminClient for retention.ms) but
without `bootstrap.servers`, so nothing connects, and closed at once.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from typing import Any

from freshness_tracker.config.settings import Settings
from freshness_tracker.errors import ConfigError

__all__ = ["validate_kafka_properties"]

#: The librdkafka properties the `lookup` keys set, for errors librdkafka reports about them.
LOOKUP_KEYS: Mapping[str, str] = {
    "fetch.wait.max.ms": "lookup.fetchWaitMax",
    "max.partition.fetch.bytes": "lookup.maxPartitionFetchBytes",
    "fetch.max.bytes": "lookup.fetchMaxBytes",
    "queued.max.messages.kbytes": "lookup.queuedMaxMessagesKbytes",
}

#: Properties that would make the client connect (or say it cannot): left out of the check.
_CONNECTING = ("bootstrap.servers", "metadata.broker.list")

_QUOTED = re.compile(r'["`]([A-Za-z0-9._-]+)["`]')
_PROPERTY = re.compile(r"\b[a-z][a-z0-9]*(?:\.[a-z0-9]+)+\b")

#: librdkafka's own log lines during the check (e.g. "No bootstrap.servers configured") would
#: break the one-line error; they are not needed, the exception carries the reason.
_SILENT = logging.getLogger("freshness_tracker.config.kafka_properties.librdkafka")
_SILENT.addHandler(logging.NullHandler())
_SILENT.propagate = False


def validate_kafka_properties(settings: Settings) -> None:
    """ConfigError `clusters[N].kafka."key": <librdkafka's message>` for the first bad property."""
    from confluent_kafka import Consumer, KafkaException
    from confluent_kafka.admin import AdminClient

    from freshness_tracker.kafka.consumers import CLIENT_ID, build_consumer_config

    for index, cluster in enumerate(settings.clusters):
        props = dict(cluster.kafka.properties)
        consumer_config, _ = build_consumer_config(cluster.kafka, settings.lookup)
        admin_config = {"client.id": CLIENT_ID, **props}  # as topic_config builds it
        try:
            Consumer(_offline(consumer_config)).close()
            # The AdminClient has no close(): dropping the only reference destroys the handle.
            AdminClient(_offline(admin_config))
        except KafkaException as exc:
            raise _error(index, props, exc.args[0].str()) from None
        except (TypeError, ValueError) as exc:  # confluent-kafka's callbacks (error_cb = "x")
            raise _error(index, props, str(exc)) from None


def _offline(config: Mapping[str, str]) -> dict[str, Any]:
    """The config without the brokers (so nothing connects) and with librdkafka's logs muted."""
    return {**{k: v for k, v in config.items() if k not in _CONNECTING}, "logger": _SILENT}


def _redacted(text: str, props: Mapping[str, str]) -> str:
    """librdkafka's text with every configured value in it described, never echoed: it quotes
    a rejected value ("garbage"), names a library it could not open, and any value may have
    come from ${SOME_PASSWORD}. Values of fewer than 4 characters are left (they would match
    inside words); a value is matched whole, never inside a property name."""
    for value in sorted({v for n, v in props.items() if n not in _CONNECTING}, key=len,
                        reverse=True):
        if len(value) < 4:
            continue
        pattern = re.compile(r'"?(?<![A-Za-z0-9._-])' + re.escape(value) + r'(?![A-Za-z0-9_-])"?')
        text = pattern.sub(f"(a value of {len(value)} characters)", text)
    return text


def _error(index: int, props: Mapping[str, str], message: str) -> ConfigError:
    """Name the property librdkafka complains about, and never echo a secret's value."""
    text = re.sub(r"^Failed to create (consumer|admin client): ", "", " ".join(message.split()))
    quoted = _QUOTED.findall(text)
    named = ([n for n in quoted if n in props]
             + sorted((n for n in props if n in text), key=len, reverse=True))
    if "must be set" in text:  # "sasl.username and sasl.password must be set": name the unset
        unset = [n for n in _PROPERTY.findall(text) if n not in props]
        if unset:
            return ConfigError(f'clusters[{index}].kafka."{unset[0]}"', text, "set it")
    java_store = "Java TrustStores" in text or "Java KeyStores" in text
    if java_store:  # librdkafka names no property here, only the one to use instead
        kind = "truststore" if "TrustStores" in text else "keystore"
        named = sorted((n for n in props if kind in n), key=lambda n: not n.endswith("location"))
    if named:
        key = f'clusters[{index}].kafka."{named[0]}"'
    else:
        key = next((LOOKUP_KEYS[n] for n in quoted if n in LOOKUP_KEYS), f"clusters[{index}].kafka")
    text = _redacted(text, props)
    if named and named[0].endswith(".location") and not os.path.exists(props[named[0]]):
        text += " (no such file)"  # the path is not echoed: it may come from a substitution
    if java_store:
        fix = ("librdkafka reads PEM files, not Java stores: export the certificates "
               "(keytool -exportcert -rfc) and set ssl.ca.location (ssl.certificate.location "
               "and ssl.key.location for a keystore) instead")
    elif "No such configuration" in text:
        fix = "check the name in librdkafka's CONFIGURATION.md"
    elif "callable" in text:
        fix = "remove it: a callback cannot be configured in HOCON"
    else:
        fix = "fix the value (librdkafka's CONFIGURATION.md lists the valid ones)"
    return ConfigError(key, text, fix)
