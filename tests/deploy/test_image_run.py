"""The image and the chart, run for real: the Dockerfile as it is, built with podman on a Python
base made from Debian's archive, runs read-only as uid 10001 against the session's real stack
(Kafka + Burrow) and answers /healthz, /readyz and /metrics with the freshness of what was
produced; SIGTERM stops it well inside the chart's grace period. The chart's rendered manifests
run under `podman kube play` (no cluster): against the stack's Burrow, and with a Burrow sidecar
made from Debian's `burrow` package; the pod's /metrics shows real freshness, the probes' paths
answer, and the ConfigMap the chart renders is the file the exporter reads.

The chart's pods are marked `containers` (tests/deploy/conftest.py): a suite of its own that CI
leaves out, run with `-m containers`; CI runs the image test. With FT_RECORD_DIR set, the run
writes its record (versions, machine, each step's time, each test's outcome) for docs/deploy.md:
`scripts/render_docs.py` renders the page's figures from it."""

from __future__ import annotations

import contextlib
import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from devstack import RealStack
from devstack.exporter_config import stack_config
from devstack.processes import poll
from devstack.scrape import Scrape
from freshness_tracker import metrics
from freshness_tracker.cycle import now_ms
from tests.deploy.chart import config_data, container, pod_spec, render
from tests.deploy.containers import Podman, base_tarball, wait_exited
from tests.deploy.tools import ROOT, free_port
from tests.support.record import Recorder, recorder
from tests.support.seeding import Seeded, seed_lagging
from tests.support.stack import require_managed

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]

IMAGE = "localhost/freshness-tracker:test"
BURROW_IMAGE = "localhost/freshness-tracker-burrow:test"
CONFIG_PATH = "/etc/freshness-tracker/freshness-tracker.conf"
#: Debian's Burrow on the same base, where the chart runs it (the upstream image's /app/burrow).
BURROW_CONTAINERFILE = """\
ARG BASE
FROM ${BASE}
RUN apt-get update -qq \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends burrow \\
 && rm -rf /var/lib/apt/lists/* \\
 && mkdir -p /app && ln -s /usr/bin/Burrow /app/burrow
USER 10001:10001
"""


@pytest.fixture(scope="module", autouse=True)
def run_record(request: pytest.FixtureRequest) -> Recorder:
    """The run's record, docs/records/deploy/containers.json when
    FT_RECORD_DIR=docs/records/deploy."""
    return recorder(request, "containers")


@pytest.fixture(scope="module")
def engine() -> Podman:
    return Podman()


@pytest.fixture(scope="module")
def base(engine: Podman, run_record: Recorder) -> str:
    """The Python base image: debootstrapped when its tarball is not cached (cold), imported
    when podman does not have it yet."""
    note = ("cold: debootstrap and import" if not base_tarball().exists()
            else "cached" if engine.image_exists(engine.base_name())
            else "import of the cached tarball")
    with run_record.step("base", note):
        name = engine.base_image()
    if run_record.active:
        for key, value in engine.versions(name).items():
            run_record.fact(key, value)
    return name


@pytest.fixture(scope="module")
def image(engine: Podman, base: str, run_record: Recorder) -> str:
    """The Dockerfile as it is, its base given through PYTHON_IMAGE."""
    with run_record.step("image build"):
        return engine.build(IMAGE, ROOT, build_args={"PYTHON_IMAGE": base})


def http_get(url: str, timeout_s: float = 5) -> tuple[int, str]:
    """(status, body); status 0 when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()
    except OSError:
        return 0, ""


def grace_period_s() -> int:
    """The chart's terminationGracePeriodSeconds (its default values)."""
    seconds: int = pod_spec(render({}))["terminationGracePeriodSeconds"]
    return seconds


def assert_real_freshness(base: str, seeded: Seeded, started_ms: int) -> Scrape:
    """A cycle since `started_ms` measured the lagging group: freshness is the age of its next
    unconsumed record (> 0, bounded by the cycle's time), commit lag exact; the scrape."""
    def measured() -> Scrape | None:
        scrape = Scrape.parse(http_get(f"{base}/metrics")[1])
        fresh = scrape.get(metrics.FRESHNESS.name, **seeded.labels())
        return scrape if fresh is not None and fresh >= started_ms - seeded.record_ts else None

    scrape: Scrape = poll(measured, 90, f"{base}/metrics to show the group's freshness",
                          interval_s=0.3)
    scraped = now_ms()
    fresh = scrape.get(metrics.FRESHNESS.name, **seeded.labels())
    assert fresh is not None and 0 < started_ms - seeded.record_ts <= fresh
    assert fresh <= scraped - seeded.record_ts
    assert scrape.get(metrics.COMMIT_LAG.name, **seeded.labels()) == \
        seeded.commit.commit_lag_ms
    assert scrape.get(metrics.CLUSTER_UP.name, cluster=seeded.stack.cluster) == 1.0
    return scrape


# --- the image -----------------------------------------------------------------------------


@pytest.fixture
def container_name(engine: Podman) -> Iterator[str]:
    name = f"ft-image-test-{os.getpid()}-{time.monotonic_ns() % 1_000_000}"
    yield name
    engine.run("rm", "-f", "-t", "0", name, check=False)
    assert not engine.running(name), f"{name} still running"


def test_image_runs_read_only_as_uid_10001_against_the_stack(
    engine: Podman, image: str, stack: RealStack, tmp_path: Path, container_name: str
) -> None:
    require_managed(stack, "reads the stack's ground truth")
    seeded = seed_lagging(stack, f"img-{os.getpid()}-{now_ms() % 1_000_000}", now_ms())
    port = free_port()
    config = tmp_path / "freshness-tracker.conf"
    config.write_text(stack_config(stack, seeded.group, port=port, frequency_sec=1))
    config.chmod(0o644)
    started = now_ms()
    engine.run("run", "-d", "--name", container_name, "--network", "host", "--read-only",
               "-v", f"{config}:{CONFIG_PATH}:ro", image)
    base = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        state = engine.run("inspect", "--format", "{{.State.Status}}", container_name).stdout
        assert state.strip() == "running", engine.run("logs", container_name).stderr
        return http_get(f"{base}/readyz")[0] == 200

    poll(ready, 90, "/readyz to answer 200", interval_s=0.3)
    assert json.loads(http_get(f"{base}/readyz")[1]) == {"status": "ready", "waiting_for": []}
    status, body = http_get(f"{base}/healthz")
    assert status == 200 and json.loads(body)["clusters"][stack.cluster]["up"] is True
    scrape = assert_real_freshness(base, seeded, started)
    assert scrape.get(metrics.OFFSET_LAG.name, **seeded.labels()) == 3

    # the image's own user, numeric, on a root filesystem mounted read-only
    ids = engine.run("exec", container_name, "id").stdout.split()
    assert ids[:2] == ["uid=10001(freshness-tracker)", "gid=10001(freshness-tracker)"], ids
    mounts = engine.run("exec", container_name, "cat", "/proc/self/mounts").stdout
    root = next(line.split() for line in mounts.splitlines() if line.split()[1] == "/")
    assert "ro" in root[3].split(","), root

    grace = grace_period_s()
    began = time.monotonic()
    engine.run("stop", "-t", str(grace), container_name, timeout_s=grace + 30)
    took = time.monotonic() - began
    assert wait_exited(engine, container_name, 10) == "exited"
    code = engine.run("inspect", "--format", "{{.State.ExitCode}}", container_name).stdout
    logs = engine.run("logs", container_name)
    log = logs.stdout + logs.stderr
    assert code.strip() == "0", f"exit {code.strip()} after {took:.1f} s (killed?):\n{log}"
    assert took < grace, f"{took:.1f} s to stop, grace period {grace} s"
    assert "signal=SIGTERM" in log and "Traceback" not in log, log


# --- the chart under podman kube play --------------------------------------------------------


@pytest.fixture(scope="module")
def burrow_image(engine: Podman, base: str, run_record: Recorder,
                 tmp_path_factory: pytest.TempPathFactory) -> str:
    """Debian's `burrow` package on the same base, where the chart's Burrow container runs it."""
    context = tmp_path_factory.mktemp("burrow-image")
    (context / "Containerfile").write_text(BURROW_CONTAINERFILE)
    with run_record.step("Burrow image"):
        engine.build(BURROW_IMAGE, context, containerfile=context / "Containerfile",
                     build_args={"BASE": base})
    if run_record.active:
        run_record.fact("burrow", engine.run(
            "run", "--rm", "--network", "none", BURROW_IMAGE,
            "dpkg-query", "-W", "-f=${Version}", "burrow").stdout.strip())
    return BURROW_IMAGE


#: What `podman kube play` runs of the chart's output; the rest is said in docs/deploy.md.
PLAYABLE = ("ConfigMap", "Deployment")
INIT_TYPE = "io.podman.annotations.init.container.type"


def playable(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chart's ConfigMap and Deployment, the pod on the host's network (no cluster network
    here: the stack listens on loopback). podman 4.3 takes no `ports` with host networking
    ("PortMappings can only be used with Bridge"), so they go; and it removes a finished init
    container while it may still see it running ("failed to remove once init container"), so
    the init container is kept (podman's `always` type: it still runs to completion before the
    pod's containers start). Nothing else is changed."""
    out = [json.loads(json.dumps(d)) for d in docs if d["kind"] in PLAYABLE]
    for doc in out:
        if doc["kind"] == "Deployment":
            # podman 4.3 reads it from the Deployment's own annotations, not the pod template's
            doc["metadata"].setdefault("annotations", {})[INIT_TYPE] = "always"
            spec = doc["spec"]["template"]["spec"]
            spec["hostNetwork"] = True
            for ctr in spec["containers"]:
                ctr.pop("ports", None)
    return out


@dataclass
class Played:
    docs: list[dict[str, Any]]  # as rendered
    base: str  # the tracker's listener
    containers: set[str]  # IDs of the pod's containers

    def container(self, engine: Podman, name: str) -> str:
        """The ID of the pod's container `name` (kube play names it <pod>-<name>)."""
        found = [c for c in self.containers if engine.name(c).endswith(f"-{name}")]
        assert len(found) == 1, (name, found)
        return found[0]

    def probe_paths(self) -> list[str]:
        tracker = container(self.docs, "freshness-tracker")
        return [tracker[p]["httpGet"]["path"] for p in ("livenessProbe", "readinessProbe")]


def _chart_values(stack: RealStack, seeded: Seeded, port: int) -> dict[str, Any]:
    repository, tag = IMAGE.rsplit(":", 1)
    return {
        "image": {"repository": repository, "tag": tag, "pullPolicy": "Never"},
        "clusters": [{"name": stack.cluster, "bootstrapServers": stack.bootstrap_servers,
                      "numConsumers": 1}],
        "config": {"port": port, "frequencySec": 1,
                   "filters": {"groups": {"allow": [seeded.group], "deny": []}}},
    }


@contextlib.contextmanager
def played(engine: Podman, values: dict[str, Any], workdir: Path) -> Iterator[Played]:
    """The chart rendered with `values`, its pod run by `podman kube play`; `kube down` after,
    also on failure, and no container of it left running."""
    docs = render(values)
    manifest = workdir / "manifest.yaml"
    manifest.write_text(yaml.safe_dump_all(playable(docs)))
    port = container(docs, "freshness-tracker")["ports"][0]["containerPort"]
    with engine.kube(manifest) as containers:
        yield Played(docs, f"http://127.0.0.1:{port}", containers)


def _pod_log(engine: Podman, run: Played) -> str:
    out = []
    for ctr in sorted(run.containers):
        logs = engine.run("logs", "--tail", "30", ctr, check=False)
        out.append(f"--- {engine.name(ctr)}\n{logs.stdout}{logs.stderr}")
    return "\n".join(out)


def _assert_pod_measures(engine: Podman, run: Played, seeded: Seeded, started: int) -> None:
    """Probes' paths answer, /metrics shows the group's real freshness, and the file the
    exporter reads is the ConfigMap the chart rendered."""
    def ready() -> bool:
        return http_get(f"{run.base}/readyz")[0] == 200

    try:
        poll(ready, 120, "the pod's /readyz to answer 200", interval_s=0.5)
    except TimeoutError as exc:
        raise AssertionError(f"{exc}\n{_pod_log(engine, run)}") from None
    for path in run.probe_paths():
        assert http_get(run.base + path)[0] == 200, path
    assert_real_freshness(run.base, seeded, started)
    tracker = run.container(engine, "freshness-tracker")
    read = engine.run("exec", tracker, "cat", CONFIG_PATH).stdout
    assert read == config_data(run.docs)["freshness-tracker.conf"]
    assert engine.run("exec", tracker, "id", "-u").stdout.strip() == "10001"


@pytest.mark.containers
def test_chart_pod_with_the_stacks_burrow(
    engine: Podman, image: str, stack: RealStack, tmp_path: Path
) -> None:
    require_managed(stack, "reads the stack's ground truth")
    seeded = seed_lagging(stack, f"kube-ext-{os.getpid()}-{now_ms() % 1_000_000}", now_ms())
    values = _chart_values(stack, seeded, free_port())
    values["burrow"] = {"enabled": False, "url": stack.burrow_url}
    started = now_ms()
    with played(engine, values, tmp_path) as run:
        _assert_pod_measures(engine, run, seeded, started)


@pytest.mark.containers
def test_chart_pod_with_a_burrow_sidecar(
    engine: Podman, image: str, burrow_image: str, stack: RealStack, tmp_path: Path
) -> None:
    require_managed(stack, "reads the stack's ground truth")
    assert stack.zookeeper is not None, "Burrow 1.x needs the stack's ZooKeeper"
    seeded = seed_lagging(stack, f"kube-side-{os.getpid()}-{now_ms() % 1_000_000}", now_ms())
    values = _chart_values(stack, seeded, free_port())
    repository, tag = burrow_image.rsplit(":", 1)
    values["burrow"] = {
        "enabled": True, "port": free_port(),
        "image": {"repository": repository, "tag": tag, "pullPolicy": "Never"},
        "zookeeper": {"servers": [stack.zookeeper.address],
                      "rootPath": f"/burrow-ft-kube-{os.getpid()}"},
        "topicRefresh": 1, "offsetRefresh": 1, "evaluatorExpireCache": 1,
    }
    started = now_ms()
    with played(engine, values, tmp_path) as run:
        _assert_pod_measures(engine, run, seeded, started)
