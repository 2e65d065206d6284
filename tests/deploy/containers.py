"""Real containers without a registry or a Docker engine: podman (runc, cgroupfs), a Python base
image made from Debian's archive with debootstrap, and `podman kube play` for the chart.

Why this shape: no image registry is reachable here, so `FROM python:3.11-slim` cannot be pulled;
the Dockerfile takes its base through `PYTHON_IMAGE`, and the base is built from the Debian
release and mirror this machine's apt already uses (read at run time, never written into the
repo). debootstrap takes minutes, so its root filesystem is cached as a tarball beside the Kafka
classpaths (`scripts/install` makes it: `python -m tests.deploy.containers base`); a warm run
imports it (seconds) and pays for the image build only.

crun cannot set rlimits on these machines and RUN steps fail under the default isolation
(cgroups in hybrid mode), hence runc with cgroupfs, no default ulimits and `--isolation chroot`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from devstack.cache import cache_dir
from devstack.testing import unavailable
from tests.deploy.tools import require_tool

__all__ = ["BASE_PACKAGES", "Podman", "base_tarball", "debian_release", "podman"]

#: What the base holds beyond debootstrap's minbase: a Python 3.11 with venv and pip, as
#: python:3.11-slim has (the Dockerfile's build stage runs `python -m pip wheel` and `venv`).
BASE_PACKAGES = ("python3", "python3-venv", "python3-pip")
#: Bump when the recipe below changes: the cached tarball's name carries it.
_RECIPE = "1"
_CONTAINERS_CONF = "[containers]\ndefault_ulimits = []\n"


def _tool(name: str) -> str:
    """An executable, also from /usr/sbin (debootstrap and runc live there; a user's PATH may
    lack it); missing: skip locally, fail under CI=true."""
    sbin = Path("/usr/sbin") / name
    return str(sbin) if shutil.which(name) is None and sbin.is_file() else require_tool(name)


def debian_release() -> str:
    """This machine's Debian codename (the base is the same release, so the same Python)."""
    text = Path("/etc/os-release").read_text()
    match = re.search(r"^VERSION_CODENAME=\"?([a-z]+)\"?$", text, re.M)
    assert match, "no VERSION_CODENAME in /etc/os-release (not a Debian machine?)"
    return match.group(1)


def debian_mirror(release: str) -> str:
    """The mirror apt uses here for `release` main (deb822 .sources files or sources.list)."""
    apt = Path("/etc/apt")
    for path in sorted((apt / "sources.list.d").glob("*.sources")):
        for stanza in re.split(r"\n\s*\n", path.read_text()):
            fields = dict(re.findall(r"^([A-Za-z-]+):\s*(.*)$", stanza, re.M))
            if ("deb" in fields.get("Types", "").split()
                    and release in fields.get("Suites", "").split()
                    and "main" in fields.get("Components", "").split()):
                return str(fields["URIs"].split()[0])
    lists = [apt / "sources.list", *sorted((apt / "sources.list.d").glob("*.list"))]
    for path in lists:
        for line in path.read_text().splitlines() if path.exists() else []:
            words = re.sub(r"\[[^]]*\]", "", line.split("#")[0]).split()
            if len(words) >= 4 and words[0] == "deb" and words[2] == release and "main" in words:
                return words[1]
    raise AssertionError(f"no `deb ... {release} main` source in /etc/apt")


def base_tarball() -> Path:
    """The cached root filesystem of the Python base (debootstrap'ed once per machine)."""
    release = debian_release()
    key = hashlib.sha1(f"{_RECIPE} {release} {' '.join(BASE_PACKAGES)}".encode()).hexdigest()
    return cache_dir() / f"pybase-{release}-{key[:12]}.tar"


def build_base_tarball(log: Path | None = None) -> Path:
    """Make :func:`base_tarball` unless it is there; its path. Written to a temporary name and
    renamed, so an interrupted run never leaves a half tarball behind."""
    target = base_tarball()
    if target.exists():
        return target
    debootstrap = _tool("debootstrap")
    release = debian_release()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".pybase-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        command = [debootstrap, "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}",
                   release, str(rootfs), debian_mirror(release)]
        result = subprocess.run(command, capture_output=True, text=True, timeout=1200,
                                check=False)
        if log is not None:
            log.write_text(result.stdout + result.stderr)
        assert result.returncode == 0, f"{' '.join(command)}:\n{result.stdout[-3000:]}" \
            f"{result.stderr[-3000:]}"
        (rootfs / "usr/bin/python").unlink(missing_ok=True)
        (rootfs / "usr/bin/python").symlink_to("python3")
        # pip in the image build must trust what this machine trusts (a proxy's CA included)
        certs = Path("/etc/ssl/certs/ca-certificates.crt")
        if certs.exists():
            (rootfs / "etc/ssl/certs").mkdir(parents=True, exist_ok=True)
            shutil.copyfile(certs, rootfs / "etc/ssl/certs/ca-certificates.crt")
        # the image's pip installs into its own venv; python:3.11-slim has no such marker either
        for marker in (rootfs / "usr/lib").glob("python3*/EXTERNALLY-MANAGED"):
            marker.unlink()
        shutil.rmtree(rootfs / "var/cache/apt/archives", ignore_errors=True)
        partial = Path(tmp) / "base.tar"
        subprocess.run(["tar", "-C", str(rootfs), "-cf", str(partial), "."], check=True,
                       timeout=600)
        partial.replace(target)
    return target


class Podman:
    """`podman` with runc, cgroupfs and no default ulimits (what runs containers here)."""

    def __init__(self) -> None:
        if os.geteuid() != 0:  # rootful podman and debootstrap, as on the test machines
            unavailable("the image tests run podman and debootstrap as root")
        self.binary = _tool("podman")
        self.runc = _tool("runc")
        conf = cache_dir() / "containers.conf"
        if not conf.exists() or conf.read_text() != _CONTAINERS_CONF:
            conf.parent.mkdir(parents=True, exist_ok=True)
            conf.write_text(_CONTAINERS_CONF)
        self.env = {**os.environ, "CONTAINERS_CONF": str(conf)}

    def command(self, *args: str) -> list[str]:
        return [self.binary, "--runtime", self.runc, "--cgroup-manager", "cgroupfs", *args]

    def run(self, *args: str, timeout_s: float = 120, check: bool = True,
            input_text: str | None = None) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(self.command(*args), capture_output=True, text=True,
                                timeout=timeout_s, check=False, env=self.env, input=input_text)
        if check:
            assert result.returncode == 0, \
                f"podman {' '.join(args)}: exit {result.returncode}\n" \
                f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
        return result

    def image_exists(self, name: str) -> bool:
        return self.run("image", "exists", name, check=False).returncode == 0

    @staticmethod
    def base_name() -> str:
        """The Python base's image name (its tarball's release and recipe key as the tag)."""
        return f"localhost/freshness-tracker-pybase:{base_tarball().stem.removeprefix('pybase-')}"

    def base_image(self) -> str:
        """The Python base, imported from the cached tarball (built first if missing)."""
        tarball = build_base_tarball()
        name = self.base_name()
        if not self.image_exists(name):
            self.run("import", str(tarball), name, timeout_s=600)
        return name

    def versions(self, base: str) -> dict[str, str]:
        """podman's and runc's versions, the base's image id, Debian release and Python: what
        a run record says it ran on."""
        runc = subprocess.run([self.runc, "--version"], capture_output=True, text=True,
                              check=False, timeout=30).stdout.split("\n")[0]
        inside = self.run("run", "--rm", "--network", "none", base, "sh", "-c",
                          "cat /etc/debian_version; python3 -c "
                          "'import platform; print(platform.python_version())'").stdout.split()
        return {
            "podman": self.run("version", "--format", "{{.Client.Version}}").stdout.strip(),
            "runc": runc.removeprefix("runc version ").strip(),
            "base image": self.run("image", "inspect", "--format", "{{.Id}}",
                                   base).stdout.strip()[:12],
            "debian": f"{inside[0]} ({debian_release()})",
            "python": inside[1],
        }

    def build(self, tag: str, context: Path, *, containerfile: Path | None = None,
              build_args: dict[str, str] | None = None, timeout_s: float = 900) -> str:
        """`podman build --isolation chroot` (docker format: keeps HEALTHCHECK); the tag.

        No layer cache and the previous image of `tag` removed first: the tree under test
        changes between runs, and every kept layer would stay on disk (300 MB a build)."""
        self.run("rmi", "-f", tag, check=False)
        args = ["build", "--isolation", "chroot", "--network", "host", "--format", "docker",
                "--layers=false", "-t", tag]
        for key, value in (build_args or {}).items():
            args += ["--build-arg", f"{key}={value}"]
        if containerfile is not None:
            args += ["-f", str(containerfile)]
        self.run(*args, str(context), timeout_s=timeout_s)
        return tag

    def running(self, name_filter: str) -> list[str]:
        """Names of running containers whose name contains `name_filter`."""
        out = self.run("ps", "--filter", f"name={name_filter}", "--format", "{{.Names}}").stdout
        return [line for line in out.splitlines() if line]

    def name(self, container_id: str) -> str:
        return self.run("inspect", "--format", "{{.Name}}", container_id).stdout.strip()

    def ids(self, *filters: str, every: bool = False) -> set[str]:
        """IDs of the containers (running ones unless `every`) matching `podman ps` filters."""
        args = ["ps", "--no-trunc", "--format", "{{.ID}}", *(f"--filter={f}" for f in filters)]
        return set(self.run(*args, *(["-a"] if every else [])).stdout.split())

    @contextlib.contextmanager
    def kube(self, manifest: Path, timeout_s: float = 300) -> Iterator[set[str]]:
        """`podman kube play` of `manifest`, yielding the IDs of its pods' containers (the
        infra container included); `podman kube down` afterwards, also on failure, after which
        none of them may still run."""
        started: set[str] = set()
        try:
            result = self.run("kube", "play", str(manifest), timeout_s=timeout_s, check=False)
            pods = re.findall(r"^Pod:\n([0-9a-f]{64})$", result.stdout, re.M)
            for pod in pods:
                started |= self.ids(f"pod={pod}", every=True)
            assert result.returncode == 0, f"podman kube play: exit {result.returncode}\n" \
                f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
            yield started
        finally:
            self.run("kube", "down", str(manifest), timeout_s=120, check=False)
            left = started & self.ids()
            assert not left, f"still running after podman kube down: {sorted(left)}"


def podman() -> Podman:
    return Podman()


def wait_exited(pod: Podman, container: str, timeout_s: float) -> str:
    """The container's state once it is no longer running (or the last state at the deadline)."""
    deadline = time.monotonic() + timeout_s
    state = ""
    while time.monotonic() < deadline:
        result = pod.run("inspect", "--format", "{{.State.Status}}", container, check=False)
        state = result.stdout.strip()
        if result.returncode != 0 or state not in ("running", "stopping"):
            return state or "gone"
        time.sleep(0.1)
    return state


def main(argv: Sequence[str]) -> int:
    """`python -m tests.deploy.containers base`: make the cached base tarball (scripts/install)."""
    if list(argv) != ["base"]:
        print("usage: python -m tests.deploy.containers base", file=sys.stderr)
        return 2
    print(build_base_tarball(log=cache_dir() / "pybase-debootstrap.log"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
