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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from devstack.exporter import ExporterProcess, run_cli
from devstack.processes import free_port, poll
from freshness_tracker.cli import main
from tests.faults.harness import Record

BASE = """burrow.url = "http://127.0.0.1:1"
burrow { timeout = 1s, retries = 0 }
clusters = [{ name = local, kafka { "bootstrap.servers" = "127.0.0.1:1" } }]
listenAddress = "127.0.0.1"
port = @PORT@
"""

#: How long a `python -m freshness_tracker` process of this module may take. Each case needs well
#: under 1 s of CPU, but on a loaded 2-core machine a process started beside three others and
#: this process's in-process cases can take many times that. The limit only has to catch a `run`
#: that did not refuse its config and serves forever.
PROCESS_TIMEOUT_S = 120


@dataclass(frozen=True)
class Case:
    name: str
    key: str  # the line must start with "config error: <key>"
    text: str = ""  # appended to BASE, or the whole file when `whole`
    whole: bool = False
    raw: bytes | None = None  # file bytes as is
    env: tuple[tuple[str, str], ...] = ()
    missing_file: bool = False
    directory: bool = False  # --config names a directory
    process: bool = False  # run as a real process (else cli.main in-process: same code, faster)
    secret: str = ""  # must appear nowhere in the output


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
    # files and includes
    Case("config is a directory", "--config", directory=True),
    Case("include required file missing", "@FILE@",
         'include required(file("/nonexistent/extra.conf"))'),
    Case("file includes itself", "@FILE@", 'include required(file("@SELF@"))'),
    Case("burrow.url malformed with credentials", "burrow.url",
         'burrow.url = "ftp://user:Hash#Zq9Xv@burrow:8000"', secret="Zq9Xv"),
    Case("burrow.url port is a password fragment", "burrow.url",
         "burrow.url = http://user:Hash#Zq9Xv@burrow:8000", secret="Hash"),
    Case("burrow.password without username", "burrow.password",
         "burrow.password = ${?BURROW_PW}", env=(("BURROW_PW", "Zq9Xv"),), secret="Zq9Xv"),
    Case("listener password without username", "web.basicAuthUsername",
         'web.basicAuthPassword = "Zq9Xv"', secret="Zq9Xv"),
    Case("listener username without password", "web.basicAuthPassword",
         'web.basicAuthUsername = "prometheus"'),
    Case("frequency_sec in months", "frequency_sec", "frequency_sec = 1 month"),
    Case("frequency_sec below 1s", "frequency_sec", "frequency_sec = 1e-9"),
    Case("frequency_sec below 1s from the environment", "frequency_sec",
         "", env=(("FRESHNESS_TRACKER_FREQUENCY_SEC", "0.001"),), process=True),
    Case("burrow.timeout below 100ms", "burrow.timeout", "burrow.timeout = 1ms"),
    Case("lookup.fetchWaitMax not below lookup.timeout", "lookup.fetchWaitMax",
         "lookup { timeout = 1s, fetchWaitMax = 2s }"),
    Case("cluster name read as a duration", "clusters[0].name", "clusters = [{ name = 10s }]"),
    Case("librdkafka property unknown", 'clusters[0].kafka."bootstrap.server"',
         'clusters = [{ name = local, kafka { "bootstrap.server" = "127.0.0.1:1" } }]',
         process=True),
    Case("librdkafka value invalid", 'clusters[0].kafka."security.protocol"',
         'clusters = [{ name = local, kafka { "security.protocol" = garbage } }]', process=True),
    Case("librdkafka SASL without password", 'clusters[0].kafka."sasl.password"',
         'clusters = [{ name = local, kafka { "security.protocol" = SASL_SSL, '
         '"sasl.mechanism" = PLAIN, "sasl.username" = u } }]', process=True),
    Case("history.path is a file", "history.path", 'history.path = "@SELF@"'),
    Case("burrow.caFile holds no certificate", "burrow.caFile", 'burrow.caFile = "@SELF@"'),
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
    elif case.directory:
        path.mkdir()
    elif not case.missing_file:
        text = case.text if case.whole else BASE + case.text + "\n"
        path.write_text(text.replace("@PORT@", str(free_port())).replace("@BUSY@", str(busy_port))
                        .replace("@SELF@", str(path)))
    return path


def run_process(case: Case, path: Path) -> Outcome:
    try:
        proc = run_cli("run", "--config", str(path), timeout_s=PROCESS_TIMEOUT_S,
                       env=dict(case.env))
    except subprocess.TimeoutExpired as exc:
        return Outcome(case, None, f"still running after {PROCESS_TIMEOUT_S} s\n"
                       + _text(exc.stderr), _text(exc.stdout))
    return Outcome(case, proc.returncode, proc.stderr, proc.stdout)


def _text(output: bytes | str | None) -> str:
    """TimeoutExpired's captured output: bytes even with text=True (CPython), or None."""
    return output.decode(errors="replace") if isinstance(output, bytes) else output or ""


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
    assert not case.secret or case.secret not in out.stderr, out.stderr


def test_every_broken_config_exits_2_with_one_line(outcomes: dict[str, Outcome],
                                                   record: Record) -> None:
    """The matrix row's claim, checked: every case exits 2 with one line and no traceback, and
    each quoted example is that case's own `config error: <key>:` line. The row is logged
    first so that a failure marks it failed instead of dropping it."""
    good = [o for o in outcomes.values() if o.code == 2 and len(o.stderr.strip().splitlines()) == 1
            and "Traceback" not in o.stderr]
    quoted = {n: outcomes[n] for n in (
        "numConsumers negative", "burrow.caFile does not exist", "port already in use",
        "librdkafka property unknown", "listener password without username")}
    examples = [o.stderr.strip() for o in quoted.values()]
    record(
        "Config", "malformed or missing keys",
        f"{len(CASES)} broken configs through `run --config` (syntax, encoding, substitution, "
        "includes, types, ranges, regexes, missing files, unbindable listener, env overrides, "
        "librdkafka properties, half-configured auth, malformed URLs with credentials)",
        f"{len(good)}/{len(CASES)} exit 2 with one line naming the key and no traceback, e.g. "
        + "; ".join(f"`{e}`" for e in examples),
        "n/a", "")
    assert len(outcomes) == len(CASES) > 0
    bad = sorted(set(outcomes) - {o.case.name for o in good})
    assert not bad, "\n".join(f"{n}: exit {outcomes[n].code}\n{outcomes[n].stderr[-600:]}"
                               for n in bad)
    for name, out in quoted.items():
        assert out.stderr.strip().startswith(f"config error: {out.case.key}:"), (name, out.stderr)


def test_unknown_keys_warn_and_the_exporter_runs(tmp_path: Path, record: Record) -> None:
    path = tmp_path / "typo.conf"
    path.write_text(BASE.replace("@PORT@", str(free_port())) +
                    'burow.url = "http://typo:1"\nfrequncy_sec = 5\n'
                    "clusters = [{ name = local, numConsumer = 3 }]\n")
    proc = run_cli("once", "--config", str(path), timeout_s=PROCESS_TIMEOUT_S)
    warnings = [ln for ln in proc.stderr.splitlines() if "unknown key" in ln]
    assert proc.returncode == 1, proc.stderr  # it ran a cycle (Burrow is unreachable here)
    assert any("burow: unknown key, ignored; did you mean 'burrow'?" in w for w in warnings)
    assert any("frequncy_sec: unknown key" in w and "frequency_sec" in w for w in warnings)
    assert any("clusters[0].numConsumer: unknown key" in w and "numConsumers" in w
               for w in warnings)
    assert all("level=warning" in w for w in warnings)
    record(
        "Config", "unknown keys",
        "typos `burow.url`, `frequncy_sec`, `clusters[0].numConsumer`",
        "one warning each naming the key and the nearest known key (e.g. "
        "`config burow: unknown key, ignored; did you mean 'burrow'?`); the exporter runs",
        "n/a", "")


def test_burrow_url_credentials_stay_out_of_every_output(tmp_path: Path, record: Record) -> None:
    """A password with `#`, `/`, `?`, `@` and `:` in burrow.url, Burrow unreachable so every
    output names its URL: `run` logging at DEBUG with /healthz, `once --format json`, `check`."""
    secret = "a#b/c?d@e:Zq9Xv"
    text = BASE.replace('burrow.url = "http://127.0.0.1:1"',
                        f'burrow.url = "http://tracker:{secret}@127.0.0.1:1"')
    run = ExporterProcess(tmp_path, text + "logging.level = DEBUG\nfrequency_sec = 1\n",
                          name="creds").start(wait=False)
    try:
        def cycled() -> str:
            with contextlib.suppress(OSError):
                status, body = run.get("/healthz", timeout_s=2)
                return body if status == 200 and "cannot reach Burrow" in body else ""
            return ""

        healthz = poll(cycled, PROCESS_TIMEOUT_S, "a failed cycle in /healthz")
    finally:
        run.stop(timeout_s=20)
    path = str(run.config_path)
    once = run_cli("once", "--format", "json", "--config", path, timeout_s=PROCESS_TIMEOUT_S)
    check = run_cli("check", "--config", path, timeout_s=PROCESS_TIMEOUT_S)
    outputs = {"run log": run.log(), "/healthz": healthz,
               "once --format json": once.stdout + once.stderr,
               "check": check.stdout + check.stderr}
    assert "level=debug" in run.log()  # DEBUG really was on
    for name, text in outputs.items():
        assert "http://127.0.0.1:1" in text, (name, text[-2000:])  # the URL, without credentials
        assert "Zq9Xv" not in text and "tracker:" not in text, (name, text[-2000:])
    assert (once.returncode, check.returncode) == (1, 1)
    record(
        "Config", "credentials in burrow.url",
        f"`burrow.url = \"http://tracker:{secret}@127.0.0.1:1\"` (Burrow unreachable), "
        "`run` at DEBUG, `once --format json`, `check`",
        "sent as basic auth; every output names `http://127.0.0.1:1` and none holds the "
        f"password ({', '.join(outputs)})",
        "n/a", "")
