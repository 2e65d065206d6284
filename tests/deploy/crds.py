"""Minimal JSON schemas for the two prometheus-operator CRDs the chart renders.

kubernetes-validate ships only built-in kinds; these cover the fields the chart writes (and
reject unknown ones inside the parts we render), following monitoring.coreos.com/v1.
"""

from __future__ import annotations

from typing import Any

DURATION = {"type": "string", "pattern": r"^(0|([0-9]+(ms|s|m|h|d|w|y))+)$"}
STR_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
NAME = {"type": "string", "pattern": r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", "maxLength": 253}
SECRET_KEY_SELECTOR = {"type": "object", "required": ["key"], "additionalProperties": False,
                       "properties": {"name": {"type": "string"}, "key": {"type": "string"},
                                      "optional": {"type": "boolean"}}}


def _object(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "additionalProperties": False,
        "properties": {
            "apiVersion": {"const": "monitoring.coreos.com/v1"},
            "kind": {"const": kind},
            "metadata": {"type": "object", "required": ["name"],
                         "properties": {"name": NAME, "namespace": NAME, "labels": STR_MAP,
                                        "annotations": STR_MAP}},
            "spec": spec,
        },
    }


RELABEL = {"type": "object", "additionalProperties": False, "properties": {
    "sourceLabels": {"type": "array", "items": {"type": "string"}},
    "separator": {"type": "string"}, "targetLabel": {"type": "string"},
    "regex": {"type": "string"}, "modulus": {"type": "integer"},
    "replacement": {"type": "string"},
    "action": {"enum": ["replace", "Replace", "keep", "Keep", "drop", "Drop", "hashmod",
                        "HashMod", "labelmap", "LabelMap", "labeldrop", "LabelDrop",
                        "labelkeep", "LabelKeep", "lowercase", "Lowercase", "uppercase",
                        "Uppercase", "keepequal", "KeepEqual", "dropequal", "DropEqual"]}}}

SERVICE_MONITOR = _object("ServiceMonitor", {
    "type": "object", "required": ["selector", "endpoints"], "additionalProperties": False,
    "properties": {
        "jobLabel": {"type": "string"},
        "namespaceSelector": {"type": "object", "additionalProperties": False, "properties": {
            "any": {"type": "boolean"},
            "matchNames": {"type": "array", "items": NAME}}},
        "selector": {"type": "object", "additionalProperties": False, "properties": {
            "matchLabels": STR_MAP, "matchExpressions": {"type": "array"}}},
        "endpoints": {"type": "array", "minItems": 1, "items": {
            "type": "object", "required": ["port"], "additionalProperties": False,
            "properties": {
                "port": {"type": "string"}, "path": {"type": "string", "pattern": "^/"},
                "scheme": {"enum": ["http", "https"]}, "interval": DURATION,
                "scrapeTimeout": DURATION, "honorLabels": {"type": "boolean"},
                "honorTimestamps": {"type": "boolean"},
                "relabelings": {"type": "array", "items": RELABEL},
                "metricRelabelings": {"type": "array", "items": RELABEL},
                "tlsConfig": {"type": "object"},
                "basicAuth": {"type": "object", "additionalProperties": False, "properties": {
                    "username": SECRET_KEY_SELECTOR, "password": SECRET_KEY_SELECTOR}},
            }}},
    }})

RULE = {
    "type": "object", "required": ["expr"], "additionalProperties": False,
    "properties": {"record": {"type": "string", "pattern": r"^[a-zA-Z_:][a-zA-Z0-9_:]*$"},
                   "alert": {"type": "string", "pattern": r"^[A-Za-z][A-Za-z0-9_]*$"},
                   "expr": {"type": ["string", "integer"], "minLength": 1},
                   "for": DURATION, "keep_firing_for": DURATION,
                   "labels": STR_MAP, "annotations": STR_MAP},
    "oneOf": [{"required": ["record"], "not": {"required": ["alert"]}},
              {"required": ["alert"], "not": {"required": ["record"]}}],
}

PROMETHEUS_RULE = _object("PrometheusRule", {
    "type": "object", "required": ["groups"], "additionalProperties": False,
    "properties": {"groups": {"type": "array", "items": {
        "type": "object", "required": ["name", "rules"], "additionalProperties": False,
        "properties": {"name": {"type": "string", "minLength": 1}, "interval": DURATION,
                       "limit": {"type": "integer"},
                       "partial_response_strategy": {"type": "string"},
                       "rules": {"type": "array", "items": RULE}}}}},
})

SCHEMAS: dict[str, dict[str, Any]] = {
    "ServiceMonitor": SERVICE_MONITOR,
    "PrometheusRule": PROMETHEUS_RULE,
}
