"""Where ``scripts/install`` puts the Kafka classpath and the Burrow binary, and how to find them.

Why a cache outside the repo: the Kafka runtime (46 jars, ~40 MB) and the Burrow build (80 s on
2 cores) are per-machine artefacts that every checkout and worktree can share. The Kafka version
is read from ``devstack/pom.xml`` so the install step and the stack can never disagree.

Overrides: ``FT_KAFKA_CLASSPATH`` (a directory of jars), ``FT_BURROW_BIN`` (a Burrow binary).
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

from devstack.processes import ProcessStartError

__all__ = [
    "BURROW_VERSION",
    "POM",
    "burrow_binary",
    "cache_dir",
    "kafka_classpath_dir",
    "kafka_version",
]

POM = Path(__file__).with_name("pom.xml")
BURROW_VERSION = "1.9.5"
_INSTALL_HINT = "run scripts/install (it builds the cache once, then reuses it)"


def cache_dir() -> Path:
    """``${XDG_CACHE_HOME:-$HOME/.cache}/freshness-tracker``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "freshness-tracker"


def kafka_version() -> str:
    """``kafka.version`` from devstack/pom.xml."""
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    node = ET.parse(POM).getroot().find("m:properties/m:kafka.version", ns)
    if node is None or not (node.text or "").strip():
        raise ProcessStartError(f"no <kafka.version> property in {POM}")
    return (node.text or "").strip()


def kafka_classpath_dir() -> Path:
    """The directory of broker jars (``java -cp '<dir>/*'``); ProcessStartError if missing."""
    override = os.environ.get("FT_KAFKA_CLASSPATH")
    path = Path(override) if override else cache_dir() / f"kafka-{kafka_version()}"
    if not any(path.glob("kafka_2.13-*.jar")):
        raise ProcessStartError(f"no Kafka broker jars in {path}: {_INSTALL_HINT}")
    return path


def burrow_binary() -> Path:
    """The Burrow binary built from third_party/burrow; ProcessStartError if missing."""
    override = os.environ.get("FT_BURROW_BIN")
    path = Path(override) if override else cache_dir() / f"Burrow-{BURROW_VERSION}"
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise ProcessStartError(f"no Burrow {BURROW_VERSION} binary at {path}: {_INSTALL_HINT}")
    return path
