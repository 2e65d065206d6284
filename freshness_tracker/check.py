"""`check`: validate the config and reach Burrow and every cluster, saying what is wrong."""

from __future__ import annotations

from collections.abc import Iterator

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from freshness_tracker.burrow.client import BurrowClient
from freshness_tracker.config.settings import Settings
from freshness_tracker.errors import BurrowError

__all__ = ["run_checks"]


def _kafka_reachable(properties: dict[str, str], timeout_s: float) -> tuple[bool, str]:
    try:  # the properties were validated at startup, but Burrow's servers may be added here
        admin = AdminClient({**properties, "client.id": "freshness-tracker-check"})
    except KafkaException as exc:
        return False, f"librdkafka refused the client: {exc.args[0].str()}"
    try:
        metadata = admin.list_topics(timeout=timeout_s)
    except KafkaException as exc:
        return False, f"no broker answered: {exc.args[0]}"
    return True, f"{len(metadata.brokers)} broker(s), {len(metadata.topics)} topic(s)"


def run_checks(settings: Settings) -> Iterator[tuple[bool, str]]:
    """Yield (ok, message) per check, stopping early only where later checks cannot run."""
    yield True, f"config: {len(settings.clusters)} cluster(s)" + (
        f", {len(settings.warnings)} warning(s)" if settings.warnings else "")
    for warning in settings.warnings:
        yield False, f"config: {warning}"
    burrow = BurrowClient(settings.burrow)
    try:
        if not burrow.healthy():
            yield False, f"burrow: {burrow.url}/burrow/admin did not answer GOOD"
            return
        yield True, f"burrow: {burrow.url} is healthy"
        try:
            known = burrow.clusters()
        except BurrowError as exc:
            yield False, f"burrow: cannot list clusters: {exc}"
            return
        for cluster in settings.clusters:
            name = cluster.name
            if name not in known:
                yield False, (f"cluster {name}: Burrow does not list it (Burrow has: "
                              f"{', '.join(known) or 'none'}); fix clusters[].name")
                continue
            try:
                groups = burrow.consumers(name)
                yield True, f"cluster {name}: Burrow lists {len(groups)} consumer group(s)"
                props = dict(cluster.kafka.properties)
                if not props.get("bootstrap.servers"):
                    props["bootstrap.servers"] = ",".join(burrow.cluster_servers(name))
            except BurrowError as exc:
                yield False, f"cluster {name}: {exc}"
                continue
            ok, detail = _kafka_reachable(props, settings.lookup.timeout_s)
            yield ok, f"cluster {name}: Kafka at {props['bootstrap.servers']}: {detail}"
    finally:
        burrow.close()
