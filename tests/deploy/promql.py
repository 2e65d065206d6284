"""Every PromQL expression of the dashboard and the rules, found programmatically, with the
labels each result must carry; plus the small amount of PromQL structure the tests need.

A new panel, target, variable or rule is covered without touching the tests.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and",
            "or", "unless", "offset", "atan2"}
AGGREGATIONS = {"sum", "min", "max", "avg", "count", "stddev", "stdvar", "topk", "bottomk",
                "quantile", "count_values", "group"}
_LABEL_LIST_BEFORE = {"by", "without", "on", "ignoring", "group_left", "group_right"}


@dataclass(frozen=True)
class Query:
    source: str  # where it came from, for messages
    expr: str
    labels: frozenset[str] = field(default_factory=frozenset)  # each result series must have them


# --- finding the expressions ---------------------------------------------------------------------

def _panels(board: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in board.get("panels", []):
        yield panel
        yield from panel.get("panels", [])  # collapsed rows hold their panels


def legend_labels(legend: str) -> set[str]:
    return set(re.findall(r"\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}", legend or ""))


def dashboard_queries(board: Mapping[str, Any]) -> list[Query]:
    """Every target of every panel (labels: those its legend and table columns show) and every
    query variable's `label_values(selector, label)` (labels: that label)."""
    out = []
    for panel in _panels(board):
        columns: set[str] = set()
        for t in panel.get("transformations", []):
            if t["id"] == "organize":
                columns |= {k for k in t["options"].get("indexByName", {})
                            if k not in ("Value", "Time") and not k.startswith("Value #")}
        for target in panel.get("targets", []):
            if target.get("expr"):
                labels = legend_labels(target.get("legendFormat", "")) | columns
                out.append(Query(f"panel {panel['title']!r} {target['refId']}",
                                 target["expr"], frozenset(labels)))
    for var in board.get("templating", {}).get("list", []):
        if var.get("type") != "query":
            continue
        query = var["query"]["query"] if isinstance(var["query"], dict) else var["query"]
        match = re.fullmatch(r"\s*label_values\((.*),\s*([a-zA-Z_]\w*)\s*\)\s*", query, re.S)
        assert match, f"variable {var['name']}: not a label_values(selector, label) query"
        out.append(Query(f"variable ${var['name']}", match.group(1),
                         frozenset({match.group(2)})))
    return out


def rule_queries(rules: Mapping[str, Any]) -> list[Query]:
    """Recording rules (labels: the level of `level:metric:operation`) and every signal of every
    alert (labels: those its annotations name)."""
    out = []
    for group in rules["groups"]:
        for rule in group["rules"]:
            if "record" in rule:
                level = rule["record"].split(":")[0]
                out.append(Query(f"record {rule['record']}", rule["expr"],
                                 frozenset(level.split("_")) if level else frozenset()))
            else:
                text = " ".join(str(v) for v in rule.get("annotations", {}).values())
                labels = set(re.findall(r"\$labels\.([a-zA-Z_]\w*)", text))
                for i, signal in enumerate(signals(rule["expr"])):
                    out.append(Query(f"alert {rule['alert']} signal {i}", signal,
                                     frozenset(labels)))
    return out


def substitute(expr: str, variables: Mapping[str, str]) -> str:
    """Grafana's template variables replaced ($x and ${x}), longest names first."""
    for name in sorted(variables, key=len, reverse=True):
        expr = expr.replace("${" + name + "}", variables[name]).replace("$" + name,
                                                                        variables[name])
    assert "$" not in expr, f"unsubstituted variable in {expr}"
    return expr


# --- structure -----------------------------------------------------------------------------------

def _depths(expr: str) -> list[int]:
    """Nesting depth (parentheses, braces, brackets) at each character; strings are depth 99."""
    depths, depth, quote = [], 0, ""
    for i, ch in enumerate(expr):
        if quote:
            depths.append(99)
            if ch == quote and expr[i - 1] != "\\":
                quote = ""
            continue
        if ch in "\"'`":
            quote = ch
            depths.append(99)
            continue
        if ch in "({[":
            depths.append(depth)
            depth += 1
            continue
        if ch in ")}]":
            depth -= 1
        depths.append(depth)
    return depths


def _unwrap(expr: str) -> str:
    expr = expr.strip()
    while expr.startswith("(") and expr.endswith(")"):
        depths = _depths(expr)
        if any(d == 0 for d in depths[1:-1]):
            break
        expr = expr[1:-1].strip()
    return expr


_SET_OP = re.compile(r"\b(and|or|unless)\b", re.I)
_MODIFIERS = re.compile(r"^\s*(?:(?:on|ignoring)\s*\([^)]*\)\s*)?"
                        r"(?:(?:group_left|group_right)\s*(?:\([^)]*\))?\s*)?")
_COMPARISON = re.compile(r"(==|!=|>=|<=|>|<)\s*(?:bool\s+)?(-?[0-9][0-9.eE+]*)\s*$")


def signals(expr: str) -> list[str]:
    """The alert condition's inputs: split at top-level and/or/unless, drop a final comparison
    with a number, unwrap absent(). `up{job="x"} == 0` -> ['up{job="x"}']."""
    expr = _unwrap(expr)
    depths = _depths(expr)
    parts, start = [], 0
    for m in _SET_OP.finditer(expr):
        if depths[m.start()] == 0:
            parts.append(expr[start:m.start()])
            start = m.end()
    parts.append(expr[start:])
    out = []
    for part in parts:
        part = _MODIFIERS.sub("", part, count=1).strip()
        part_depths = _depths(part)
        m = _COMPARISON.search(part)
        if m and part_depths[m.start()] == 0:
            part = part[:m.start()]
        part = _unwrap(part)
        absent = re.fullmatch(r"absent\((.*)\)", part, re.S)
        out.append(_unwrap(absent.group(1)) if absent else part)
    return out


def selectors(expr: str) -> list[tuple[str, dict[str, str]]]:
    """(metric name, {label: 'op"value"'}) of every vector selector in the expression."""
    out: list[tuple[str, dict[str, str]]] = []
    depths = _depths(expr)
    i = 0
    skip_list = False
    while i < len(expr):
        ch = expr[i]
        if depths[i] == 99 or not (ch.isalpha() or ch in "_:"):
            if ch == "(" and skip_list:
                i = expr.index(")", i) + 1
                skip_list = False
                continue
            if ch == "[":  # range durations
                i = expr.index("]", i) + 1
                continue
            if ch == "{":  # a selector without a name never happens in our expressions
                variable = i > 0 and expr[i - 1] == "$"
                i = expr.index("}", i) + 1
                while variable and i < len(expr) and expr[i].isalpha():
                    i += 1  # ${frequency}s: a dashboard variable, then a duration's unit
                continue
            i += 1
            continue
        m = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*").match(expr, i)
        assert m
        word, i = m.group(0), m.end()
        rest = expr[i:].lstrip()
        if word in _LABEL_LIST_BEFORE:
            skip_list = True
            continue
        if word in KEYWORDS or word in AGGREGATIONS or rest.startswith("("):
            continue
        if i > 0 and expr[m.start() - 1].isdigit():
            continue  # 5m, 1e3
        if m.start() > 0 and expr[m.start() - 1] == "$":
            continue  # a dashboard variable ($frequency), not a series
        labels: dict[str, str] = {}
        if rest.startswith("{"):
            j = expr.index("{", i)
            k = expr.index("}", j)
            for lm in re.finditer(r'([a-zA-Z_]\w*)\s*(=~|!~|!=|=)\s*"([^"]*)"', expr[j:k]):
                labels[lm.group(1)] = lm.group(2) + '"' + lm.group(3) + '"'
            i = k + 1
        out.append((word, labels))
    return out
