"""A Consumer Freshness Tracker user's YAML config works as written (issue 14)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from freshness_tracker.cli import main
from freshness_tracker.config import load_settings
from freshness_tracker.config.load import is_yaml, user_config_as_hocon
from freshness_tracker.reference import reference_text

REPO = Path(__file__).resolve().parents[2]

#: The CFT README's minimal configuration, verbatim, plus its documented options.
CFT_README = """\
burrow:
  url: "http://burrow.example.com"

clusters:
  - name: logs-cluster
    kafka:
      bootstrap.servers: "l1.example.com:9092, l2.example.com:9092, l3.example.com:9092"
  - name: metrics-cluster
    numConsumers: 10
    kafka:
      bootstrap.servers: "m1.example.com:9092, m2.example.com:9092, m3.example.com:9092"
port: 8099
frequency_sec: 45
workerThreadCount: 15
"""


def test_the_cft_readme_config_loads_as_written(tmp_path: Path) -> None:
    path = tmp_path / "freshness.yaml"
    path.write_text(CFT_README)
    s = load_settings(path)
    assert s.burrow.url == "http://burrow.example.com"
    assert s.burrow.retries == 2 and s.burrow.max_response_bytes == 16777216  # defaults merge
    assert (s.web.port, s.frequency_s, s.worker_threads) == (8099, 45, 15)
    assert [c.name for c in s.clusters] == ["logs-cluster", "metrics-cluster"]
    assert s.clusters[0].kafka.properties["bootstrap.servers"] == (
        "l1.example.com:9092, l2.example.com:9092, l3.example.com:9092")
    assert s.clusters[1].kafka.num_consumers == 10
    assert s.warnings == ()


def test_yaml_is_recognised_by_content_without_the_extension(tmp_path: Path) -> None:
    path = tmp_path / "freshness.conf"
    path.write_text(CFT_README)
    assert load_settings(path).clusters[1].name == "metrics-cluster"


def test_the_cft_burrow_api_prefix_is_accepted_and_any_other_is_named(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(CFT_README.replace('  url: "http://burrow.example.com"\n',
                                       '  url: "http://b:8000"\n  api: "v3/kafka"\n'))
    assert load_settings(path).warnings == ()
    path.write_text(CFT_README.replace('  url: "http://burrow.example.com"\n',
                                       '  url: "http://b:8000"\n  api: "v2/kafka"\n'))
    assert any(w.startswith("burrow.api") for w in load_settings(path).warnings)


def test_print_hocon_gives_a_hocon_file_with_the_same_settings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "freshness.yaml"
    path.write_text(CFT_README)
    assert main(["check", "--config", str(path), "--print-hocon"]) == 0
    hocon = capsys.readouterr().out
    assert not is_yaml(hocon)
    assert load_settings(text=hocon) == load_settings(path)


def test_invalid_yaml_names_the_line_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("burrow:\n  url: http://b\nclusters:\n  - name: [oops\n")
    assert main(["check", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert "not valid YAML at line" in err and "Consumer Freshness Tracker" in err


def test_a_yaml_list_at_the_top_is_refused_with_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "list.yaml"
    path.write_text("- burrow\n- clusters\n")
    with pytest.raises(Exception, match="top level is not a mapping"):
        load_settings(path)


def test_no_hocon_we_ship_is_taken_for_yaml() -> None:
    shipped = [reference_text(), *(p.read_text() for p in (REPO / "examples/config").glob("*"))]
    assert shipped and not any(is_yaml(text) for text in shipped)


_names = st.from_regex(r"[a-z][a-z0-9-]{0,15}", fullmatch=True)
_servers = st.lists(st.from_regex(r"[a-z]{1,8}:[1-9][0-9]{3}", fullmatch=True), min_size=1,
                    max_size=3).map(", ".join)


@settings(max_examples=25)  # each example parses reference.conf twice (~0.1 s)
@given(clusters=st.lists(st.tuples(_names, _servers, st.integers(1, 16)), min_size=1,
                         max_size=4, unique_by=lambda c: c[0]),
       port=st.integers(1024, 65535), frequency=st.integers(1, 600))
def test_yaml_and_its_hocon_are_the_same_settings(
    clusters: list[tuple[str, str, int]], port: int, frequency: int
) -> None:
    data = {"burrow": {"url": "http://burrow:8000"}, "port": port, "frequency_sec": frequency,
            "workerThreadCount": 64,
            "clusters": [{"name": n, "numConsumers": k, "kafka": {"bootstrap.servers": s}}
                         for n, s, k in clusters]}
    as_yaml = yaml.safe_dump(data, sort_keys=False)
    as_json_hocon = "\n".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in data.items())
    from_yaml = load_settings(text=as_yaml)
    assert from_yaml == load_settings(text=as_json_hocon)
    assert [(c.name, c.kafka.num_consumers) for c in from_yaml.clusters] == [
        (n, k) for n, _s, k in clusters]


def test_user_config_as_hocon_leaves_a_hocon_file_alone(tmp_path: Path) -> None:
    path = tmp_path / "c.conf"
    text = 'burrow.url = "http://b:8000"\n'
    path.write_text(text)
    assert user_config_as_hocon(path) == text
