"""Freshness objectives as Prometheus rules: the SLI recorded live and multi-window,
multi-burn-rate alerts, from the same objectives file the Spark report reads.

Pure: objectives in, a rules dict (or its YAML) out; no Prometheus, no Spark. The CLI's
`freshness-tracker rules --objectives FILE` prints it.

**What is judged** is the report's consumer series (docs/spark.md, domain/slo.py): per (cluster,
consumer) the worst partition's freshness, judged by the **first objective whose `consumer`
regex matches** the consumer; an objective naming a `topic` judges the worst partition over the
topics it selects. First match holds in PromQL: objective i's selectors carry
`consumer=~"<its regex>"` and `consumer!~"<regex>"` for every earlier objective, so a consumer
is selected by one objective at most.

**The SLI**, recorded as `freshness_tracker:objective_bad` {cluster, consumer, objective="i"}:
1 while the group's freshness is strictly over the objective (exactly at it is within), 0 while
within; and 1 while the exporter reports the group but not its freshness (a read failed, or none
of the objective's topics has a value), because the report counts no data against the
objective. The freshness is the one at the rule's evaluation time (docs/querytime.md): a stuck
group crosses its objective when it truly does, not a cycle and a scrape later.

Its averages over 5m, 30m, 1h, 2h, 6h, 1d and 3d
(`freshness_tracker:objective_bad:ratio_rate<window>`) are the shares of time over objective,
sampled at the rule evaluation interval: the report's "time over objective ÷ window".

**The alerts** are the SRE workbook's (chapter 5, "Alerting on SLOs", multiwindow,
multi-burn-rate): the budget is 1 − target, a burn rate of 1 spends exactly the budget over any
window, and an alert needs a long and a short window both over the rate (the short one resets
it quickly once the group recovers):

- page (`KafkaConsumerFreshnessBudgetBurnFast`, severity critical): 14.4× over 1h and 5m, or 6×
  over 6h and 30m (2 % and 5 % of a 30-day budget spent);
- ticket (`KafkaConsumerFreshnessBudgetBurnSlow`, severity warning): 3× over 1d and 2h, or 1× over
  3d and 6h (10 % of a 30-day budget).

Prometheus's regexes are RE2, fully anchored as Python's `fullmatch`: an objective regex RE2
cannot parse, or reads otherwise than Python, is refused here (`spark.objectives.check_regex`).

**Names are data, never syntax.** The objectives' regexes, the `--job` and the file's name reach
four languages: PromQL string literals (Go escapes), Go templates (Prometheus expands every
annotation), YAML (written by the emitter, never by joining text) and the header's YAML
comments (one line each: anything that is not a printable character is escaped).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import yaml

from freshness_tracker.config.settings import MIN_FREQUENCY_S
from freshness_tracker.domain.slo import Objective
from freshness_tracker.errors import ConfigError
from freshness_tracker.metrics import (
    GROUP_MAX_FRESHNESS,
    GROUP_OLDEST_UNCOMMITTED,
    GROUP_STATUS,
    TOPIC_MAX_FRESHNESS,
    TOPIC_OLDEST_UNCOMMITTED,
)
from freshness_tracker.spark.objectives import check_regex

__all__ = [
    "BAD",
    "RATE_WINDOW",
    "PAGE",
    "TICKET",
    "WINDOWS",
    "BurnRate",
    "objective_rules",
    "render_rules",
    "shadowed",
]

#: The recorded SLI: 1 over objective (or unknown), 0 within.
BAD = "freshness_tracker:objective_bad"


@dataclass(frozen=True, slots=True)
class BurnRate:
    """Fire when the share over objective exceeds `factor` × budget over both windows."""

    long: str
    short: str
    factor: float


PAGE = (BurnRate("1h", "5m", 14.4), BurnRate("6h", "30m", 6))
TICKET = (BurnRate("1d", "2h", 3), BurnRate("3d", "6h", 1))
#: Every window an alert reads, shortest first.
WINDOWS = ("5m", "30m", "1h", "2h", "6h", "1d", "3d")
#: The window over which the SLI measures how fast a group's freshness gauge grows, to carry it
#: forward between cycles: the chart's default `prometheusRule.freshnessRateWindow`, holding at
#: least two cycles at the default 30 s scrape and cycle.
RATE_WINDOW = "2m"
#: The exporter's cycle period, `frequency_sec`, as reference.conf sets it (a test keeps the two
#: equal): a wait shorter than a cycle is not carried forward.
FREQUENCY_S = 30.0
_WINDOW = re.compile(r"([0-9]+(ms|s|m|h|d|w|y))+")

_ALERTS = (
    ("KafkaConsumerFreshnessBudgetBurnFast", PAGE, "critical", "fast"),
    ("KafkaConsumerFreshnessBudgetBurnSlow", TICKET, "warning", "slowly but steadily"),
)

def _escaped(char: str) -> str:
    """A Go escape for one character (Go's `\\x` is a byte, so `\\u`/`\\U` for code points)."""
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _go_string(value: str) -> str:
    """A Go double-quoted string literal for `value`: what a PromQL string and a Go template's
    string constant both read back as `value` (printable characters as they are)."""
    body = "".join("\\" + c if c in '"\\' else c if c.isprintable() else _escaped(c)
                   for c in value)
    return f'"{body}"'


def _promql_string(value: str) -> str:
    """A PromQL double-quoted string literal for `value`."""
    return _go_string(value)


def _template_text(value: str) -> str:
    """`value` placed in an annotation so Prometheus's template engine prints it as it is: a
    name holding `{` (or a character YAML would not keep on one line) becomes a string constant
    action, `{{ "..." }}`, which renders exactly the text."""
    if "{" not in value and "}" not in value and value.isprintable():
        return value
    return "{{ " + _go_string(value) + " }}"


def _comment(value: str) -> str:
    """`value` safe inside a one-line YAML comment: no line break (nor any other character that
    is not printable) survives, so nothing after it can become YAML."""
    return "".join(c if c.isprintable() else _escaped(c) for c in value)


def _number(value: Fraction | float) -> str:
    return format(float(value), ".12g")


def shadowed(objectives: Sequence[Objective]) -> dict[int, int]:
    """Objective index -> the earlier one with the same consumer regex: such an objective never
    judges a consumer's series (it may still judge topic series in the Spark report)."""
    first: dict[str, int] = {}
    for i, o in enumerate(objectives):
        first.setdefault(o.consumer, i)
    return {i: first[o.consumer] for i, o in enumerate(objectives) if first[o.consumer] != i}


def _selectors(objectives: Sequence[Objective], i: int, job: str | None) -> str:
    by_job = [] if job is None else [f"job={_promql_string(job)}"]
    return ", ".join([*by_job, f"consumer=~{_promql_string(objectives[i].consumer)}",
                      *(f"consumer!~{_promql_string(o.consumer)}" for o in objectives[:i])])


def _freshness_now(stamp: str, gauge: str, selector: str, window: str, cycle_ms: str) -> str:
    """The worst freshness in ms at the rule's evaluation time: per series, the cycle's gauge
    carried forward to now (time since the cycle observed it: now − the oldest uncommitted
    record's timestamp − the gauge) at the rate it grew over `window`, between 0 and 1 s per s,
    and at 1 where the timestamp is the one of a cycle ago (the same record waits, so it ages
    with the clock): a stuck group ages with the clock, one that keeps up keeps its gauge. The
    gauge alone where no record waits (its 0 must not age), no timestamp is exported, no sample
    of a cycle ago shows one (a record first seen waiting is held until a second cycle shows
    whether it was committed) or the window holds fewer than two samples. Only a wait of at
    least one cycle (`cycle_ms`) is carried: a group that keeps up shows shorter waits now and
    then, which a cycle catches at random and the group ends a moment later; a group that stops
    is seen waiting at least a cycle from its second cycle on. Then the worst copy. The chart's
    rule is the same expression."""
    g, ts = f"{gauge}{{{selector}}}", f"{stamp}{{{selector}}}"
    return (f"max by (cluster, consumer) (\n    (\n        {g}\n      +\n"
            f"        clamp_max(\n            clamp(deriv({g}[{window}]) / 1000, 0, 1)\n"
            f"          + (\n              {ts}\n            == bool\n"
            f"              {ts} offset {cycle_ms}ms\n            ),\n"
            f"          1\n        )\n      *\n"
            f"        ({g} >= bool {cycle_ms})\n      *\n"
            f"        clamp_min(\n          1000 * (time() - {ts})\n          - {g},\n"
            f"          0\n        )\n    )\n"
            f"  or\n    {g}\n)")


def _sli(objectives: Sequence[Objective], i: int, job: str | None,
         window: str, cycle_ms: str) -> dict[str, Any]:
    o = objectives[i]
    sel = _selectors(objectives, i, job)
    if o.topic is None:
        worst = _freshness_now(GROUP_OLDEST_UNCOMMITTED.name, GROUP_MAX_FRESHNESS.name, sel,
                               window, cycle_ms)
    else:
        worst = _freshness_now(TOPIC_OLDEST_UNCOMMITTED.name, TOPIC_MAX_FRESHNESS.name,
                               f"{sel}, topic=~{_promql_string(o.topic)}", window, cycle_ms)
    reported = f"max by (cluster, consumer) ({GROUP_STATUS.name}{{{sel}}})"
    return {
        "record": BAD,
        "expr": (f"(\n  {worst.replace(chr(10), chr(10) + '  ')} > bool {o.freshness_ms}\n)\n"
                 f"or\n(\n  {reported} * 0 + 1\n)\n"),
        "labels": {"objective": str(i)},
    }


def _burn_expr(i: int, rates: Sequence[BurnRate], budget: str) -> str:
    def over(window: str, rate: BurnRate) -> str:
        return f'{BAD}:ratio_rate{window}{{objective="{i}"}} > ({_number(rate.factor)} * {budget})'

    return "\nor\n".join(f"(\n  {over(r.long, r)}\nand\n  {over(r.short, r)}\n)"
                          for r in rates) + "\n"


def _alert(objectives: Sequence[Objective], i: int, name: str, rates: Sequence[BurnRate],
           severity: str, speed: str) -> dict[str, Any]:
    o = objectives[i]
    budget = 1 - o.target
    windows = ", or ".join(f"{_number(r.factor)}× the budget over both {r.long} and {r.short}"
                           for r in rates)
    scope = (f"the worst partition of its topics matching '{_template_text(o.topic)}'"
             if o.topic is not None else "its worst partition")
    return {
        "alert": name,
        "expr": _burn_expr(i, rates, _number(budget)),
        # the series carry `objective` already; as a rule label it also tells the rules apart
        "labels": {"severity": severity, "objective": str(i)},
        "annotations": {
            "summary": ("Consumer group {{ $labels.consumer }} on {{ $labels.cluster }} burns "
                        f"its freshness budget {speed} (over {_duration(o.freshness_ms)} "
                        "{{ $value | humanizePercentage }} of the time)"),
            "description": (f"Objective {i} ({_template_text(o.label)}), judging {scope}: "
                            "the share of time "
                            f"over {_duration(o.freshness_ms)} (or unmeasured) is above "
                            f"{windows}; the budget is {_number(budget * 100)}% of the time. "
                            "The Spark report judges the same objective over its window."),
        },
    }


def _is_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _duration(ms: int) -> str:
    for unit, size in (("h", 3_600_000), ("m", 60_000), ("s", 1000)):
        if ms and ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


def objective_rules(objectives: Sequence[Objective], *, job: str | None = None,
                    source: str = "objectives", rate_window: str = RATE_WINDOW,
                    frequency_s: float = FREQUENCY_S) -> dict[str, Any]:
    """The rules file (`{"groups": [...]}`) for `objectives`, in their order (first match).

    `rate_window` is the window over which the SLI measures how fast the freshness gauge grows
    to carry it forward between cycles (the chart's `prometheusRule.freshnessRateWindow`);
    `frequency_s` the exporter's `frequency_sec`: a shorter wait is not carried.

    Raises ConfigError for an empty list, a regex Prometheus cannot run, a job name that is not
    Unicode text (a PromQL string and the file are UTF-8), a window that is not a Prometheus
    duration above zero or a frequency below the exporter's least.
    """
    if not objectives:
        raise ConfigError(f"{source}: objectives", "expected a non-empty list")
    for i, o in enumerate(objectives):
        check_regex(o.consumer, f"{source}: objectives[{i}].consumer")
        if o.topic is not None:
            check_regex(o.topic, f"{source}: objectives[{i}].topic")
    if job is not None and not _is_text(job):
        raise ConfigError("--job", f"{job!r} is not valid Unicode text", "give the job's name")
    if not _WINDOW.fullmatch(rate_window) or not any(c in "123456789" for c in rate_window):
        raise ConfigError("--rate-window", "expected a Prometheus duration above zero",
                          "give one such as 2m (at least twice the scrape interval)")
    if not math.isfinite(frequency_s) or frequency_s < MIN_FREQUENCY_S:
        raise ConfigError("--frequency", f"expected at least {MIN_FREQUENCY_S:g} seconds",
                          "give the exporter's frequency_sec")
    cycle_ms = str(math.ceil(frequency_s * 1000))
    recording: list[dict[str, Any]] = [_sli(objectives, i, job, rate_window, cycle_ms)
                                       for i in range(len(objectives))]
    recording += [{"record": f"{BAD}:ratio_rate{w}", "expr": f"avg_over_time({BAD}[{w}])"}
                  for w in WINDOWS]
    alerts = [_alert(objectives, i, name, rates, severity, speed)
              for i in range(len(objectives))
              for name, rates, severity, speed in _ALERTS]
    # One group: Prometheus evaluates a group's rules in order, so every alert reads the shares
    # recorded in the same evaluation (separate groups run independently, a cycle apart).
    return {"groups": [{"name": "freshness-tracker.objectives", "rules": recording + alerts}]}


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def rules_yaml(body: Any, *, allow_unicode: bool = True) -> str:
    """YAML as the project writes rule files: keys in their order, multi-line strings (PromQL,
    descriptions) as literal blocks (also deploy/generate.py's)."""
    return yaml.dump(body, Dumper=_Dumper, sort_keys=False, width=100,
                     allow_unicode=allow_unicode)


def render_rules(objectives: Sequence[Objective], *, job: str | None = None,
                 source: str = "objectives", helm_values: bool = False,
                 rate_window: str = RATE_WINDOW, frequency_s: float = FREQUENCY_S) -> str:
    """The rules as YAML with a header naming the objectives: a Prometheus rules file, or (with
    `helm_values`) values for the chart (`prometheusRule.extraGroups`)."""
    rules = objective_rules(objectives, job=job, source=source, rate_window=rate_window,
                            frequency_s=frequency_s)
    header = [f"# Freshness objectives from {_comment(source)} as Prometheus rules, GENERATED by",
              "# `freshness-tracker rules`: regenerate it when the objectives change.",
              "# The first objective matching a consumer judges it (as in the Spark report):"]
    header += [f"#   {i}: {_comment(o.label)}" for i, o in enumerate(objectives)]
    header += [f"#   {i}: never judges a consumer (objective {j} has the same consumer regex)"
               for i, j in shadowed(objectives).items()]
    body: dict[str, Any] = rules
    if helm_values:
        body = {"prometheusRule": {"extraGroups": rules["groups"]}}
    return "\n".join(header) + "\n" + rules_yaml(body)
