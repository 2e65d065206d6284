"""A Consumer Freshness Tracker user's YAML config works as written."""

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
from freshness_tracker.errors import ConfigError
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


@pytest.mark.usefixtures("restore_logging")
def test_the_cli_reads_the_config_once_through_the_bounded_reader(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Whether the file was YAML is known from the loader's one read (size-bounded, regular
    files only); the CLI never opens the file again to say so."""
    from freshness_tracker import cli

    yaml_file, hocon_file = tmp_path / "freshness.conf", tmp_path / "h.conf"
    yaml_file.write_text(CFT_README.replace("http://burrow.example.com", "http://127.0.0.1:1"))
    hocon_file.write_text('clusters = [{ name = "a", kafka { "bootstrap.servers" = "k:1" } }]')

    def second_read(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the config file was opened a second time")

    monkeypatch.setattr(Path, "read_text", second_read)
    monkeypatch.setattr(Path, "open", second_read)
    assert cli._settings(str(yaml_file)).from_yaml  # its logging goes to stderr, at INFO
    assert "is YAML (the Consumer Freshness Tracker's format)" in capsys.readouterr().err
    assert not cli._settings(str(hocon_file)).from_yaml
    assert "is YAML" not in capsys.readouterr().err
    assert load_settings(yaml_file) == load_settings(text=user_config_as_hocon(yaml_file))


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


@settings(max_examples=200)
@given(text=st.text())
def test_any_text_round_trips_through_the_yaml_to_hocon_conversion(text: str) -> None:
    """Names and passwords come back exactly: non-ASCII, quotes, backslashes, control
    characters (pyhocon knows no \\uXXXX, so nothing may be written that way)."""
    from freshness_tracker.config.hocon import parse_hocon
    from freshness_tracker.config.load import _hocon

    tree = parse_hocon(f"cluster = {_hocon({'name': text, 'password': text})}\n", "t")
    assert tree["cluster"]["name"] == text and tree["cluster"]["password"] == text


def test_non_ascii_names_and_passwords_are_read_as_written(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("burrow:\n  url: http://b:8000\n  username: zoë\n  password: päss\n"
                    "clusters:\n  - name: café\n    labels: {team: 日本}\n", encoding="utf-8")
    loaded = load_settings(path)
    assert loaded.clusters[0].name == "café"
    assert (loaded.burrow.username, loaded.burrow.password) == ("zoë", "päss")
    assert dict(loaded.clusters[0].labels) == {"team": "日本"}
    path.write_text("burrow:\n  url: http://b:8000\nclusters:\n  - name: 'p\\u00e4ss'\n")
    assert load_settings(path).clusters[0].name == "p\\u00e4ss"  # what YAML read, kept


def test_a_yaml_alias_bomb_is_refused_at_once(tmp_path: Path) -> None:
    import tracemalloc

    levels = "".join(f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n"
                     for i in range(8))
    path = tmp_path / "bomb.yaml"
    path.write_text('a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n'
                    + levels + "clusters:\n  - name: x\n")
    tracemalloc.start()
    try:
        with pytest.raises(ConfigError, match=r"YAML alias \(\*a\) at line 2") as info:
            load_settings(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50 * 2**20, peak
    assert info.value.key == str(path) and "write the value out" in info.value.fix


def test_a_yaml_value_that_looks_like_hocon_stays_a_value(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text('burrow:\n  url: http://b:8000\n  password: "${HOME}"\n  username: u\n'
                    'include: "http://127.0.0.1:1/x.conf"\nclusters:\n  - name: x\n')
    loaded = load_settings(path)
    assert loaded.burrow.password == "${HOME}"


def test_a_duplicate_yaml_key_is_refused_naming_it(tmp_path: Path) -> None:
    conf = tmp_path / "c.yaml"
    conf.write_text("burrow:\n  url: http://a:8000\n  url: http://b:8000\n"
                    "clusters:\n  - name: a\n")
    with pytest.raises(ConfigError) as info:
        load_settings(conf)
    assert "'url' twice" in str(info.value) and "line 3" in str(info.value)
