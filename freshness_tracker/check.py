"""`check`: validate the config and reach Burrow and every cluster, saying what is wrong.

Each check ends "ok", "warn" (worth fixing, yet the exporter runs as configured: an unknown
config key is ignored) or "FAIL". A failure says what actually happened (connection refused,
no answer within the timeout, the HTTP status and body, librdkafka's own connection error),
never just that something did not work.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from freshness_tracker.burrow.client import BurrowClient
from freshness_tracker.config.settings import Settings
from freshness_tracker.errors import BurrowError
from freshness_tracker.kafka.client_log import ClientLogRelay, line_kind

__all__ = ["CheckResult", "run_checks"]

Outcome = Literal["ok", "warn", "FAIL"]

#: How often the metadata request is retried while librdkafka reports why it cannot connect.
_METADATA_POLL_S = 0.5
_MAX_REASONS = 3


@dataclass(frozen=True)
class CheckResult:
    outcome: Outcome
    message: str


def _kafka_reachable(properties: dict[str, str], cluster: str,
                     timeout_s: float) -> tuple[bool, str]:
    """Metadata within `timeout_s`, or librdkafka's own reasons for not getting it. Its log
    lines go through the same relay as the exporter's clients (once per kind, not one per
    reconnect); its errors are collected so the answer says "Connection refused", not only
    "transport failure", and a refusal by every broker ends the wait early."""
    reasons: dict[str, str] = {}
    all_down = False

    def on_error(error: KafkaError) -> None:
        nonlocal all_down
        all_down = all_down or error.code() == KafkaError._ALL_BROKERS_DOWN
        if len(reasons) < _MAX_REASONS:
            reasons.setdefault(line_kind("", error.str()), error.str())

    config: dict[str, Any] = {**properties, "client.id": "freshness-tracker-check",
                              "logger": ClientLogRelay(cluster), "error_cb": on_error}
    try:  # the properties were validated at startup, but Burrow's servers may be added here
        admin = AdminClient(config)
    except KafkaException as exc:
        return False, f"librdkafka refused the client: {exc.args[0].str()}"
    deadline = time.monotonic() + timeout_s
    last: KafkaError | None = None
    while True:
        remaining = deadline - time.monotonic()
        try:
            metadata = admin.list_topics(timeout=max(min(_METADATA_POLL_S, remaining), 0.001))
        except KafkaException as exc:
            last = exc.args[0]
        else:
            return True, f"{len(metadata.brokers)} broker(s), {len(metadata.topics)} topic(s)"
        admin.poll(0)  # serves the error callback and the log relay
        if all_down or remaining <= _METADATA_POLL_S:
            break
    if reasons:
        return False, "cannot connect: " + "; ".join(reasons.values())
    detail = last.str() if last is not None else "no answer"
    return False, f"no broker answered within {timeout_s:g}s ({detail})"


def run_checks(settings: Settings) -> Iterator[CheckResult]:
    """One result per check, stopping early only where later checks cannot run."""
    yield CheckResult("ok", f"config: {len(settings.clusters)} cluster(s)" + (
        f", {len(settings.warnings)} warning(s)" if settings.warnings else ""))
    for warning in settings.warnings:
        yield CheckResult("warn", f"config: {warning}")
    burrow = BurrowClient(settings.burrow)
    try:
        problem = burrow.health()
        if problem is not None:
            yield CheckResult("FAIL", f"burrow: {problem}")
            return
        yield CheckResult("ok", f"burrow: {burrow.url} is healthy")
        try:
            known = burrow.clusters()
        except BurrowError as exc:
            yield CheckResult("FAIL", f"burrow: cannot list clusters: {exc}")
            return
        for cluster in settings.clusters:
            name = cluster.name
            if name not in known:
                yield CheckResult("FAIL", f"cluster {name}: Burrow does not list it (Burrow "
                                  f"has: {', '.join(known) or 'none'}); fix clusters[].name")
                continue
            try:
                groups = burrow.consumers(name)
                yield CheckResult("ok", f"cluster {name}: Burrow lists {len(groups)} consumer "
                                  "group(s)")
                props = dict(cluster.kafka.properties)
                if not props.get("bootstrap.servers"):
                    props["bootstrap.servers"] = ",".join(burrow.cluster_servers(name))
            except BurrowError as exc:
                yield CheckResult("FAIL", f"cluster {name}: {exc}")
                continue
            ok, detail = _kafka_reachable(props, name, settings.lookup.timeout_s)
            yield CheckResult("ok" if ok else "FAIL",
                              f"cluster {name}: Kafka at {props['bootstrap.servers']}: {detail}")
    finally:
        burrow.close()
