"""Every malformed or missing key: one clear line naming the key, exit code 2, no traceback.
Unknown keys: a warning naming the key (and the nearest known one), and the exporter runs.

``run`` is used because it is the command that also binds the listener. Cases that touch the
process (listener, environment, file encoding) run as a real ``python3 -m freshness_tracker run
--config F``; the rest call the same ``cli.main`` in-process, which is much faster.
"""

from __future__ import annotations

import contextlib
import io
import os
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from freshness_tracker.cli import main
from tests.faults.harness import REPO, Matrix, Observation, free_port

BASE = """burrow.url = "http://127.0.0.1:1"
burrow { timeout = 1s, retries = 0 }
clusters = [{ name = local, kafka { "bootstrap.servers" = "127.0.0.1:1" } }]
listenAddress = "127.0.0.1"
port = @PORT@
"""


@dataclass(frozen=True)
class Case:
    name: str
    key: str  # the line must start with "config error: <key>"
    text: str = ""  # appended to BASE, or the whole file when `whole`
    whole: bool = False
    raw: bytes | None = None  # file bytes as is
    env: tuple[tuple[str, str], ...] = ()
    missing_file: bool = False
    process: bool = False  # run as a real process (else cli.main in-process: same code, faster)


CASES = [
    Case("config file missing", "--config", missing_file=True),
    Case("HOCON syntax error", "@FILE@", "clusters = [{ name = local ", whole=True),
    Case("file is not UTF-8", "@FILE@",
         raw=b'burrow.url = "http://x:1"\nclusters = [{name = "\xff\xfe"}]\n', process=True),
    Case("unresolved substitution", "@FILE@", "burrow.url = ${NOT_SET_ANYWHERE}"),
    Case("no clusters", "clusters", 'burrow.url = "http://127.0.0.1:1"\n', whole=True),
    Case("clusters not a list", "clusters", 'clusters = "local"'),
    Case("cluster without name", "clusters[0].name", "clusters = [{ numConsumers = 1 }]"),
    Case("cluster twice", "clusters[1].name", "clusters = [{ name = a }, { name = a }]"),
    Case("numConsumers negative", "clusters[0].numConsumers",
         "clusters = [{ name = a, numConsumers = -1 }]"),
    Case("numConsumers not a number", "clusters[0].numConsumers",
         'clusters = [{ name = a, numConsumers = "two" }]'),
    Case("kafka not an object", "clusters[0].kafka", "clusters = [{ name = a, kafka = 5 }]"),
    Case("burrow.url empty", "burrow.url", 'burrow.url = ""'),
    Case("burrow.url not http", "burrow.url", 'burrow.url = "ftp://burrow:8000"'),
    Case("burrow not an object", "burrow.url", "burrow = 5"),
    Case("burrow.timeout not a duration", "burrow.timeout", 'burrow.timeout = "soon"'),
    Case("burrow.retries out of range", "burrow.retries", "burrow.retries = 99"),
    Case("burrow.tlsVerify not a boolean", "burrow.tlsVerify", 'burrow.tlsVerify = "maybe"'),
    Case("burrow.caFile does not exist", "burrow.caFile", 'burrow.caFile = "/nonexistent/ca.pem"',
         process=True),
    Case("port not a number", "port", 'port = "abc"'),
    Case("port out of range", "port", "port = 70000"),
    Case("port from the environment malformed", "port", "port = ${?FRESHNESS_TRACKER_PORT}",
         env=(("FRESHNESS_TRACKER_PORT", "eighty"),), process=True),
    Case("frequency_sec zero", "frequency_sec", "frequency_sec = 0"),
    Case("frequency_sec infinite", "frequency_sec", "frequency_sec = 1e400"),
    Case("lookup.timeout absurdly large", "lookup.timeout", "lookup.timeout = 1e300"),
    Case("granularity unknown", "granularity", "granularity = cluster"),
    Case("regex invalid", "filters.groups.allow[0]", 'filters.groups.allow = ["("]'),
    Case("TLS cert without key", "web.tlsCertFile", 'web.tlsCertFile = "/tmp/c.pem"'),
    Case("TLS cert file missing", "web.tlsCertFile",
         'web { tlsCertFile = "/nonexistent/c.pem", tlsKeyFile = "/nonexistent/k.pem" }'),
    Case("shard.index not below count", "shard.index", "shard { index = 2, count = 2 }"),
    Case("logging.level unknown", "logging.level", "logging.level = verbose"),
    Case("lookup.batchSize zero", "lookup.batchSize", "lookup.batchSize = 0"),
    Case("workerThreadCount zero", "workerThreadCount", "workerThreadCount = 0"),
    Case("listenAddress cannot be bound", "listenAddress", 'listenAddress = "999.1.1.1"',
         process=True),
    Case("port already in use", "port", "port = @BUSY@", process=True),
]


@dataclass
class Outcome:
    case: Case
    code: int | None
    stderr: str
    stdout: str


def write_case(case: Case, workdir: Path, busy_port: int) -> Path:
    path = workdir / f"{abs(hash(case.name))}.conf"
    if case.raw is not None:
        path.write_bytes(case.raw)
    elif not case.missing_file:
        text = case.text if case.whole else BASE + case.text + "\n"
        path.write_text(text.replace("@PORT@", str(free_port())).replace("@BUSY@",
                                                                          str(busy_port)))
    return path


def run_process(case: Case, path: Path) -> Outcome:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("FRESHNESS_TRACKER_", "BURROW_"))}
    env.update(dict(case.env))
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "freshness_tracker", "run", "--config", str(path)],
            capture_output=True, text=True, timeout=20, cwd=REPO, env=env)
    except subprocess.TimeoutExpired as exc:
        return Outcome(case, None, str(exc.stderr or ""), str(exc.stdout or ""))
    return Outcome(case, proc.returncode, proc.stderr, proc.stdout)


def run_in_process(case: Case, path: Path) -> Outcome:
    out, err = io.StringIO(), io.StringIO()
    saved = {k: os.environ.get(k) for k, _ in case.env}
    os.environ.update(dict(case.env))
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["run", "--config", str(path)])
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return Outcome(case, code, err.getvalue(), out.getvalue())


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Outcome]:
    workdir = tmp_path_factory.mktemp("config-faults")
    results: list[Outcome] = []
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        paths = {c.name: write_case(c, workdir, port) for c in CASES}
        with ThreadPoolExecutor(4) as pool:
            spawned = [pool.submit(run_process, c, paths[c.name]) for c in CASES if c.process]
            results += [run_in_process(c, paths[c.name]) for c in CASES if not c.process]
            results += [f.result() for f in spawned]
    return {r.case.name: r for r in results}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_malformed_or_missing_key_is_one_line_and_exit_2(case: Case,
                                                         outcomes: dict[str, Outcome]) -> None:
    out = outcomes[case.name]
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert out.code == 2, f"exit {out.code}\n{out.stderr[-3000:]}"
    assert "Traceback" not in out.stderr
    assert len(lines) == 1, out.stderr
    line = lines[0]
    key = case.key
    if key == "@FILE@":
        assert line.startswith("config error: /") and ".conf" in line.split(":")[1], line
    else:
        assert line.startswith(f"config error: {key}:"), line
    assert out.stdout == ""


def test_matrix_row_for_config(outcomes: dict[str, Outcome], matrix: Matrix,
                               request: pytest.FixtureRequest) -> None:
    good = [o for o in outcomes.values() if o.code == 2 and len(o.stderr.strip().splitlines()) == 1]
    examples = [outcomes[n].stderr.strip() for n in (
        "numConsumers negative", "burrow.caFile does not exist", "port already in use")]
    matrix.record(Observation(
        "Config", "malformed or missing keys",
        f"{len(CASES)} broken configs through `run --config` (syntax, encoding, substitution, "
        "types, ranges, regexes, missing files, unbindable listener, env overrides)",
        f"{len(good)}/{len(CASES)} exit 2 with one line naming the key and no traceback, e.g. "
        + "; ".join(f"`{e}`" for e in examples),
        "n/a", "", request.node.nodeid))


def test_unknown_keys_warn_and_the_exporter_runs(tmp_path: Path, matrix: Matrix,
                                                 request: pytest.FixtureRequest) -> None:
    path = tmp_path / "typo.conf"
    path.write_text(BASE.replace("@PORT@", str(free_port())) +
                    'burow.url = "http://typo:1"\nfrequncy_sec = 5\n'
                    "clusters = [{ name = local, numConsumer = 3 }]\n")
    proc = subprocess.run(
        [sys.executable, "-m", "freshness_tracker", "once", "--config", str(path)],
        capture_output=True, text=True, timeout=30, cwd=REPO)
    warnings = [ln for ln in proc.stderr.splitlines() if "unknown key" in ln]
    assert proc.returncode == 1, proc.stderr  # it ran a cycle (Burrow is unreachable here)
    assert any("burow: unknown key, ignored; did you mean 'burrow'?" in w for w in warnings)
    assert any("frequncy_sec: unknown key" in w and "frequency_sec" in w for w in warnings)
    assert any("clusters[0].numConsumer: unknown key" in w and "numConsumers" in w
               for w in warnings)
    assert all("level=warning" in w for w in warnings)
    matrix.record(Observation(
        "Config", "unknown keys",
        "typos `burow.url`, `frequncy_sec`, `clusters[0].numConsumer`",
        "one warning each naming the key and the nearest known key (e.g. "
        "`config burow: unknown key, ignored; did you mean 'burrow'?`); the exporter runs",
        "n/a", "", request.node.nodeid))
