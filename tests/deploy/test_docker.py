"""The image: the Dockerfile's references hold against the repo, hadolint is clean, and the wheel
the image installs is built here the same way, declares every dependency its code imports, and
installed into a fresh venv runs: --version, and `run` serves /healthz to the image's own
HEALTHCHECK command while writing nothing outside /tmp."""

from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import re
import shlex
import shutil
import site
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from email.parser import Parser
from pathlib import Path, PurePosixPath

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from freshness_tracker import __version__
from freshness_tracker.config import load_settings
from freshness_tracker.http import make_app
from freshness_tracker.process import MALLOC_MMAP_THRESHOLD
from tests.deploy.chart import render
from tests.deploy.dockerfile import DockerIgnore, Stage, parse
from tests.deploy.tools import ROOT, free_port, require_tool

DOCKERFILE = ROOT / "Dockerfile"
CONFIG_PATH = "/etc/freshness-tracker/freshness-tracker.conf"


@pytest.fixture(scope="module")
def stages() -> list[Stage]:
    args, stages = parse(DOCKERFILE)
    assert args["PYTHON_IMAGE"] == "python:3.11-slim"
    return stages


@pytest.fixture(scope="module")
def ignore() -> DockerIgnore:
    return DockerIgnore((ROOT / ".dockerignore").read_text())


def _copies(stage: Stage) -> list[tuple[list[str], str]]:
    """(sources, destination) of each COPY from the build context (not --from=)."""
    out = []
    for inst in stage.all("COPY"):
        words = inst.words()
        if any(w.startswith("--from") for w in words):
            continue
        words = [w for w in words if not w.startswith("--")]
        out.append((words[:-1], words[-1]))
    return out


def _final_command(stage: Stage) -> list[str]:
    entry = stage.last("ENTRYPOINT")
    cmd = stage.last("CMD")
    assert entry is not None and entry.exec_form, "ENTRYPOINT must be in exec form"
    assert cmd is not None and cmd.exec_form is not None, "CMD must be in exec form"
    return entry.exec_form + cmd.exec_form


def test_multi_stage_slim_python_base(stages: list[Stage]) -> None:
    assert len(stages) >= 2
    assert all(s.base == "python:3.11-slim" for s in stages)
    build, final = stages[0], stages[-1]
    assert build.name and final.all("COPY")
    from_build = [i for i in final.all("COPY") if f"--from={build.name}" in i.raw]
    assert from_build, "the runtime stage must take the installed venv from the build stage"
    # no source tree and no build tooling in the runtime stage: only the venv crosses over
    assert not _copies(final)
    assert not any("pip" in i.raw for i in final.all("RUN"))


def test_copy_sources_exist_and_are_in_the_build_context(
    stages: list[Stage], ignore: DockerIgnore
) -> None:
    copies = [src for stage in stages for sources, _ in _copies(stage) for src in sources]
    assert copies
    for src in copies:
        path = ROOT / src
        assert path.exists(), f"COPY {src}: not in the repository"
        assert not ignore.excluded(src.rstrip("/")), f"COPY {src}: excluded by .dockerignore"
        assert ignore.context_files(ROOT, [src]), f"COPY {src}: nothing of it reaches the context"
    # the allow-list keeps junk out: caches, VCS, tests, virtualenvs
    for junk in (".git/config", ".venv/bin/python", "tests/conftest.py", "conftest.py",
                 "freshness_tracker/__pycache__/cli.cpython-311.pyc", "build/lib/x.py"):
        assert ignore.excluded(junk), junk


def test_runs_as_numeric_non_root_user(stages: list[Stage]) -> None:
    user = stages[-1].last("USER")
    assert user is not None, "the runtime stage must switch user"
    uid, _, gid = user.raw.partition(":")
    # numeric, so Kubernetes runAsNonRoot can verify it without a passwd lookup
    assert uid.isdigit() and int(uid) != 0, user.raw
    assert not gid or (gid.isdigit() and int(gid) != 0), user.raw
    deployment = next(d for d in render({}) if d["kind"] == "Deployment")
    pod = deployment["spec"]["template"]["spec"]["securityContext"]
    assert pod["runAsUser"] == int(uid) and pod["runAsNonRoot"] is True


def test_read_only_root_filesystem_settings(stages: list[Stage]) -> None:
    env = stages[-1].env()
    assert env.get("PYTHONDONTWRITEBYTECODE") == "1"
    assert env.get("TMPDIR", "/tmp") == "/tmp"
    assert env["PATH"].startswith("/opt/venv/bin:")
    assert env.get("MALLOC_ARENA_MAX") == "2"  # per-thread arenas keep freed memory resident
    # glibc's threshold fixed at what the exporter sets (process.MALLOC_MMAP_THRESHOLD)
    assert env.get("MALLOC_MMAP_THRESHOLD_") == str(MALLOC_MMAP_THRESHOLD)
    workdir = stages[-1].last("WORKDIR")
    assert workdir is not None and workdir.raw in ("/", "/tmp")


def test_entrypoint_runs_the_config_at_the_documented_path(stages: list[Stage]) -> None:
    assert _final_command(stages[-1]) == ["freshness-tracker", "run", "--config", CONFIG_PATH]


def test_config_path_is_where_the_chart_mounts_it(stages: list[Stage]) -> None:
    docs = render({})
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    tracker = next(c for c in pod["containers"] if c["name"] == "freshness-tracker")
    config_path = PurePosixPath(CONFIG_PATH)
    mount = next(m for m in tracker["volumeMounts"] if m["mountPath"] == str(config_path.parent))
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    configmap = next(d for d in docs if d["kind"] == "ConfigMap"
                     and d["metadata"]["name"] == volume["configMap"]["name"])
    assert config_path.name in configmap["data"]
    # the chart runs the image's own command, so both agree on the path
    assert [*tracker.get("command", ["freshness-tracker"]), *tracker["args"]] == \
        _final_command(stages[-1])


def test_expose_is_the_default_listener_port(stages: list[Stage]) -> None:
    exposed = [w for inst in stages[-1].all("EXPOSE") for w in inst.words()]
    default_port = load_settings(text='clusters = [{ name = "c" }]').web.port
    assert exposed == [str(default_port)]
    service = next(d for d in render({}) if d["kind"] == "Service")
    assert service["spec"]["ports"][0]["targetPort"] in ("metrics", default_port)


def _healthcheck(stage: Stage) -> list[str]:
    inst = stage.last("HEALTHCHECK")
    assert inst is not None
    _, _, cmd = inst.raw.partition("CMD ")
    command = json.loads(cmd)
    assert isinstance(command, list) and command[0] == "python", "python urllib, no curl"
    assert "curl" not in inst.raw and "wget" not in inst.raw
    return [str(c) for c in command]


def test_healthcheck_path_is_served_by_the_app(stages: list[Stage]) -> None:
    command = _healthcheck(stages[-1])
    paths = re.findall(r"http://127\.0\.0\.1:%s(/\w+)", command[-1])
    assert paths == ["/healthz"]

    statuses: list[str] = []
    app = make_app(__import__("prometheus_client").CollectorRegistry(),
                   health=lambda: (True, {}), ready=lambda: (False, {}))
    body = b"".join(app({"PATH_INFO": paths[0]}, lambda status, headers: statuses.append(status)))
    assert statuses == ["200 OK"] and json.loads(body) == {}


def test_hadolint_finds_nothing() -> None:
    hadolint = require_tool("hadolint")
    result = subprocess.run([hadolint, "--format", "json", str(DOCKERFILE)],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0 and json.loads(result.stdout) == [], result.stdout


# --- the wheel the image installs ----------------------------------------------------------------

def _wheel_command(build: Stage) -> list[str]:
    """The `pip wheel` step of the build stage's RUN, as written."""
    for inst in build.all("RUN"):
        for step in inst.raw.split("&&"):
            words = shlex.split(step)
            if "wheel" in words and "pip" in words:
                return words
    raise AssertionError("the build stage has no `pip wheel` step")


@pytest.fixture(scope="module")
def wheel(stages: list[Stage], ignore: DockerIgnore, tmp_path_factory: pytest.TempPathFactory
          ) -> Path:
    """Build the wheel from exactly the files the build stage COPYs (after .dockerignore), with
    the build stage's own `pip wheel` command, run without build isolation and without an index:
    the venv's setuptools (the dev extra) builds it, so the test needs no package index (the
    image build itself fetches its build backend)."""
    build = stages[0]
    context = tmp_path_factory.mktemp("context")
    for sources, dest in _copies(build):
        for src in sources:
            is_dir = (ROOT / src).is_dir()
            for rel in ignore.context_files(ROOT, [src]):
                inner = Path(rel).relative_to(src.rstrip("/")) if is_dir else Path(rel).name
                target = context / dest / inner
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / rel, target)
    command = _wheel_command(build)
    dist = tmp_path_factory.mktemp("dist")
    command = [sys.executable if w == "python" else str(dist) if w == "/dist" else w
               for w in command] + ["--no-build-isolation", "--no-index"]
    result = subprocess.run(command, cwd=context, capture_output=True, text=True, timeout=300,
                            check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    wheels = list(dist.glob("freshness_tracker-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def test_wheel_contains_the_package_reference_conf_and_entry_point(wheel: Path) -> None:
    assert wheel.name.startswith(f"freshness_tracker-{__version__}-")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        assert "freshness_tracker/__init__.py" in names
        assert "freshness_tracker/cli.py" in names
        assert "freshness_tracker/config/reference.conf" in names
        packaged = zf.read("freshness_tracker/config/reference.conf").decode()
        info = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        entry_points = zf.read(info).decode()
        metadata = Parser().parsestr(zf.read(info.replace("entry_points.txt", "METADATA")).decode())
    assert packaged == (ROOT / "freshness_tracker/config/reference.conf").read_text()
    assert re.search(r"^freshness-tracker = freshness_tracker\.cli:main$", entry_points, re.M)
    assert not any(n.startswith(("tests/", "benchmarks/", "devstack/")) for n in names)
    assert metadata["Version"] == __version__


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel installed. Its dependencies come from this interpreter's
    site-packages through a .pth file (installing them from an index is slow; that they are all
    declared is checked from the wheel's metadata in test_declared_dependencies_cover_every_import).
    Editable-install hooks there are not run, so the venv imports its own copy of the package."""
    root = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True,
                   timeout=120)
    purelib = subprocess.run([str(root / "bin/python"), "-c",
                              "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    here = [p for p in site.getsitepackages() if Path(p).is_dir()]
    (Path(purelib) / "_outer_site_packages.pth").write_text("\n".join(here) + "\n")
    result = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(root / "bin/python"), "install",
         "--no-cache-dir", "--no-deps", "--no-index", "-q", str(wheel)],
        capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    where = subprocess.run([str(root / "bin/python"), "-c",
                            "import freshness_tracker; print(freshness_tracker.__file__)"],
                           capture_output=True, text=True, timeout=60, check=True,
                           cwd=root).stdout
    assert where.startswith(str(root)), f"the venv imports another copy: {where}"
    return root


def test_entry_point_works_in_a_fresh_venv(venv: Path) -> None:
    result = subprocess.run([str(venv / "bin/freshness-tracker"), "--version"],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"freshness-tracker {__version__}"


def _requirements(wheel: Path) -> list[Requirement]:
    with zipfile.ZipFile(wheel) as zf:
        meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        message = Parser().parsestr(zf.read(meta).decode())
    return [Requirement(r) for r in message.get_all("Requires-Dist") or []]


def _closure(requirements: list[Requirement], extra: str = "") -> set[str]:
    """Distributions installed with these requirements (for `extra`), dependencies included."""
    env = {"extra": extra}
    todo = [r.name for r in requirements if r.marker is None or r.marker.evaluate(env)]
    seen: set[str] = set()
    while todo:
        name = canonicalize_name(todo.pop())
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue  # an extra that is not installed here: its own name still counts
        for line in requires:
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return seen


def _optional_of(distributions: set[str]) -> set[str]:
    """What these distributions' own extras would add (requests' `socks` extra: PySocks).
    Such a module is imported by the dependency itself only when it happens to be installed
    (`requests.adapters` tries `urllib3.contrib.socks`), and a fresh install works without it."""
    optional: set[str] = set()
    for name in distributions:
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for line in requires:
            req = Requirement(line)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                optional.add(canonicalize_name(req.name))
    return optional


def _distributions(modules: set[str], guess: bool = False) -> dict[str, set[str]]:
    """Module -> distributions providing it. With `guess`, a module not installed here is taken
    to come from the distribution of the same name (pyspark, matplotlib...)."""
    owners = importlib.metadata.packages_distributions()
    return {m: {canonicalize_name(d) for d in owners.get(m, [])}
            or ({canonicalize_name(m)} if guess else set()) for m in modules}


def test_declared_dependencies_cover_every_import(wheel: Path) -> None:
    """What `run`, `once` and `check` import needs only the wheel's base dependencies
    (a fresh install gets nothing else); what anything imports is declared by some extra."""
    requirements = _requirements(wheel)
    base = _closure(requirements)
    extras = {str(e) for r in requirements if r.marker for e in
              re.findall(r'extra == "([^"]+)"', str(r.marker))}
    declared = base.union(*(_closure(requirements, e) for e in extras))
    script = (
        "import sys, json\n"
        "import freshness_tracker.cli, freshness_tracker.app, freshness_tracker.http\n"
        "import freshness_tracker.check, freshness_tracker.sinks.render\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=120, check=True, cwd="/")
    loaded = set(json.loads(result.stdout)) - set(sys.stdlib_module_names) - {
        "freshness_tracker", "__main__", "_distutils_hack", "sitecustomize", "usercustomize"}
    owners = _distributions({m for m in loaded if not m.startswith("_")})
    outside = {m: d for m, d in owners.items() if d and not d & (base | _optional_of(base))}
    assert not outside, f"the commands import undeclared distributions: {outside}"
    # every third-party import anywhere in the package (lazy ones included) is declared
    imported: set[str] = set()
    with zipfile.ZipFile(wheel) as zf:
        for name in zf.namelist():
            if name.endswith(".py"):
                for node in ast.walk(ast.parse(zf.read(name))):
                    if isinstance(node, ast.Import):
                        imported |= {a.name.split(".")[0] for a in node.names}
                    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                        imported.add(node.module.split(".")[0])
    third_party = imported - set(sys.stdlib_module_names) - {"freshness_tracker", "__future__"}
    undeclared = {m: d for m, d in _distributions(third_party, guess=True).items()
                  if not d & declared}
    assert not undeclared, f"imports no requirement provides: {undeclared}"


@pytest.fixture
def running(venv: Path, stages: list[Stage], tmp_path: Path
            ) -> Iterator[tuple[dict[str, str], Path]]:
    """`freshness-tracker run` from the fresh venv with the image's ENV, cwd and HOME in tmp."""
    home, work = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    work.mkdir()
    config = tmp_path / "freshness-tracker.conf"
    config.write_text('burrow.url = "http://127.0.0.1:9"\nfrequency_sec = 1\nclusters = '
                      '[{ name = "c", kafka { "bootstrap.servers" = "127.0.0.1:9" } }]\n')
    image_env = stages[-1].env()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("FRESHNESS_TRACKER_", "BURROW_"))}
    env.update({k: v for k, v in image_env.items() if k != "PATH"})
    env.update(PATH=f"{venv / 'bin'}:{env.get('PATH', '')}", HOME=str(home),
               TMPDIR=str(tmp_path), FRESHNESS_TRACKER_PORT=str(free_port()),
               FRESHNESS_TRACKER_LISTEN_ADDRESS="127.0.0.1")
    proc = subprocess.Popen(["freshness-tracker", "run", "--config", str(config)], cwd=work,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        yield env, work
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def test_healthcheck_command_passes_against_run_and_nothing_is_written(
    venv: Path, stages: list[Stage], running: tuple[dict[str, str], Path]
) -> None:
    env, work = running
    before = {p: p.stat().st_mtime_ns for p in venv.rglob("*")}
    command = _healthcheck(stages[-1])
    command[0] = str(venv / "bin/python")
    deadline = time.monotonic() + 30
    while True:
        result = subprocess.run(command, env=env, capture_output=True, timeout=30, check=False)
        if result.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    # the same check fails when nothing listens
    dead = dict(env, FRESHNESS_TRACKER_PORT=str(free_port()))
    assert subprocess.run(command, env=dead, capture_output=True, timeout=30,
                          check=False).returncode != 0
    # a read-only root filesystem would hold: no byte code or files in the venv, cwd or HOME
    after = {p: p.stat().st_mtime_ns for p in venv.rglob("*")}
    assert after == before
    assert not list(work.iterdir()) and not list(Path(env["HOME"]).iterdir())


def test_image_config_example_in_docs_loads() -> None:
    """docs/deploy.md's `docker run` config snippet is a valid config."""
    text = (ROOT / "docs" / "deploy.md").read_text()
    blocks = re.findall(r"```hocon\n(.*?)```", text, re.S)
    assert blocks, "docs/deploy.md shows a HOCON config"
    for block in blocks:
        load_settings(text=block)
    assert CONFIG_PATH in text
