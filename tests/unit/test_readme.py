"""The README and the reference pages it sends readers to say what the code does.

The README is a newcomer's page: short, no measured figure (those live on the pages rendered from
run records), and every metric, setting and link it shows is real. The metric catalogue
(docs/metrics.md), the key table (docs/configuration.md) and the history schema (docs/history.md)
are hand-written, so each is checked here against the code that defines it: a family renamed,
a key added or a column changed fails a test instead of leaving the page wrong.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from freshness_tracker.config import settings as config_settings
from freshness_tracker.metrics import (
    ALL_PARTITION_METRICS,
    BUILD_INFO,
    CYCLE_COUNTERS,
    GROUP_FAMILIES,
    HEALTH_FAMILIES,
    KAFKA_CONSUMERS,
    KAFKA_FETCH_REQUESTS,
    PARTITION_FAMILIES,
    READ_DURATION,
    TOPIC_FAMILIES,
    Level,
)
from freshness_tracker.reference import reference_text, reference_tree
from freshness_tracker.sinks.history import HISTORY_SCHEMA
from freshness_tracker.sinks.prometheus import DEFAULT_PARTITION_METRICS

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
README = REPO / "README.md"
#: The pages this test keeps honest: the README and the reference pages it links to.
PAGES = (README, DOCS / "metrics.md", DOCS / "configuration.md", DOCS / "history.md",
         DOCS / "design.md", DOCS / "usage.md", DOCS / "migration.md", DOCS / "querytime.md",
         DOCS / "security.md", DOCS / "deploy.md")
#: Pages whose every metric-like name must be one this exporter serves (migration.md and
#: deploy.md also name other tools' metrics, on purpose).
OWN_NAME_PAGES = (README, DOCS / "metrics.md", DOCS / "configuration.md", DOCS / "design.md",
                  DOCS / "querytime.md", DOCS / "security.md")
MAX_README_LINES = 160

#: A metric name; not one inside a recording rule's name (`level:metric:operations`).
METRIC = re.compile(r"(?<![\w:])(?:kafka_consumer|freshness_tracker)_[a-z0-9_]*[a-z0-9]")
LINK = re.compile(r"\]\(([^)\s]+)\)")
OPT_IN = frozenset(ALL_PARTITION_METRICS) - frozenset(DEFAULT_PARTITION_METRICS)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _served_names() -> set[str]:
    """Every sample name /metrics can carry, from the catalogue."""
    names = {f.name for f in (*PARTITION_FAMILIES, *TOPIC_FAMILIES, *GROUP_FAMILIES,
                              *HEALTH_FAMILIES)}
    names |= {f"{c.name}_total" for c in CYCLE_COUNTERS}
    names |= {f"{KAFKA_FETCH_REQUESTS.name}_total", KAFKA_CONSUMERS.name, BUILD_INFO.name,
              READ_DURATION.name}
    names |= {f"{READ_DURATION.name}_{suffix}" for suffix in ("bucket", "sum", "count")}
    return names


def _families_as_served() -> set[str]:
    """One name per catalogue family, as a reader finds it in /metrics (counters with _total)."""
    return {n for n in _served_names() if not n.endswith(("_bucket", "_sum", "_count"))}


def _without_code_blocks(text: str) -> str:
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def _table_rows(text: str) -> Iterator[list[str]]:
    """The cells of every Markdown table row that is not a header separator."""
    for line in text.splitlines():
        if line.startswith("|") and not re.match(r"^\|[-| :]+\|$", line):
            cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
            yield [c.strip() for c in cells]


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    headings = re.findall(r"^#{1,6} (.+)$", _without_code_blocks(_text(path)), re.M)
    return {_slug(h) for h in headings}


# --- the README itself -----------------------------------------------------------------------


def test_the_readme_is_short() -> None:
    lines = _text(README).count("\n")
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines; move detail to docs/"


def test_the_readme_quotes_no_measured_figure() -> None:
    """Figures are rendered from run records on their own pages; the README links to them.
    The worked example (a code block) computes its numbers, it does not measure them."""
    prose = _without_code_blocks(_text(README))
    unit = r"(?:×|x\b|%|\s?(?:s|ms|min|MiB|MB|GiB|GB|KiB)\b|\s(?:seconds|minutes|series)\b)"
    figures = re.findall(rf"(?<![\w.])\d(?:[\d,.]*\d)?{unit}", prose)
    assert figures == [], figures


def test_the_two_commands_exist_and_ci_runs_the_test_one() -> None:
    readme = _text(README)
    block = re.search(r"## Two commands\n\n```sh\n(.*?)```", readme, re.S)
    assert block is not None, "README.md has no 'Two commands' block"
    commands = re.findall(r"^(\S+)", block.group(1), re.M)
    assert commands == ["scripts/run", "scripts/test"]
    for command in commands:
        script = REPO / command
        assert script.is_file() and script.stat().st_mode & 0o111, command
    assert "bash scripts/test" in _text(REPO / ".ci" / "run")


# --- metric names ----------------------------------------------------------------------------


@pytest.mark.parametrize("page", OWN_NAME_PAGES, ids=lambda p: p.name)
def test_every_metric_a_page_names_is_served(page: Path) -> None:
    named = set(METRIC.findall(_text(page)))
    assert named, f"{page.name} names no metric: the pattern is wrong"
    assert named - _served_names() == set()


def test_every_catalogue_family_is_in_the_metrics_page() -> None:
    listed = {row[0].strip("`") for row in _table_rows(_text(DOCS / "metrics.md")) if row}
    assert _families_as_served() - listed == set()


#: docs/metrics.md's sections, by the level of the families they list.
SECTION_LEVELS = {"Per partition": {Level.PARTITION, Level.PARTITION_OWNER},
                  "Per topic": {Level.TOPIC}, "Per group": {Level.GROUP},
                  "Per cluster: health": {Level.CLUSTER, Level.CLUSTER_STATUS}}


def _sections(text: str) -> dict[str, str]:
    parts = re.split(r"^## (.+)$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_the_metrics_page_lists_each_family_at_its_level_with_its_labels() -> None:
    sections = _sections(_text(DOCS / "metrics.md"))
    for title, levels in SECTION_LEVELS.items():
        listed = {row[0].strip("`"): row for row in _table_rows(sections[title]) if row}
        families = [f for f in (*PARTITION_FAMILIES, *TOPIC_FAMILIES, *GROUP_FAMILIES,
                                *HEALTH_FAMILIES) if f.level in levels]
        assert {f.name for f in families} == set(listed) - {"metric"}, title
        for family in families:
            row, said = listed[family.name], ", ".join(family.level.labels)
            if family.level in (Level.CLUSTER, Level.CLUSTER_STATUS):
                assert row[1] == said, family.name  # the health table has a labels column
            elif family.level is Level.PARTITION_OWNER:
                extra = family.level.labels[len(Level.PARTITION.labels):]
                assert all(f"`{label}`" in row[-1] for label in extra), family.name
            else:
                assert f"Labels: `{said}`" in sections[title], family.name


def test_the_metrics_page_marks_exactly_the_opt_in_families() -> None:
    exported = {row[0].strip("`"): row[1] for row in _table_rows(_text(DOCS / "metrics.md"))
                if row and row[0].strip("`") in ALL_PARTITION_METRICS}
    assert set(exported) == set(ALL_PARTITION_METRICS)
    assert {name for name, how in exported.items() if how == "opt-in"} == OPT_IN
    assert {name for name, how in exported.items() if how == "default"} == \
        set(DEFAULT_PARTITION_METRICS)


def test_the_readme_marks_opt_in_metrics_opt_in() -> None:
    lines = _text(README).splitlines()
    unmarked = [line for line in lines
                if OPT_IN & set(METRIC.findall(line)) and "opt-in" not in line]
    assert unmarked == []
    # its table says how each is exported: a default per-partition family is not "always"
    for row in _table_rows(_text(README)):
        names = set(METRIC.findall(row[0]))
        if not names or len(row) < 2:
            continue
        if names & OPT_IN:
            assert row[1] == "opt-in", row
        elif names & set(ALL_PARTITION_METRICS):
            assert row[1] == "default", row
        else:
            assert row[1] == "always", row


# --- configuration keys ----------------------------------------------------------------------


def _leaf_keys(tree: Mapping[str, Any], prefix: str = "") -> Iterator[str]:
    for key, value in tree.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(value, Mapping):
            yield from _leaf_keys(value, path)
        else:
            yield path


def _known_keys() -> set[str]:
    keys = set(_leaf_keys(reference_tree())) - {"clusters"}
    return keys | {f"clusters[].{k}" for k in config_settings._CLUSTER_KEYS}


def _table_keys(cell: str) -> list[str]:
    """`lookup.batchSize` / `timeout` names lookup.batchSize and lookup.timeout; a comma starts
    a new full key (`filters.groups.allow` / `deny`, `filters.topics.allow` / `deny`)."""
    keys = []
    for group in cell.split(", "):
        names = re.findall(r"`([^`]+)`", group)
        if not names:
            continue
        parent = names[0].rpartition(".")[0]
        keys.append(names[0])
        keys += [n if "." in n else f"{parent}.{n}" for n in names[1:]]
    return keys


def test_the_key_table_holds_every_key_and_only_real_ones() -> None:
    rows = [row for row in _table_rows(_text(DOCS / "configuration.md"))
            if row and row[0] != "key"]
    documented = {key for row in rows for key in _table_keys(row[0])}
    assert documented - _known_keys() == set(), "keys the config does not read"
    assert _known_keys() - documented == set(), "keys missing from docs/configuration.md"


def _env_overrides() -> dict[str, str]:
    """HOCON key -> the environment variable reference.conf lets override it."""
    out, path = {}, []
    for line in reference_text().splitlines():
        code = line.split("#", 1)[0].strip()
        opened = re.match(r"^([\w.]+)\s*\{$", code)
        if opened:
            path.append(opened.group(1))
        elif code == "}":
            path.pop()
        override = re.match(r"^([\w.]+)\s*=\s*\$\{\?(\w+)\}$", code)
        if override:
            out[".".join([*path, override.group(1)])] = override.group(2)
    return out


def test_the_key_table_names_every_environment_override() -> None:
    overrides = _env_overrides()
    assert "burrow.url" in overrides  # the walk above found the sections
    rows = {key: row for row in _table_rows(_text(DOCS / "configuration.md"))
            if row and row[0] != "key" for key in _table_keys(row[0])}
    missing = []
    for key, variable in overrides.items():
        said = [t.lstrip(".") for t in re.findall(r"`([^`]+)`", rows[key][2])]
        if not any(variable.endswith(t) for t in said):
            missing.append((key, variable))
    assert missing == []


def _hocon_keys(text: str) -> Iterator[str]:
    from pyhocon import ConfigFactory

    for block in re.findall(r"```hocon\n(.*?)```", text, re.S):
        tree = ConfigFactory.parse_string(block)
        yield from _leaf_keys({k: v for k, v in tree.items() if k != "clusters"})
        for cluster in tree.get("clusters", []):
            yield from (f"clusters[].{k}" for k in cluster if k != "kafka")
            yield "clusters[].kafka"


@pytest.mark.parametrize("page", (README, DOCS / "configuration.md"), ids=lambda p: p.name)
def test_the_configs_shown_use_real_keys(page: Path) -> None:
    text = _text(page)
    shown = set(_hocon_keys(text))
    assert shown, f"{page.name} shows no config"
    sections = {key.split(".")[0] for key in _known_keys() if "." in key} - {"clusters[]"}
    mentioned = {t for t in re.findall(r"`([A-Za-z_][\w.\[\]]*)`", _without_code_blocks(text))
                 if ("." in t and t.split(".")[0] in sections) or t.startswith("clusters[].")
                 or t == "partitionMetrics"}
    assert (shown | mentioned) - _known_keys() == set()


# --- links -----------------------------------------------------------------------------------


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_resolves(page: Path) -> None:
    links = [link for link in LINK.findall(_without_code_blocks(_text(page)))
             if not re.match(r"^[a-z]+:", link)]
    assert links or page != README, "README.md has no relative link: the pattern is wrong"
    broken = []
    for link in links:
        target, _, anchor = link.partition("#")
        path = (page.parent / target).resolve() if target else page
        if not path.exists() or (
                anchor and path.suffix == ".md" and anchor not in _anchors(path)):
            broken.append(link)
    assert broken == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_no_page_names_the_retired_broker_or_the_build_machines(page: Path) -> None:
    text = _text(page).lower()
    assert "tansu" not in text
    assert "these machines reach" not in text


# --- the history table -----------------------------------------------------------------------


def _arrow_type(column: pa.Field) -> str:
    kind = column.type
    if pa.types.is_timestamp(kind):
        return f"timestamp[{kind.unit}, {kind.tz}]"
    return {pa.string(): "string", pa.int32(): "int32", pa.int64(): "int64",
            pa.bool_(): "bool", pa.date32(): "date32"}[kind]


def test_the_history_page_is_the_schema_the_writers_use() -> None:
    rows = [row for row in _table_rows(_text(DOCS / "history.md"))
            if row and row[0].startswith("`")]
    documented = [(row[0].strip("`"), row[1].split(" / ")[0], row[2]) for row in rows]
    actual = [(f.name, _arrow_type(f), "yes" if f.nullable else "no") for f in HISTORY_SCHEMA]
    assert documented == actual
    status_row = next(row for row in rows if row[0] == "`status`")
    from freshness_tracker.domain.model import PartitionStatus

    assert set(re.findall(r"`(\w+)`", status_row[3])) >= {s.value for s in PartitionStatus}


def test_the_alerts_the_readme_names_are_shipped() -> None:
    rules = _text(REPO / "examples" / "prometheus" / "freshness-tracker.rules.yml")
    shipped = set(re.findall(r"^\s*- alert: (\w+)$", rules, re.M))
    named = set(re.findall(r"`((?:Kafka|FreshnessTracker)[A-Z]\w+)`", _text(README)))
    assert named, "README.md names no alert: the pattern is wrong"
    assert named - shipped == set()
