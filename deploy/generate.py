"""Write the generated deployment artifacts; `--check` fails if any is stale (tests run it).

    python3 deploy/generate.py          # rewrite them
    python3 deploy/generate.py --check  # exit 1 and name the stale files

Sources -> outputs:
  deploy/schema.py     -> helm/freshness-tracker/values.schema.json
  deploy/dashboard.py  -> helm/freshness-tracker/files/freshness-tracker-dashboard.json
                          examples/grafana/dashboards/freshness-tracker.json
  the chart's templates/prometheusrule.yaml with default values
                       -> examples/prometheus/freshness-tracker.rules.yml
  the chart's templates/prometheusrule-compat.yaml with compatRules.enabled
                       -> examples/prometheus/compat.rules.yml
  examples/prometheus/objectives.conf through freshness_tracker.objective_rules (what
  `freshness-tracker rules --objectives examples/prometheus/objectives.conf` prints)
                       -> examples/prometheus/objectives.rules.yml
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from deploy import dashboard, schema  # noqa: E402
from freshness_tracker.objective_rules import rules_yaml  # noqa: E402

CHART = ROOT / "helm" / "freshness-tracker"
RULES_HEADER = (
    "# Prometheus rules for freshness-tracker: recording rules for group and topic aggregates\n"
    "# and alerts. GENERATED from helm/freshness-tracker/templates/prometheusrule.yaml with the\n"
    "# chart's default values (release name freshness-tracker, so job=\"freshness-tracker\") by\n"
    "# deploy/generate.py: change the template or the values, not this file.\n"
    "# Checked by `promtool check rules` and tested by deploy/prometheus/*.test.yml.\n"
)


COMPAT_HEADER = (
    "# Recording rules that give kafka-lag-exporter's and burrow_exporter's metric names, with\n"
    "# their labels, from freshness-tracker's exact values (docs/deploy.md, \"Recording rules for\n"
    "# other tools' names\"). GENERATED from\n"
    "# helm/freshness-tracker/templates/prometheusrule-compat.yaml (compatRules.enabled) by\n"
    "# deploy/generate.py: change the template, not this file.\n"
    "# Checked by `promtool check rules`, tested by deploy/prometheus/compat.rules.test.yml.\n"
)


def _rule_spec(template: str, values: dict[str, Any]) -> str:
    """The spec of a PrometheusRule the chart renders with `values`, as a rules file."""
    import helm_python as helm

    chart = helm.Chart.load(str(CHART))
    rendered = chart.render(values, name="freshness-tracker", namespace="monitoring")
    doc = yaml.safe_load(rendered[f"freshness-tracker/templates/{template}"])
    spec: dict[str, Any] = doc["spec"]
    return rules_yaml(spec, allow_unicode=False)


def rules_text(values: dict[str, Any] | None = None, frequency_s: float | None = None) -> str:
    """The shipped rules file; `values` are prometheusRule values over the chart's defaults and
    `frequency_s` the exporter's config.frequencySec (a benchmark renders them for its own
    intervals, as a user would)."""
    config = {} if frequency_s is None else {"config": {"frequencySec": frequency_s}}
    return RULES_HEADER + _rule_spec(
        "prometheusrule.yaml", {"prometheusRule": {"enabled": True, **(values or {})}, **config})


def compat_rules_text() -> str:
    return COMPAT_HEADER + _rule_spec("prometheusrule-compat.yaml",
                                      {"compatRules": {"enabled": True}})


OBJECTIVES = "examples/prometheus/objectives.conf"


def objective_rules_text() -> str:
    from freshness_tracker.objective_rules import render_rules
    from freshness_tracker.spark.objectives import load_objectives

    return render_rules(load_objectives(ROOT / OBJECTIVES), source=OBJECTIVES)


def _board() -> str:
    return json.dumps(dashboard.build(), indent=2) + "\n"


#: In order: the schema first, since rendering the chart validates against it.
OUTPUTS: list[tuple[Path, Callable[[], str]]] = [
    (CHART / "values.schema.json", schema.render),
    (CHART / "files" / "freshness-tracker-dashboard.json", _board),
    (ROOT / "examples" / "grafana" / "dashboards" / "freshness-tracker.json", _board),
    (ROOT / "examples" / "prometheus" / "freshness-tracker.rules.yml", rules_text),
    (ROOT / "examples" / "prometheus" / "compat.rules.yml", compat_rules_text),
    (ROOT / "examples" / "prometheus" / "objectives.rules.yml", objective_rules_text),
]


def outputs() -> dict[Path, str]:
    return {path: make() for path, make in OUTPUTS}


def stale() -> list[Path]:
    return [path for path, text in outputs().items()
            if not path.is_file() or path.read_text() != text]


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        bad = stale()
        for path in bad:
            print(f"stale: {path.relative_to(ROOT)} (run python3 deploy/generate.py)")  # noqa: T201
        return 1 if bad else 0
    for path, make in OUTPUTS:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(make())
        print(f"wrote {path.relative_to(ROOT)}")  # noqa: T201
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
