"""Config loading: defaults, env overrides, dotted librdkafka keys, errors that name the key."""

from __future__ import annotations

import json
import socket
import tracemalloc
from pathlib import Path
from typing import Any, cast

import pytest

from freshness_tracker.cli import main
from freshness_tracker.config import load_settings
from freshness_tracker.errors import ConfigError
from freshness_tracker.metrics import Granularity
from freshness_tracker.reference import parse_duration

MINIMAL = 'clusters = [{ name = "local", kafka { "bootstrap.servers" = "k:9092" } }]'


def test_defaults_from_reference() -> None:
    s = load_settings(text=MINIMAL)
    assert s.burrow.url == "http://127.0.0.1:8000"
    assert s.web.port == 8081 and s.frequency_s == 30
    assert s.granularity is Granularity.PARTITION
    assert s.clusters[0].kafka.properties["bootstrap.servers"] == "k:9092"
    assert s.clusters[0].kafka.num_consumers == 2
    assert s.warnings == ()


def test_seed_example_keys_work_as_written() -> None:
    # The original article's keys, with ':' separators and unquoted dotted librdkafka keys.
    s = load_settings(text="""
burrow: { url: "http://burrow.example.com" }
workerThreadCount: 4
clusters: [
  { name: logs-cluster, numConsumers: 3,
    kafka: { bootstrap.servers: "l1.example.com:9092, l2.example.com:9092" } }
  { name: metrics-cluster, kafka: { bootstrap.servers: "m1.example.com:9092" } }
]
""")
    assert s.burrow.url == "http://burrow.example.com"
    assert s.worker_threads == 4
    c = s.clusters[0]
    assert c.name == "logs-cluster" and c.kafka.num_consumers == 3
    assert c.kafka.properties["bootstrap.servers"] == "l1.example.com:9092, l2.example.com:9092"
    assert s.clusters[1].kafka.properties["bootstrap.servers"] == "m1.example.com:9092"


def test_nested_librdkafka_properties_are_flattened() -> None:
    s = load_settings(text="""clusters = [{ name = a, kafka {
        bootstrap.servers = "x:1"
        security.protocol = SASL_SSL
        "sasl.mechanisms" = PLAIN
        sasl.username = u
        enable.ssl.certificate.verification = false
    } }]""")
    assert dict(s.clusters[0].kafka.properties) == {
        "bootstrap.servers": "x:1", "security.protocol": "SASL_SSL",
        "sasl.mechanisms": "PLAIN", "sasl.username": "u",
        "enable.ssl.certificate.verification": "false"}


def test_env_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FRESHNESS_TRACKER_BURROW_URL", "http://from-env:8000")
    monkeypatch.setenv("FRESHNESS_TRACKER_PORT", "9100")
    monkeypatch.setenv("SASL_PASS", "s3cret")
    s = load_settings(text=MINIMAL.replace(
        '"k:9092"', '"k:9092", "sasl.password" = ${?SASL_PASS}'))
    assert s.burrow.url == "http://from-env:8000"
    assert s.web.port == 9100
    assert s.clusters[0].kafka.properties["sasl.password"] == "s3cret"
    assert "s3cret" not in repr(s)


def test_user_file_wins_over_reference_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FRESHNESS_TRACKER_PORT", "9100")
    assert load_settings(text=MINIMAL + "\nport = 9200").web.port == 9200


def test_unknown_keys_warn_with_suggestion() -> None:
    s = load_settings(text=MINIMAL + "\nworkerThreadCnt = 3\nburrow.urll = x")
    assert any("workerThreadCnt" in w and "workerThreadCount" in w for w in s.warnings)
    assert any("burrow.urll" in w and "'url'" in w for w in s.warnings)


@pytest.mark.parametrize(("text", "key"), [
    ("clusters = []", "clusters"),
    ("", "clusters"),
    ('clusters = [{ kafka {} }]', "clusters[0].name"),
    ('clusters = [{ name = a }, { name = a }]', "clusters[1].name"),
    ('clusters = [{ name = a, numConsumers = 0 }]', "clusters[0].numConsumers"),
    ('clusters = [{ name = a, numConsumers = many }]', "clusters[0].numConsumers"),
    ('clusters = [{ name = a, kafka = 5 }]', "clusters[0].kafka"),
    (MINIMAL + "\nburrow.url = ftp://x", "burrow.url"),
    (MINIMAL + "\nport = 70000", "port"),
    (MINIMAL + "\nfrequency_sec = 0", "frequency_sec"),
    (MINIMAL + "\nburrow.timeout = soon", "burrow.timeout"),
    (MINIMAL + "\ngranularity = broker", "granularity"),
    (MINIMAL + '\nfilters.groups.allow = ["("]', "filters.groups.allow[0]"),
    (MINIMAL + "\nshard { index = 2, count = 2 }", "shard.index"),
    (MINIMAL + '\nweb.tlsCertFile = "/x.pem"', "web.tlsCertFile"),
    ("clusters = [ { name = a ", "<text>"),
    # durations that meant nothing, or hammered Burrow
    (MINIMAL + "\nfrequency_sec = 1 month", "frequency_sec"),
    (MINIMAL + "\nlookup.topicConfigTtl = 2 years", "lookup.topicConfigTtl"),
    (MINIMAL + "\nfrequency_sec = 1e-9", "frequency_sec"),
    (MINIMAL + "\nfrequency_sec = 500ms", "frequency_sec"),
    (MINIMAL + "\nburrow.timeout = 1ms", "burrow.timeout"),
    (MINIMAL + "\nburrow.timeout = 1h", "burrow.timeout"),
    (MINIMAL + "\nlookup.timeout = 1e-9", "lookup.timeout"),
    (MINIMAL + "\nlookup.fetchWaitMax = 10s", "lookup.fetchWaitMax"),
    (MINIMAL + "\nlookup.fetchWaitMax = 1e-9", "lookup.fetchWaitMax"),
    (MINIMAL + "\nlookup.topicConfigTtl = 1ms", "lookup.topicConfigTtl"),
    # values HOCON reads as something else than the text written
    ("clusters = [{ name = 5 }]", "clusters[0].name"),
    ("clusters = [{ name = 10s }]", "clusters[0].name"),
    ("clusters = [{ name = true }]", "clusters[0].name"),
    ('clusters = [{ name = a, kafka { "session.timeout.ms" = 10s } }]',
     'clusters[0].kafka."session.timeout.ms"'),
    (MINIMAL + "\nlookup.fetchMaxBytes = 3000000000", "lookup.fetchMaxBytes"),
    (MINIMAL + "\nlookup.queuedMaxMessagesKbytes = 1e30", "lookup.queuedMaxMessagesKbytes"),
])
def test_errors_name_the_key(text: str, key: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(text=text)
    assert info.value.key == key
    assert str(info.value).startswith(key)


def test_durations() -> None:
    assert parse_duration("500ms", "k") == 0.5
    assert parse_duration("5m", "k") == 300
    assert parse_duration(7, "k") == 7
    assert load_settings(text=MINIMAL + "\nlookup.timeout = 2500ms").lookup.timeout_s == 2.5
    assert load_settings(text=MINIMAL + "\nburrow.timeout = 3 seconds").burrow.timeout_s == 3


def test_cli_exits_2_on_config_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.conf"
    bad.write_text("clusters = [{ name = a, numConsumers = -1 }]")
    assert main(["once", "--config", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "clusters[0].numConsumers" in err[0]


def test_cli_exits_2_on_missing_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--config", "/nonexistent.conf"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_env_override_pattern_in_user_file_keeps_value_when_unset(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("FT_TEST_UNSET", raising=False)
    monkeypatch.setenv("FT_TEST_SET", "http://env:1")
    conf = tmp_path / "c.conf"
    conf.write_text(MINIMAL + '''
burrow.url = "http://file:1"
burrow.url = ${?FT_TEST_UNSET}
port = 9000
port = ${?FT_TEST_UNSET}
burrow.username = "u"
burrow.username = ${?FT_TEST_SET}
''')
    s = load_settings(conf)
    assert s.burrow.url == "http://file:1"
    assert s.web.port == 9000
    assert s.burrow.username == "http://env:1"


def test_include_relative_to_config_file(tmp_path: Path) -> None:
    (tmp_path / "clusters.conf").write_text(MINIMAL)
    conf = tmp_path / "main.conf"
    conf.write_text('include "clusters.conf"\nport = 9001\n')
    s = load_settings(conf)
    assert s.web.port == 9001 and s.clusters[0].name == "local"


def test_too_few_worker_threads_for_the_consumers_warns() -> None:
    s = load_settings(text='workerThreadCount = 3\nclusters = [{ name = a, numConsumers = 2 }, '
                           '{ name = b, numConsumers = 2 }]')
    assert any(w.startswith("workerThreadCount: 3 threads for 4 consumers") for w in s.warnings)
    assert load_settings(text=MINIMAL).warnings == ()


def test_files_are_checked_where_the_config_is_used_not_when_parsed(tmp_path: Path) -> None:
    from freshness_tracker.config.settings import require_files

    # A chart renders paths that exist only inside the pod: parsing must accept them...
    s = load_settings(text=MINIMAL + '\nburrow.caFile = "/nonexistent/ca.pem"')
    assert s.burrow.ca_file == "/nonexistent/ca.pem"
    # ...and using them here names the key.
    with pytest.raises(ConfigError) as info:
        require_files(s)
    assert info.value.key == "burrow.caFile"
    ca = tmp_path / "ca.pem"
    ca.write_text("x")  # readable, but no certificate: every https request would fail
    with pytest.raises(ConfigError) as info:
        require_files(load_settings(text=MINIMAL + f'\nburrow.caFile = "{ca}"'))
    assert info.value.key == "burrow.caFile" and "no usable certificate" in str(info.value)
    from tests.faults.harness import make_certs

    real = make_certs(tmp_path / "certs").ca
    require_files(load_settings(text=MINIMAL + f'\nburrow.caFile = "{real}"'))


# --- values that meant something else than written ----------------------------------------

def test_a_month_is_not_zero_seconds() -> None:
    """pyhocon keeps months apart from days; they used to be dropped, making `1 month` 0s."""
    with pytest.raises(ConfigError) as info:
        load_settings(text=MINIMAL + "\nfrequency_sec = 1 month")
    assert "months and years have no fixed length" in str(info.value)
    assert load_settings(text=MINIMAL + "\nfrequency_sec = 2 weeks").frequency_s == 14 * 86400
    assert load_settings(text=MINIMAL + "\nfrequency_sec = 1s").frequency_s == 1
    assert load_settings(text=MINIMAL + "\nlookup.fetchWaitMax = 1ms").lookup.fetch_wait_max_ms == 1


def test_the_minimum_frequency_is_said_in_the_error() -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(text=MINIMAL + "\nfrequency_sec = 1e-9")
    assert str(info.value) == "frequency_sec: 1e-09s is too small; use at least 1s"


@pytest.mark.parametrize(("files", "problem"), [
    ({"main.conf": 'include required(file("/nonexistent/x.conf"))\n' + MINIMAL},
     "cannot include '/nonexistent/x.conf': No such file or directory"),
    ({"main.conf": 'include required("main.conf")\n' + MINIMAL}, "includes form a cycle"),
    ({"main.conf": 'include required("b.conf")\n' + MINIMAL,
      "b.conf": 'include required("main.conf")\n'}, "includes form a cycle"),
    ({"main.conf": 'include required(file("sub"))\n' + MINIMAL, "sub/": ""},
     "is a directory"),
])
def test_include_errors_name_the_file(tmp_path: Path, files: dict[str, str], problem: str,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    for name, text in files.items():
        if name.endswith("/"):
            (tmp_path / name).mkdir()
        else:
            (tmp_path / name).write_text(text)
    main_conf = tmp_path / "main.conf"
    with pytest.raises(ConfigError) as info:
        load_settings(main_conf)
    assert info.value.key == str(main_conf)
    assert problem in str(info.value)
    assert main(["check", "--config", str(main_conf)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"config error: {main_conf}: "), err


def test_a_directory_as_config_says_so(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(tmp_path)
    assert info.value.key == "--config"
    assert "is a directory" in str(info.value)


def test_history_path_is_checked_where_the_config_is_used(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from freshness_tracker.config.settings import require_files

    a_file = tmp_path / "f"
    a_file.write_text("x")

    def check(path: str) -> ConfigError | None:
        try:
            require_files(load_settings(text=MINIMAL + f"\nhistory.path = {json.dumps(path)}"))
        except ConfigError as exc:
            assert exc.key == "history.path"
            return exc
        return None

    assert "is a file, not a directory" in str(check(str(a_file)))
    assert "needs" in str(check(str(a_file / "below" / "it")))
    assert check(str(tmp_path / "new" / "dir")) is None  # created by the sink
    assert check(str(tmp_path)) is None
    assert check("s3://bucket/history") is None  # not checked: it would need the network
    monkeypatch.setattr("os.access", lambda path, mode: False)  # root may write anywhere
    assert "is not writable" in str(check(str(tmp_path)))


def test_the_history_path_is_refused_at_startup_not_every_cycle(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a_file = tmp_path / "f"
    a_file.write_text("x")
    conf = tmp_path / "c.conf"
    conf.write_text(MINIMAL + f"\nhistory.path = {json.dumps(str(a_file))}\n")
    assert main(["once", "--config", str(conf)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("config error: history.path: "), err


@pytest.mark.parametrize(("kafka", "key", "problem"), [
    ('"bootstrap.server" = "k:9092"', 'clusters[1].kafka."bootstrap.server"',
     'No such configuration property: "bootstrap.server"'),
    ('"bootstrap.servers" = "k:9092", "security.protocol" = garbage',
     'clusters[1].kafka."security.protocol"', 'Invalid value (a value of 7 characters)'),
    ('"security.protocol" = SASL_SSL, "sasl.mechanism" = PLAIN',
     'clusters[1].kafka."sasl.username"', "sasl.username and sasl.password must be set"),
    ('"security.protocol" = SASL_SSL, "sasl.mechanism" = PLAIN, "sasl.username" = u',
     'clusters[1].kafka."sasl.password"', "sasl.username and sasl.password must be set"),
    ('"security.protocol" = SSL, "ssl.ca.location" = "/nonexistent/ca.pem"',
     'clusters[1].kafka."ssl.ca.location"', "(no such file)"),
    ('"fetch.wait.max.ms" = 999999999', 'clusters[1].kafka."fetch.wait.max.ms"',
     "outside allowed range"),
])
def test_librdkafka_properties_are_validated_at_startup(kafka: str, key: str,
                                                        problem: str) -> None:
    from freshness_tracker.config.kafka_properties import validate_kafka_properties

    settings = load_settings(text="clusters = [{ name = good, kafka { "
                                  '"bootstrap.servers" = "k:9092" } }, '
                                  f"{{ name = bad, kafka {{ {kafka} }} }}]")
    with pytest.raises(ConfigError) as info:
        validate_kafka_properties(settings)
    assert info.value.key == key
    assert problem in str(info.value)
    assert "Failed to create" not in str(info.value)


def test_lookup_keys_librdkafka_refuses_are_named() -> None:
    from freshness_tracker.config.kafka_properties import validate_kafka_properties

    with pytest.raises(ConfigError) as info:  # below message.max.bytes (1000000)
        validate_kafka_properties(load_settings(text=MINIMAL + "\nlookup.fetchMaxBytes = 2048"))
    assert info.value.key == "lookup.fetchMaxBytes"
    validate_kafka_properties(load_settings(text=MINIMAL))  # the defaults pass


def test_a_secret_value_librdkafka_rejects_is_not_echoed(monkeypatch: pytest.MonkeyPatch) -> None:
    from freshness_tracker.config import kafka_properties

    settings = load_settings(text='clusters = [{ name = a, kafka { "sasl.password" = "pw-123" } }]')
    error = kafka_properties._error(0, settings.clusters[0].kafka.properties,
                                    'Invalid value "pw-123" for configuration property '
                                    '"sasl.password"')
    assert "pw-123" not in str(error) and error.key == 'clusters[0].kafka."sasl.password"'


@pytest.mark.parametrize("command", ["check", "once", "run"])
def test_a_bad_librdkafka_property_exits_2_before_anything_runs(
        command: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "c.conf"
    conf.write_text('burrow.url = "http://127.0.0.1:1"\nport = 0\nlistenAddress = "127.0.0.1"\n'
                    'clusters = [{ name = a, kafka { "bootstrap.server" = "k:9092" } }]\n')
    assert main([command, "--config", str(conf)]) == 2
    out, err = capfd.readouterr()  # fd level: librdkafka's own lines would go there
    assert err.strip() == ('config error: clusters[0].kafka."bootstrap.server": No such '
                           'configuration property: "bootstrap.server"; check the name in '
                           "librdkafka's CONFIGURATION.md")
    assert out == ""


# --- a config never reaches the network, and what it can expand to is bounded -----------------

def _listener() -> socket.socket:
    """A port that accepts and never answers: a fetch would hang on it, a connect shows."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0)
    return server


def _connected(server: socket.socket) -> bool:
    try:
        server.accept()[0].close()
    except BlockingIOError:
        return False
    return True


@pytest.mark.parametrize("include", [
    'include url("http://{addr}/c.conf")',
    'include required(url("http://{addr}/c.conf"))',
    'include "http://{addr}/c.conf"',
    'include"https://{addr}/c.conf"',
    'INCLUDE url ( "HTTP://user:hunter2@{addr}/c.conf" )',
    'include "file://{addr}/etc/c.conf"',
    'include file("nested.conf")',  # which includes the URL itself
    'include classpath("c.conf")',
    'include package("freshness_tracker:config/reference.conf")',
])
@pytest.mark.parametrize("reader", ["config", "objectives"])
def test_an_include_of_a_url_is_refused_before_any_connection(
        tmp_path: Path, include: str, reader: str, capsys: pytest.CaptureFixture[str]) -> None:
    from freshness_tracker.spark.objectives import load_objectives

    server = _listener()
    with server:
        addr = f"127.0.0.1:{server.getsockname()[1]}"
        (tmp_path / "nested.conf").write_text(f'include url("http://{addr}/n.conf")\n')
        conf = tmp_path / "main.conf"
        conf.write_text(include.format(addr=addr) + "\n" + MINIMAL + "\n"
                        'objectives = [{ consumer = ".*", freshness = 5m, target = 99% }]\n')
        with pytest.raises(ConfigError) as info:
            load_settings(conf) if reader == "config" else load_objectives(conf)
        if reader == "config":
            assert main(["check", "--config", str(conf)]) == 2
            assert "hunter2" not in capsys.readouterr().err
        assert not _connected(server)
    assert info.value.key == str(conf)
    assert "include" in str(info.value) and "hunter2" not in str(info.value)


def test_local_includes_still_work_and_wildcards_and_devices_are_refused(tmp_path: Path) -> None:
    (tmp_path / "extra.conf").write_text("frequency_sec = 7\n")
    conf = tmp_path / "main.conf"
    conf.write_text('include "extra.conf"\n' + MINIMAL)
    assert load_settings(conf).frequency_s == 7
    for include, problem in (('include "/**/*.conf"', "wildcard"),
                             ('include file("/dev/zero")', "not a regular file")):
        conf.write_text(include + "\n" + MINIMAL)
        with pytest.raises(ConfigError, match=problem):
            load_settings(conf)


def _hocon_bomb(levels: int = 9) -> str:
    """Nine levels of eight references: 8 characters become 8**10, over a gigabyte."""
    return 'x0 = "xxxxxxxx"\n' + "".join(
        f"x{i} = {('${x' + str(i - 1) + '}') * 8}\n" for i in range(1, levels + 1))


@pytest.mark.parametrize("bomb", [
    _hocon_bomb(),
    'x0 = [1, 1, 1, 1, 1, 1, 1, 1]\n' + "".join(  # the same with lists
        f"x{i} = {('${x' + str(i - 1) + '} ') * 8}\n" for i in range(1, 10)),
])
@pytest.mark.parametrize("reader", ["config", "objectives"])
def test_a_substitution_bomb_is_refused_without_growing(bomb: str, reader: str) -> None:
    from freshness_tracker.spark.objectives import parse_objectives

    tracemalloc.start()
    try:
        with pytest.raises(ConfigError, match="substitutions") as info:
            load_settings(text=bomb + MINIMAL) if reader == "config" else parse_objectives(bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100 * 2**20, peak  # unbounded, it passes 780 MB
    assert info.value.fix


def test_a_large_config_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    conf = tmp_path / "big.conf"
    conf.write_text(MINIMAL + "\n" + "# padding\n" * 40_000)
    with pytest.raises(ConfigError, match="larger than"):
        load_settings(conf)


@pytest.mark.parametrize(("setting", "key"), [
    ("frequency_sec = ${SOME_SECRET}", "frequency_sec"),
    ("port = ${SOME_SECRET}", "port"),
    ("burrow.tlsVerify = ${SOME_SECRET}", "burrow.tlsVerify"),
    ("granularity = ${SOME_SECRET}", "granularity"),
    ("filters.groups.allow = ${SOME_SECRET}", "filters.groups.allow[0]"),
    ('clusters = [{ name = "a", numConsumers = ${SOME_SECRET} }]', "clusters[0].numConsumers"),
    ('clusters = [{ name = "a", kafka { "session.timeout.ms" = ${SOME_SECRET} } }]',
     'clusters[0].kafka."session.timeout.ms"'),
])
def test_a_substituted_secret_is_never_echoed_in_an_error(
        setting: str, key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from freshness_tracker.config.kafka_properties import validate_kafka_properties

    monkeypatch.setenv("SOME_SECRET", "hunter2[")
    with pytest.raises(ConfigError) as info:
        validate_kafka_properties(load_settings(text=MINIMAL + "\n" + setting))
    assert info.value.key == key
    assert "hunter2" not in str(info.value)


def test_a_duration_error_describes_the_value_never_quotes_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """parse_duration is every duration's reader (settings, objectives files, the defaults):
    its own error must not echo a secret a substitution put there, whoever calls it."""
    from freshness_tracker.spark.objectives import parse_objectives

    with pytest.raises(ConfigError) as info:
        parse_duration("hunter2[", "k")
    assert str(info.value) == ("k: expected a duration, got a string of 8 characters; "
                               "write e.g. 10s, 500ms or 5m")
    monkeypatch.setenv("SOME_SECRET", "hunter2[")
    with pytest.raises(ConfigError) as info:
        parse_objectives('objectives = [{ consumer = ".*", freshness = ${SOME_SECRET}, '
                         "target = 99% }]")
    assert info.value.key == "objectives: objectives[0].freshness"
    assert "hunter2" not in str(info.value) and "8 characters" in str(info.value)
    with pytest.raises(ConfigError) as info:  # a target is no duration, but the same rule
        parse_objectives('objectives = [{ consumer = ".*", freshness = 1m, '
                         "target = ${SOME_SECRET} }]")
    assert info.value.key == "objectives: objectives[0].target"
    assert "hunter2" not in str(info.value)


def test_a_bad_relative_time_on_the_spark_command_line_is_a_usage_error() -> None:
    """`--from now-xyz` is argparse's one line naming the option and the text typed (the
    person's own command line), not a traceback."""
    import argparse

    from freshness_tracker.spark.cli import parse_time_ms

    with pytest.raises(argparse.ArgumentTypeError, match="'now-xyz' is not a time"):
        parse_time_ms("now-xyz")
    assert parse_time_ms("now-1m", now_ms=120_000) == 60_000


def test_a_java_truststore_names_its_key_and_the_fix() -> None:
    from freshness_tracker.config.kafka_properties import validate_kafka_properties

    settings = load_settings(text='clusters = [{ name = "a", kafka { '
                             '"ssl.truststore.location" = "/tmp/t.jks" } }]')
    with pytest.raises(ConfigError) as info:
        validate_kafka_properties(settings)
    assert info.value.key == 'clusters[0].kafka."ssl.truststore.location"'
    assert "ssl.ca.location" in info.value.fix


def test_a_bomb_sent_as_a_reload_is_refused_and_the_next_valid_reload_applies(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The SIGHUP reloader is the main thread: a bomb must leave it free for the next one."""
    from freshness_tracker import cli

    applied: list[float] = []

    class Service:  # what cli._reload asks of the running service
        def reload(self, settings: Any) -> str:
            applied.append(settings.frequency_s)
            return "applied"

    conf = tmp_path / "c.conf"
    conf.write_text(_hocon_bomb() + MINIMAL)
    cli._reload(cast(Any, Service()), str(conf))
    assert applied == [] and "substitutions" in caplog.text
    conf.write_text(MINIMAL + "\nfrequency_sec = 42\n")
    cli._reload(cast(Any, Service()), str(conf))
    assert applied == [42.0]


# --- a config cannot load code, run commands or fetch URLs; bounded work; nothing echoed ------

_PLUGIN = """#include <stdio.h>
__attribute__((constructor)) static void ran(void) {
    FILE *f = fopen(MARKER, "w"); if (f) { fputs("ran", f); fclose(f); } }
int conf_init(void *a, void *b, char *c, size_t d) { return 0; }
"""


@pytest.mark.parametrize(("prop", "value_of"), [
    ("plugin.library.paths", "library"),
    ("ssl.engine.location", "library"),
    ("ssl.providers", "library"),
    ("sasl.kerberos.kinit.cmd", "command"),
    ("sasl.oauthbearer.token.endpoint.url", "url"),
    ("sasl.oauthbearer.method", "oidc"),
    ("error_cb", "library"),
    ("oauthbearer_token_refresh_cb", "library"),
    ("sasl.kerberos.principal", "injection"),
])
@pytest.mark.parametrize("command", ["load_settings", "check"])
def test_a_property_that_runs_code_is_refused_before_librdkafka_sees_it(
        prop: str, value_of: str, command: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    import shutil
    import subprocess

    if shutil.which("gcc") is None:
        pytest.fail("gcc is needed to build the plugin this test must never see loaded")
    marker = tmp_path / "RAN"
    source = tmp_path / "evil.c"
    source.write_text(f'#define MARKER "{marker}"\n' + _PLUGIN)
    library = tmp_path / "evil.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    value = {"library": str(library), "command": f"touch {marker}", "oidc": "OIDC",
             "url": "http://127.0.0.1:1/token", "injection": f"x; touch {marker}"}[value_of]
    conf = tmp_path / "c.conf"
    conf.write_text('burrow.url = "http://127.0.0.1:1"\nclusters = [{ name = a, kafka { '
                    '"bootstrap.servers" = "127.0.0.1:1", "security.protocol" = SASL_SSL, '
                    f'"sasl.mechanisms" = GSSAPI, "{prop}" = "{value}" }} }}]\n')
    if command == "check":
        assert main(["check", "--config", str(conf)]) == 2
        assert f'clusters[0].kafka."{prop}"' in capsys.readouterr().err
    else:
        with pytest.raises(ConfigError) as info:
            load_settings(conf)
        assert info.value.key == f'clusters[0].kafka."{prop}"' and info.value.fix
    assert not marker.exists()


def test_a_one_value_substitution_bomb_is_refused_before_resolving() -> None:
    import time

    bomb = 's = "x"\nv = ' + "${s}" * 2000 + "\n"
    start = time.monotonic()
    with pytest.raises(ConfigError, match="more than 200 substitutions"):
        load_settings(text=bomb + MINIMAL)
    assert time.monotonic() - start < 20  # resolved, it takes minutes
    load_settings(text='s = "x"\nv = ' + "${s}" * 20 + "\n" + MINIMAL)  # a few still work


def test_a_long_flat_list_is_refused_by_size() -> None:
    with pytest.raises(ConfigError, match="larger than 32 KiB"):
        load_settings(text=MINIMAL + "\nx = [" + ",".join(["1"] * 20_000) + "]")


@pytest.mark.parametrize(("setting", "key"), [
    ("partitionMetrics = [${SOME_SECRET}]", "partitionMetrics[0]"),
    ("port = ${SOME_NUMBER}", "port"),
    ('clusters = [{ name = ${SOME_SECRET} }, { name = ${SOME_SECRET} }]', "clusters[1].name"),
    ('x = [1] ${SOME_SECRET}', "<text>"),
    ('x = { a = 1 } ${SOME_SECRET}', "<text>"),
])
def test_more_substituted_secrets_are_never_echoed(
        setting: str, key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_SECRET", "S3cr3tP4ss")
    monkeypatch.setenv("SOME_NUMBER", "987654321012")
    with pytest.raises(ConfigError) as info:
        load_settings(text=MINIMAL + "\n" + setting)
    assert info.value.key == key
    assert "S3cr3tP4ss" not in str(info.value) and "987654321012" not in str(info.value)


@pytest.mark.parametrize("prop", ["ssl.ca.location", "ssl.keystore.location",
                                  "https.ca.location"])
def test_librdkafka_texts_never_echo_a_configured_value(
        prop: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from freshness_tracker.config.kafka_properties import validate_kafka_properties

    monkeypatch.setenv("SOME_SECRET", "S3cr3tP4ss")
    settings = load_settings(text='clusters = [{ name = a, kafka { "security.protocol" = SSL, '
                                  f'"{prop}" = ${{SOME_SECRET}} }} }}]')
    with pytest.raises(ConfigError) as info:
        validate_kafka_properties(settings)
    assert "S3cr3tP4ss" not in str(info.value)
    error = __import__("freshness_tracker.config.kafka_properties", fromlist=["_error"])._error(
        0, {"plugin.library.paths": "S3cr3tP4ss"},
        "dlopen() failed: S3cr3tP4ss.so: cannot open shared object file (plugin S3cr3tP4ss)")
    assert "S3cr3tP4ss" not in str(error)


@pytest.mark.parametrize("key", ["filters.groups.deny", "filters.topics.allow"])
def test_a_deeply_nested_filter_regex_is_a_config_error(key: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(text=MINIMAL + f'\n{key} = ["' + "(" * 1000 + "a" + ")" * 1000 + '"]')
    assert info.value.key == f"{key}[0]"


def test_an_error_in_an_included_file_names_it_and_its_line(tmp_path: Path) -> None:
    (tmp_path / "extra.conf").write_text("a = 1\nb = 2\nc = {\n")
    conf = tmp_path / "c.conf"
    conf.write_text(MINIMAL + '\ninclude "extra.conf"\n')
    with pytest.raises(ConfigError) as info:
        load_settings(conf)
    message = str(info.value)
    assert "extra.conf" in message and "at line 4, column 1" in message, message
    assert len(message) < 400, message
