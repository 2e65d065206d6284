"""The comparison's newer peers without running them (benchmarks/compare): kminion's and the
Consumer Freshness Tracker's expositions, every peer's generated config (loopback, the run's
groups, the poll interval), the reasons a peer is not run, and Burrow's refresh for the cost
run's two Burrow phases."""

from __future__ import annotations

import json
import os
import tomllib
from functools import partial
from pathlib import Path

import pytest
import yaml

from benchmarks.compare import peers
from benchmarks.compare.cost import BURROW_DEFAULT_REFRESH, with_refresh
from benchmarks.compare.exposition import parse_exposition
from devstack.burrow import burrow121_config, burrow_config

# data/: kminion 2.3.5 and the CFT (see each file's header)
DATA = Path(__file__).resolve().parent / "data"
KMINION = (DATA / "kminion.prom").read_text()
CFT = (DATA / "cft.prom").read_text()


def test_kminion_has_per_partition_offsets_under_its_own_label_names() -> None:
    expo = parse_exposition(KMINION, "kminion")
    assert expo.offset_lag == {("smk-g0", "smk-t00", 0): 2.0, ("smk-g0", "smk-t00", 1): 1.0}
    assert expo.time_lag_s == {}
    assert expo.round_seconds is None and expo.round_stamp is None and expo.rounds is None


def test_cft_freshness_is_milliseconds_of_one_cluster_and_its_rounds_a_summary() -> None:
    expo = parse_exposition(CFT, "cft", cluster="local")
    assert expo.time_lag_s == {
        ("smk-g1", "smk-t01", 8): 3685.885,
        ("smk-g1", "smk-t01", 7): 3686.152,
        ("adhoc.kafka_consumer_freshness", "smk-t01", 9): 0.0,  # its own consumers' group
    }
    assert expo.offset_lag == {}
    assert expo.rounds == 1 and expo.rounds_seconds == pytest.approx(8.953285591)
    assert expo.round_seconds == pytest.approx(8.953285591)  # the mean round so far
    assert expo.round_stamp == pytest.approx(1795805486.896)  # the last successful round
    assert parse_exposition(CFT, "cft").time_lag_s[("smk-g1", "smk-t01", 8)] == 5.0  # last seen


def test_kminion_config_is_loopback_with_the_runs_groups_and_lag_alone() -> None:
    conf = yaml.safe_load(peers.kminion_config("h1:9092,h2:9092", 9999, "^acc-", "^acc-"))
    assert conf["exporter"] == {"namespace": "kminion", "host": "127.0.0.1", "port": 9999}
    assert conf["kafka"]["brokers"] == ["h1:9092", "h2:9092"]
    groups = conf["minion"]["consumerGroups"]
    assert groups["allowedGroups"] == ["/^acc-/"]  # kminion anchors a regex not in /.../
    assert (groups["enabled"], groups["granularity"]) == (True, "partition")
    assert conf["minion"]["topics"]["allowedTopics"] == ["/^acc-/"]
    assert not conf["minion"]["topics"]["enabled"]
    assert not conf["minion"]["logDirs"]["enabled"]
    assert not conf["minion"]["endToEnd"]["enabled"]


def test_cft_config_names_burrow_the_cluster_and_an_integer_frequency() -> None:
    conf = yaml.safe_load(peers.cft_config("http://127.0.0.1:8000", "h1:9092", "local", 9998, 2.4))
    assert conf["burrow"] == {"url": "http://127.0.0.1:8000"}
    assert conf["clusters"] == [{"name": "local", "kafka": {"bootstrap.servers": "h1:9092"}}]
    assert (conf["host"], conf["port"]) == ("127.0.0.1", 9998)
    assert conf["frequency_sec"] == 2 and isinstance(conf["frequency_sec"], int)  # it casts
    assert yaml.safe_load(peers.cft_config("u", "b", "c", 1, 0.2))["frequency_sec"] == 1
    assert "workerThreadCount" not in conf and "numConsumers" not in conf  # its defaults


@pytest.fixture
def peers_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty $PEERS, nothing pointed at by the per-binary variables."""
    for env in ("FT_KLAG_BIN", "FT_KAFKA_EXPORTER_BIN", "FT_KMINION_BIN", "FT_CFT_RUN"):
        monkeypatch.delenv(env, raising=False)
    monkeypatch.setattr(peers, "PEERS_DIR", tmp_path)
    return tmp_path


def _binary(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


def test_a_missing_peer_says_where_it_was_looked_for_or_why_it_was_not_built(
    peers_dir: Path,
) -> None:
    assert peers.missing_reason("ours") is None
    reason = peers.missing_reason("kminion")
    assert reason is not None and str(peers_dir / "kminion" / "bin" / "kminion") in reason
    (peers_dir / "cft").mkdir()
    (peers_dir / "cft" / "REFUSED").write_text("javac: package tesla.shade does not exist\n")
    assert peers.missing_reason("cft") == (
        "the Consumer Freshness Tracker's run wrapper was not built: "
        "javac: package tesla.shade does not exist"
    )
    _binary(peers_dir / "kminion" / "bin" / "kminion")
    assert peers.missing_reason("kminion") is None
    (peers_dir / "klag" / "bin").mkdir(parents=True)
    (peers_dir / "klag" / "bin" / "klag-exporter").write_text("not executable")
    assert peers.missing_reason("klag_message_30s") is not None
    assert peers.missing_reason("nonesuch") is not None


def test_versions_come_from_each_builds_version_file(peers_dir: Path) -> None:
    assert peers.peer_version("klag") == "unknown"
    (peers_dir / "klag").mkdir()
    (peers_dir / "klag" / "VERSION").write_text("klag 0.1.29 crates.io rustc-1.90\n")
    assert peers.peer_version("klag") == "0.1.29"
    _binary(peers_dir / "klag" / "bin" / "klag-exporter")
    tool = peers.make_tool(
        "klag_rate_30s",
        burrow_url="http://127.0.0.1:1",
        bootstrap="h:1",
        cluster="local",
        workdir=peers_dir / "work",
        poll_s=2.0,
        group_regex="^acc-",
        topic_regex="^acc-",
    )
    assert tool.spec.version == "0.1.29"
    assert tool.version == "klag 0.1.29 crates.io rustc-1.90"


def _make(key: str, workdir: Path) -> peers.Tool:
    return peers.make_tool(
        key,
        burrow_url="http://127.0.0.1:8000",
        bootstrap="h1:9092,h2:9092",
        cluster="local",
        workdir=workdir,
        poll_s=2.0,
        group_regex="^acc-",
        topic_regex="^acc-t",
    )


def test_klag_at_its_default_polls_every_30_s_beside_the_runs_interval(peers_dir: Path) -> None:
    _binary(peers_dir / "klag" / "bin" / "klag-exporter")
    for key, poll, mode in (
        ("klag_message", "2s", "message"),
        ("klag_message_30s", "30s", "message"),
        ("klag_rate_30s", "30s", "rate"),
    ):
        tool = _make(key, peers_dir / key)
        assert tool.cmd is not None and tool.cmd[1] == "--config"
        conf = tomllib.loads(Path(tool.cmd[2]).read_text())
        assert conf["exporter"]["poll_interval"] == poll
        assert conf["exporter"]["timestamp_sampling"]["mode"] == mode
        assert conf["exporter"]["http_host"] == "127.0.0.1"
        assert tool.poll_s == float(poll.removesuffix("s"))


def test_kminion_reads_its_file_and_no_other_environment(peers_dir: Path) -> None:
    binary = _binary(peers_dir / "kminion" / "bin" / "kminion")
    tool = _make("kminion", peers_dir / "w")
    assert tool.cmd == [str(binary)]
    assert tool._env is not None and set(tool._env) == {"CONFIG_FILEPATH", "PATH"}
    conf = json.loads(Path(tool._env["CONFIG_FILEPATH"]).read_text())
    assert conf["exporter"]["port"] == tool.port and conf["exporter"]["host"] == "127.0.0.1"
    assert conf["minion"]["consumerGroups"]["allowedGroups"] == ["/^acc-/"]
    assert tool.spec.scrape_every_poll and tool.poll_s == 2.0


def test_cft_runs_its_wrapper_with_a_config_naming_burrow(peers_dir: Path) -> None:
    run = _binary(peers_dir / "cft" / "run")
    tool = _make("cft", peers_dir / "w")
    assert tool.cmd is not None and tool.cmd[:2] == [str(run), "--conf"]
    conf = yaml.safe_load(Path(tool.cmd[2]).read_text())
    assert conf["port"] == tool.port and conf["burrow"]["url"] == "http://127.0.0.1:8000"
    assert conf["clusters"][0]["kafka"]["bootstrap.servers"] == "h1:9092,h2:9092"


def test_a_tool_that_is_not_built_is_not_made(peers_dir: Path) -> None:
    with pytest.raises(FileNotFoundError, match="kminion binary not found"):
        _make("kminion", peers_dir / "w")


def test_process_tree_figures_include_this_process() -> None:
    assert peers.tree_cpu_s(os.getpid()) >= peers.proc_cpu_s(os.getpid()) > 0
    assert peers.tree_peak_rss_mib(os.getpid()) >= peers.proc_peak_rss_mib(os.getpid()) > 1


@pytest.mark.parametrize("render", ["1.2.1", "1.9.5"])
def test_burrow_at_its_default_refresh(render: str, tmp_path: Path) -> None:
    common = {"cluster": "local", "servers": ["h:1"], "http_port": 1, "pidfile": tmp_path / "p"}
    toml = (
        burrow121_config(zookeeper="z:1", **common)  # type: ignore[arg-type]
        if render == "1.2.1"
        else burrow_config(**common)  # type: ignore[arg-type]
    )
    assert "offset-refresh = 1\n" in toml
    changed = with_refresh(toml, BURROW_DEFAULT_REFRESH)
    assert "offset-refresh = 10\n" in changed and "topic-refresh = 60\n" in changed
    assert "offset-refresh = 1\n" not in changed and "topic-refresh = 1\n" not in changed
    with pytest.raises(ValueError, match="no poll-refresh"):
        with_refresh(toml, {"poll-refresh": 5})


def test_stop_ends_what_a_wrapper_script_started(tmp_path: Path) -> None:
    """A peer run through a script that does not ``exec`` (the CFT's wrapper may not): the
    server it started is counted with it and stopped with it."""
    import sys

    from devstack.processes import free_port

    port = free_port()
    wrapper = _binary(tmp_path / "run")
    wrapper.write_text(
        f"#!/bin/sh\n{sys.executable} -m http.server --bind 127.0.0.1 {port}\necho done\n"
    )
    spec = peers.ToolSpec("wrapped", "a wrapped server", "kminion", "0", collects_on_scrape=True)
    tool = peers.Tool(spec, [str(wrapper)], tmp_path, port)
    with tool:
        tool.start(timeout_s=30)
        family = peers._tree(tool.pid)
        assert len(family) == 2  # the shell and the server it waits for
        assert tool.cpu_s() >= peers.proc_cpu_s(family[1])
    from devstack.processes import wait_until

    for pid in family:  # SIGKILL is sent; the kernel may take a moment to end it
        wait_until(partial(_ended, pid), 10.0, f"{pid} to end")


def _ended(pid: int) -> bool:
    return _state(pid) in ("gone", "Z")


def _state(pid: int) -> str:
    """A process's state letter, "gone" once reaped (an orphan's zombie waits for init)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return "gone"
