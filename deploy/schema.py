"""The chart's values.schema.json, as code (deploy/generate.py writes it).

Kept as Python for comments and reuse; the JSON file is what Helm reads, and tests check it is
in sync with this source.
"""

from __future__ import annotations

import json
from typing import Any

STR: dict[str, Any] = {"type": "string"}
BOOL: dict[str, Any] = {"type": "boolean"}
OBJ: dict[str, Any] = {"type": "object"}
LIST: dict[str, Any] = {"type": "array"}
PORT: dict[str, Any] = {"type": "integer", "minimum": 1, "maximum": 65535}
# Prometheus durations as prometheus-operator accepts them: 30s, 5m, 1h30m, 0m
DURATION: dict[str, Any] = {"type": "string", "pattern": r"^(0|([0-9]+(ms|s|m|h|d|w|y))+)$"}
#: A range selector's window: a Prometheus duration that is not zero.
WINDOW: dict[str, Any] = {"type": "string", "pattern": r"^([0-9]+(ms|s|m|h|d|w|y))+$",
                          "not": {"pattern": r"^(0+(ms|s|m|h|d|w|y))+$"}}
K8S_NAME: dict[str, Any] = {"type": "string", "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
                            "maxLength": 253}
OPT_K8S_NAME: dict[str, Any] = {"type": "string",
                                "pattern": r"^$|^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"}
SECRET_KEY: dict[str, Any] = {"type": "string", "pattern": r"^$|^[-._a-zA-Z0-9]+$"}
REGEXES: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
STR_MAP: dict[str, Any] = {"type": "object", "additionalProperties": {"type": "string"}}
PROBE: dict[str, Any] = {"type": "object"}


def obj(properties: dict[str, Any], required: list[str] | None = None,
        **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "additionalProperties": False,
                           "properties": properties}
    if required:
        out["required"] = required
    out.update(extra)
    return out


def _set(key: str) -> dict[str, Any]:
    """JSON schema for "`key` is present and not empty"."""
    return {"required": [key], "properties": {key: {"minLength": 1}}}


IMAGE = obj({"repository": {"type": "string", "minLength": 1}, "tag": STR,
             "pullPolicy": {"enum": ["Always", "IfNotPresent", "Never"]}},
            ["repository", "pullPolicy"])

CLUSTER = obj({
    # a Burrow cluster name becomes a TOML table key and a viper key: no dots or spaces
    "name": {"type": "string", "pattern": r"^[A-Za-z0-9_-]+$"},
    "bootstrapServers": {"type": "string", "pattern": r"^$|^[^,\s]+(\s*,\s*[^,\s]+)*$"},
    "numConsumers": {"type": "integer", "minimum": 1, "maximum": 256},
    "kafka": {"type": "object",
              "additionalProperties": {"type": ["string", "number", "boolean"]},
              "not": {"anyOf": [{"required": [k]} for k in (
                  "sasl.password", "ssl.key.password", "ssl.keystore.password",
                  "sasl.oauthbearer.client.secret", "ssl.key.pem")]},
              "description": "non-secret librdkafka properties; secrets go in secretKafka"},
    "secretKafka": {"type": "object", "additionalProperties": SECRET_KEY},
    # the tracker refuses other names and its own labels (cluster, consumer, ...) at startup
    "labels": {"type": "object", "propertyNames": {"pattern": r"^[a-zA-Z_][a-zA-Z0-9_]*$"},
               "additionalProperties": {"type": "string"}},
    "existingSecret": OPT_K8S_NAME,
    "burrow": obj({
        "sasl": obj({"enabled": BOOL, "username": STR, "passwordKey": SECRET_KEY,
                     "handshakeFirst": BOOL,
                     "mechanism": {"enum": ["", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]}}),
        "tls": obj({"enabled": BOOL, "caFile": STR, "certFile": STR, "keyFile": STR,
                    "noVerify": BOOL}),
    }),
}, ["name"])

SCHEMA: dict[str, Any] = obj({
    "global": OBJ,
    "nameOverride": STR,
    "fullnameOverride": STR,
    "image": IMAGE,
    "imagePullSecrets": {"type": "array", "items": obj({"name": K8S_NAME}, ["name"])},
    "replicas": {"type": "integer", "minimum": 1},
    "sharding": obj({"ordinalSource": {"enum": ["podIndexLabel", "hostname"]},
                     "replicasPerShard": {"type": "integer", "minimum": 1}}),
    "podDisruptionBudget": obj({
        "enabled": BOOL,
        # an integer or a percentage, as Kubernetes takes them; 0 would block every drain
        "maxUnavailable": {"anyOf": [{"type": "integer", "minimum": 1},
                                     {"type": "string", "pattern": r"^[1-9][0-9]*%$"}]},
        "minAvailable": {"anyOf": [{"type": "integer", "minimum": 0},
                                   {"type": "string", "pattern": r"^$|^[0-9]+%$"}]},
        "unhealthyPodEvictionPolicy": {"enum": ["", "IfHealthyBudget", "AlwaysAllow"]},
    }),
    "clusters": {"type": "array", "minItems": 1, "items": CLUSTER},
    "existingSecret": OPT_K8S_NAME,
    "config": obj({
        "port": PORT,
        "frequencySec": {"type": "number", "minimum": 1},  # the exporter refuses less
        "workerThreadCount": {"type": "integer", "minimum": 1, "maximum": 1024},
        "granularity": {"enum": ["partition", "topic", "group"]},
        "filters": obj({"groups": obj({"allow": REGEXES, "deny": REGEXES}),
                        "topics": obj({"allow": REGEXES, "deny": REGEXES})}),
        "lookup": obj({
            "batchSize": {"type": "integer", "minimum": 1},
            "timeout": {"type": ["string", "number"]},
            "fetchWaitMax": {"type": ["string", "number"]},
            "maxPartitionFetchBytes": {"type": "integer", "minimum": 1024},
            "fetchMaxBytes": {"type": "integer", "minimum": 1024},
            "queuedMaxMessagesKbytes": {"type": "integer", "minimum": 1},
            "cacheSize": {"type": "integer", "minimum": 0},
            "topicConfigTtl": {"type": ["string", "number"]},
            "commitLagWhenCaughtUp": BOOL,
        }),
        "logging": obj({"level": {"enum": ["DEBUG", "INFO", "WARNING", "ERROR",
                                           "debug", "info", "warning", "error"]},
                        "format": {"enum": ["logfmt", "json"]}}),
        # Basic auth takes both or neither: the exporter refuses half of it at startup (a
        # password alone served /metrics open; a user alone accepted an empty password).
        "web": obj({"basicAuthUsername": STR, "basicAuthPasswordKey": SECRET_KEY,
                    "tlsSecretName": OPT_K8S_NAME},
                   allOf=[{"if": _set(a), "then": _set(b)} for a, b in (
                       ("basicAuthUsername", "basicAuthPasswordKey"),
                       ("basicAuthPasswordKey", "basicAuthUsername"))]),
        "extra": STR,
    }, ["port", "frequencySec", "granularity"]),
    "burrow": obj({
        "enabled": BOOL,
        "url": {"type": "string", "pattern": r"^$|^https?://[^/\s]+"},
        "username": STR,
        "passwordKey": SECRET_KEY,
        "image": IMAGE,
        "port": PORT,
        "kafkaVersion": {"type": "string", "pattern": r"^[0-9]+(\.[0-9]+){1,3}$"},
        "clientId": STR,
        "zookeeper": obj({"servers": {"type": "array", "items": {"type": "string",
                                                                 "minLength": 1}},
                          "rootPath": {"type": "string", "pattern": "^/"},
                          "timeout": {"type": "integer", "minimum": 1}}),
        "topicRefresh": {"type": "integer", "minimum": 1},
        "offsetRefresh": {"type": "integer", "minimum": 1},
        "offsetsTopic": {"type": "string", "minLength": 1},
        "startLatest": BOOL,
        "storage": obj({"intervals": {"type": "integer", "minimum": 1},
                        "minDistance": {"type": "integer", "minimum": 0},
                        "expireGroup": {"type": "integer", "minimum": 1}}),
        "evaluatorExpireCache": {"type": "integer", "minimum": 1},
        "logLevel": {"enum": ["debug", "info", "warn", "error", "panic", "fatal"]},
        "extraConfig": STR,
        "resources": OBJ,
        "livenessProbe": PROBE,
        "readinessProbe": PROBE,
        "extraVolumeMounts": LIST,
    }, ["enabled"],
        # external mode needs a URL; sidecar mode needs ZooKeeper and every cluster's brokers
        allOf=[
            {"if": {"properties": {"enabled": {"const": False}}},
             "then": {"required": ["url"], "properties": {"url": {"minLength": 1}}}},
            {"if": {"properties": {"enabled": {"const": True}}},
             "then": {"required": ["zookeeper"],
                      "properties": {"zookeeper": {"required": ["servers"], "properties": {
                          "servers": {"minItems": 1}}}}}},
        ]),
    "resources": OBJ,
    "livenessProbe": PROBE,
    "readinessProbe": PROBE,
    "podSecurityContext": OBJ,
    "securityContext": OBJ,
    "serviceAccount": obj({"create": BOOL, "name": STR, "annotations": STR_MAP}),
    "service": obj({"type": {"enum": ["ClusterIP", "NodePort", "LoadBalancer"]}, "port": PORT,
                    "annotations": STR_MAP, "labels": STR_MAP}),
    "serviceMonitor": obj({"enabled": BOOL, "namespace": STR, "labels": STR_MAP,
                           "interval": DURATION, "scrapeTimeout": DURATION,
                           "honorLabels": BOOL, "relabelings": LIST,
                           "metricRelabelings": LIST, "tlsConfig": OBJ, "basicAuth": OBJ}),
    "prometheusRule": obj({
        "enabled": BOOL, "namespace": STR, "labels": STR_MAP, "job": STR,
        "freshnessObjectiveSeconds": {"type": "number", "exclusiveMinimum": 0},
        "freshnessFor": DURATION,
        "freshnessRateWindow": WINDOW,
        "retentionHeadroomSeconds": {"type": "number", "exclusiveMinimum": 0},
        "retentionHeadroomFor": DURATION,
        "noSuccessSeconds": {"type": "number", "exclusiveMinimum": 0},
        "exporterDownFor": DURATION,
        "burrowUnreachableFor": DURATION,
        "additionalAlertLabels": STR_MAP,
        "disabledAlerts": {"type": "array", "items": {"enum": [
            "KafkaConsumerFreshnessObjectiveMissed", "KafkaConsumerDataLoss",
            "KafkaConsumerRetentionHeadroomLow", "FreshnessTrackerClusterNoSuccessfulCycle",
            "FreshnessTrackerBurrowUnreachable", "FreshnessTrackerExporterDown",
            "FreshnessTrackerExporterAbsent"]}},
        "extraGroups": LIST,
    }),
    "compatRules": obj({"enabled": BOOL, "namespace": STR, "labels": STR_MAP,
                        "kafkaLagExporter": BOOL, "burrowExporter": BOOL}),
    "grafanaDashboard": obj({"enabled": BOOL, "namespace": STR, "labels": STR_MAP,
                             "annotations": STR_MAP}),
    "extraEnv": {"type": "array", "items": {
        "type": "object", "required": ["name"],
        "properties": {"name": {"type": "string", "pattern": r"^[A-Za-z_][A-Za-z0-9_]*$"}},
        # Burrow reads BURROW_* variables as config keys: never set one in this pod
        "not": {"properties": {"name": {"pattern": "^BURROW_"}}}}},
    "extraVolumes": LIST,
    "extraVolumeMounts": LIST,
    "podAnnotations": STR_MAP,
    "podLabels": STR_MAP,
    "nodeSelector": STR_MAP,
    "tolerations": LIST,
    "affinity": OBJ,
    "priorityClassName": STR,
    "terminationGracePeriodSeconds": {"type": "integer", "minimum": 0},
}, ["image", "clusters", "config", "burrow"],
    **{"$schema": "http://json-schema.org/draft-07/schema#",
       "title": "freshness-tracker chart values"})


def render() -> str:
    return json.dumps(SCHEMA, indent=2) + "\n"

